"""Issue 29: `convodex sync` (SPEC S6, X11). Two machines, simulated as two HOMEs
with their own config, catalog and checkpoints, push into one hub (a real server over
HTTP, on SQLite and PostgreSQL) through the real CLI in subprocesses."""

from __future__ import annotations

import getpass
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from convodex.server import Database
from convodex.server.teams import add_member, create_team
from convodex.text.redact import redact_paths
from convodex.web.server_app import create_app
from helpers import write_claude_session
from server.server_helpers import serving
from server_fixtures import People, cli_command, free_port

# A GitHub token's published shape: the library's redaction masks it.
SECRET = "ghp_" + "Zq7Xw2Lk9Pm4Nv6Bc8Rt1Ys3Hd5Jf0GaUe4W"
T0 = 1_750_000_000_000  # epoch ms


@dataclass(frozen=True)
class Machine:
    """One simulated machine: a HOME with its sessions, config and caches."""

    name: str
    home: Path

    @property
    def sessions(self) -> Path:
        return self.home / "sessions"

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "HOME": str(self.home),
            "CONVODEX_HOME": str(self.home / "data"),
            "CONVODEX_CACHE_HOME": str(self.home / "cache"),
            "XDG_CONFIG_HOME": str(self.home / "config"),
            "PYTHONWARNINGS": "ignore",
        }

    def configure(self, url: str, token: str, **extra: Any) -> None:
        lines = ["[hub]", f'url = "{url}"', f'token = "{token}"', f'machine = "{self.name}"']
        lines += [f"{key} = {json.dumps(value)}" for key, value in extra.items()]
        config = self.home / "config" / "convodex" / "config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text("\n".join(lines) + "\n", encoding="utf-8")

    def command(self, *args: str) -> list[str]:
        return cli_command("sync", "--root", str(self.sessions), *args)

    def sync(self, *args: str) -> dict[str, Any]:
        done = subprocess.run(
            self.command("--json", *args), env=self.env(), capture_output=True, timeout=300
        )
        assert done.returncode == 0, done.stderr.decode()
        assert b"Traceback" not in done.stderr
        report: dict[str, Any] = json.loads(done.stdout)
        return report

    def write(self, session_id: str, cwd: str, *texts: str) -> Path:
        turns = [
            ("user" if n % 2 == 0 else "assistant", text, T0 + n * 1000)
            for n, text in enumerate(texts)
        ]
        return write_claude_session(self.sessions, session_id, cwd, turns)


@pytest.fixture
def hub(db: Database) -> Iterator[str]:
    with serving(create_app(db)) as url:
        yield url


def _machine(tmp_path: Path, name: str) -> Machine:
    home = tmp_path / name
    (home / "sessions").mkdir(parents=True)
    return Machine(name, home)


def _hub_sessions(url: str, token: str, **params: str) -> list[dict[str, Any]]:
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}) as http:
        found: list[dict[str, Any]] = http.get(
            "/brain/sessions", params={"limit": "200", **params}
        ).json()["sessions"]
        return found


def _read(url: str, token: str, sid: str) -> httpx.Response:
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}) as http:
        return http.get(f"/brain/sessions/{sid}")


def _every_table_text(db: Database) -> str:
    """Every value of every hub table, as text: what a secret must not be in."""
    if db.dialect.name == "sqlite":
        listing = "SELECT name FROM sqlite_master WHERE type = 'table'"
    else:
        listing = "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
    out = []
    with db.snapshot() as tx:
        for (table,) in tx.all(listing):
            out += [repr(row) for row in tx.all(f'SELECT * FROM "{table}"')]
    return "\n".join(out)


def test_two_machines_sync_incrementally_with_rewrites_deletions_and_redaction(
    db: Database, people: People, hub: str, tmp_path: Path
) -> None:
    token = people.tokens["alice"]
    create_team(db, "eng")
    add_member(db, "eng", "alice")
    add_member(db, "eng", "bob")
    laptop, box = _machine(tmp_path, "laptop"), _machine(tmp_path, "box")
    laptop.configure(hub, token, exclude=[str(tmp_path / "work" / "private")])
    box.configure(hub, token, team="eng")
    app = str(tmp_path / "work" / "app")
    laptop.write("s-app", app, f"deploy the app with token {SECRET}", "deployed at noon")
    laptop.write("s-private", str(tmp_path / "work" / "private"), "private plans")
    box.write("s-app", app, "the same id on another machine", "a separate hub session")
    box.write("s-box", str(box.home / "proj"), "box-only question", "box-only answer")

    first = laptop.sync()
    assert (first["sent"], first["excluded"], first["failed"]) == (1, 1, 0)
    assert box.sync()["sent"] == 2
    listed = _hub_sessions(hub, token)
    assert sorted((s["machine"], s["agent"]) for s in listed) == [
        ("box", "claude_code"),
        ("box", "claude_code"),
        ("laptop", "claude_code"),
    ]
    laptop_app = next(s for s in listed if s["machine"] == "laptop")
    # A project outside the home directory leaves as it is, but for the user's name
    # where it is a whole part of a path (``/tmp/pytest-of-<user>/…``: X11).
    assert laptop_app["project"] == redact_paths(app, "", getpass.getuser())
    # A project under the home directory leaves the machine without the user's name.
    assert "~/proj" in {s["project"] for s in listed}
    assert laptop_app["title"].startswith("deploy the app")
    entries = _read(hub, token, laptop_app["id"]).json()["entries"]
    assert [e["text"] for e in entries] == [
        "deploy the app with token [redacted]",
        "deployed at noon",
    ]
    assert entries[0]["ts"] == "2025-06-15T15:06:40.000000Z"
    # Redacted before upload: the secret is in no hub table, the excluded one nowhere.
    everything = _every_table_text(db)
    assert SECRET not in everything and SECRET[:12] not in everything
    assert "private plans" not in everything
    # The team sees what box shared with it, not what laptop kept to its account.
    bob = _hub_sessions(hub, people.tokens["bob"], scope="team")
    assert sorted(s["machine"] for s in bob) == ["box", "box"]

    # Idempotent: a second run sends nothing.
    again = laptop.sync()
    assert (again["sent"], again["unchanged"]) == (0, 1)
    assert box.sync()["sent"] == 0

    # A rewrite replaces the hub copy (no duplicate entries).
    laptop.write("s-app", app, "deploy the app, rewritten", "deployed at one", "and checked")
    rewritten = laptop.sync()
    assert rewritten["sent"] == 1
    texts = [e["text"] for e in _read(hub, token, laptop_app["id"]).json()["entries"]]
    assert texts == ["deploy the app, rewritten", "deployed at one", "and checked"]

    # A stale clone of the laptop (an old backup, same machine name) before a deletion.
    stale = Machine("laptop", tmp_path / "stale")
    shutil.copytree(laptop.home, stale.home)
    dry = laptop.sync("--dry-run")
    assert dry["dryRun"] and dry["sent"] == 0
    (laptop.sessions / app.strip("/").replace("/", "-") / "s-app.jsonl").unlink()
    deleted = laptop.sync()
    assert deleted["deleted"] == 1
    assert _read(hub, token, laptop_app["id"]).status_code == 404
    assert laptop_app["id"] not in {s["id"] for s in _hub_sessions(hub, token)}
    # The stale copy changes and syncs: the hub keeps the session deleted.
    stale.write("s-app", app, "deploy the app, stale edit", "from the backup")
    refused = stale.sync()
    assert (refused["refused"], refused["sent"]) == (1, 0)
    shutil.rmtree(stale.home / "data")  # even with no checkpoints at all
    assert stale.sync()["refused"] == 1
    assert _read(hub, token, laptop_app["id"]).status_code == 404
    assert "stale edit" not in _every_table_text(db)
    assert laptop.sync()["sent"] == 0


def test_a_killed_sync_resumes_without_duplicates(
    db: Database, people: People, hub: str, tmp_path: Path
) -> None:
    token = people.tokens["alice"]
    machine = _machine(tmp_path, "desk")
    machine.configure(hub, token)
    count = 120
    for n in range(count):
        machine.write(f"s{n:03d}", "/work/many", *[f"message {m} of session {n}" for m in range(6)])
    checkpoints = machine.home / "data" / "hub"
    process = subprocess.Popen(
        machine.command("--json"),
        env=machine.env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 240
        # Killed once the hub has confirmed at least one session, before it is done.
        while not any(p.stat().st_size for p in checkpoints.glob("*.jsonl")):
            assert process.poll() is None, "the sync ended before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.02)
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait(timeout=60)
    assert process.returncode == -signal.SIGKILL
    resumed = machine.sync()
    assert resumed["sent"] + resumed["unchanged"] == count
    assert resumed["sent"] < count, "finished sessions were not sent again"
    listed = _hub_sessions(hub, token)
    assert len(listed) == count
    for session in listed[:: count // 12]:
        texts = [e["text"] for e in _read(hub, token, session["id"]).json()["entries"]]
        n = int(session["title"].split()[-1])
        assert texts == [f"message {m} of session {n}" for m in range(6)]
    with db.snapshot() as tx:
        row = tx.one("SELECT COUNT(*), COUNT(DISTINCT payload) FROM entries")
    assert row == (count * 6, count * 6)
    assert machine.sync()["sent"] == 0


def test_search_hub_shows_hub_hits_beside_local_ones(
    db: Database, people: People, hub: str, tmp_path: Path
) -> None:
    token = people.tokens["alice"]
    laptop, box = _machine(tmp_path, "laptop"), _machine(tmp_path, "box")
    for machine in (laptop, box):
        machine.configure(hub, token)
    laptop.write("s-1", "/work/app", "we deploy on fridays, then rollback on mondays", "ok")
    box.write("s-2", "/work/app", "a local note about rollback and deploy", "fine")
    assert laptop.sync()["sent"] == 1
    done = subprocess.run(
        cli_command("search", "--wait", "--root", str(box.sessions), "--hub", "--json",
                    "rollback deploy"),
        env=box.env(),
        capture_output=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    answer = json.loads(done.stdout)
    assert [h["snippet"] for h in answer["local"]["hits"]] == [
        "a local note about rollback and deploy"
    ]
    hub_hits = answer["hub"]["hits"]
    assert [(h["machine"], h["agent"], h["ownerId"]) for h in hub_hits] == [
        ("laptop", "claude_code", people.alice.id)
    ]
    assert hub_hits[0]["snippet"] == "we deploy on fridays, then rollback on mondays"
    text = subprocess.run(
        cli_command("search", "--hub", "rollback deploy"),
        env=box.env(),
        capture_output=True,
        timeout=300,
    )
    assert text.returncode == 0, text.stderr.decode()
    assert f"hub {hub}: 1 hits" in text.stdout.decode()
    assert "[laptop · claude_code" in text.stdout.decode()
    # No hub configured: one clear line, no traceback.
    (box.home / "config" / "convodex" / "config.toml").unlink()
    missing = subprocess.run(
        cli_command("search", "--hub", "deploy"), env=box.env(), capture_output=True, timeout=300
    )
    assert missing.returncode == 1
    assert b"no hub" in missing.stderr and b"Traceback" not in missing.stderr


def test_forks_and_sub_agents_point_at_the_hub_copy_they_came_from(
    db: Database, people: People, hub: str, tmp_path: Path
) -> None:
    """A local session that names the one it came from (a Claude Code sub-agent here)
    is a hub session whose ``forkedFrom`` is that one's hub copy; a parent kept off the
    hub (excluded) is never named."""
    token = people.tokens["alice"]
    desk = _machine(tmp_path, "desk")
    private = str(tmp_path / "work" / "private")
    desk.configure(hub, token, exclude=[private])
    app = str(tmp_path / "work" / "app")
    main = desk.write("s-main", app, "plan the migration", "delegating to a sub-agent")
    desk.write("s-secret", private, "private plans", "kept here")

    def sub_agent(parent: str, name: str, text: str) -> None:
        written = write_claude_session(tmp_path / "scratch", name, app, [("user", text, T0)])
        folder = main.parent / parent / "subagents"
        folder.mkdir(parents=True, exist_ok=True)
        written.rename(folder / f"{name}.jsonl")

    sub_agent("s-main", "agent-a1", "migrate the users table")
    sub_agent("s-secret", "agent-b2", "look at the private plans")
    report = desk.sync()
    assert (report["sent"], report["excluded"], report["failed"]) == (3, 1, 0)
    listed = {s["title"]: s for s in _hub_sessions(hub, token)}
    parent = listed["plan the migration"]
    assert parent["forkedFrom"] is None
    assert listed["migrate the users table"]["forkedFrom"] == parent["id"]
    assert listed["look at the private plans"]["forkedFrom"] is None
    assert desk.sync()["sent"] == 0


def test_serve_keeps_the_hub_in_sync_in_the_background(
    db: Database, people: People, hub: str, tmp_path: Path
) -> None:
    """``[hub] sync_every``: the real ``convodex serve`` pushes new sessions and
    deletions by itself, shares its checkpoints with ``convodex sync`` (which then sends
    nothing) and stops on Ctrl-C with one line."""
    token = people.tokens["alice"]
    desk = _machine(tmp_path, "desk")
    desk.configure(hub, token, sync_every=1)
    first = desk.write("s-1", "/work/app", "the first question", "the first answer")
    port = free_port()
    argv = cli_command("serve", "--port", str(port), "--root", str(desk.sessions))
    argv += ["--search-workers", "0"]
    with open(tmp_path / "serve.out", "wb") as out, open(tmp_path / "serve.err", "wb") as err:
        process = subprocess.Popen(argv, env=desk.env(), stdout=out, stderr=err)
    try:

        def titles() -> list[str]:
            return sorted(s["title"] for s in _hub_sessions(hub, token))

        def until(wanted: list[str]) -> None:
            deadline = time.monotonic() + 120
            while titles() != wanted:
                assert process.poll() is None, (tmp_path / "serve.err").read_text()
                assert time.monotonic() < deadline, f"the hub holds {titles()}, not {wanted}"
                time.sleep(0.1)

        until(["the first question"])
        desk.write("s-2", "/work/app", "a second question", "a second answer")
        until(["a second question", "the first question"])
        first.unlink()
        until(["a second question"])
    finally:
        process.send_signal(signal.SIGINT)
        status = process.wait(timeout=60)
    err_text = (tmp_path / "serve.err").read_text()
    assert status == 128 + signal.SIGINT, err_text
    assert "Traceback" not in err_text
    assert err_text.strip().splitlines()[-1] == "convodex serve: stopped (SIGINT)"
    assert f"syncing to the hub at {hub} as desk every 1 s" in (tmp_path / "serve.out").read_text()
    assert desk.sync()["sent"] == 0


def test_background_sync_tells_an_unreachable_hub_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The hub down: one line (no token), however many runs fail; the sync goes on."""
    from convodex.catalog.service import HistoryService
    from convodex.hub.background import BackgroundSync
    from convodex.hub.settings import HubSettings

    monkeypatch.setenv("CONVODEX_HOME", str(tmp_path / "data"))
    desk = _machine(tmp_path, "desk")
    desk.write("s-1", "/work/app", "a question", "an answer")
    # Port 1: privileged, outside the ephemeral range, nothing listens there. A port only
    # found free can be another test suite's server by the time the sync tries it, and a
    # bound port that never listens can be reached by a connection to itself.
    gone = "http://127.0.0.1:1"
    settings = HubSettings(url=gone, token="cdx_secret_token", machine="desk")
    with HistoryService.open(tmp_path / "cache", [desk.sessions]) as service:
        service.index()
        background = BackgroundSync(service, settings, 0.01)
        stop = background.start()
        deadline = time.monotonic() + 60
        while background.runs < 4:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        stop()
    lines = capsys.readouterr().err.splitlines()
    assert lines == [f"convodex: hub sync: cannot reach the hub at {gone} (ConnectionRefusedError)"]
    assert background.failing and background.last is None


def test_one_sync_at_a_time_per_hub_and_account(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """serve's background sync and a sync by hand never write one checkpoint file at
    once: the second is refused with one line until the first lets go."""
    from convodex.hub.state import SyncBusy, SyncState, state_path

    desk = _machine(tmp_path, "desk")
    url, token = f"http://127.0.0.1:{free_port()}", "cdx_test"
    desk.configure(url, token)
    desk.write("s-1", "/work/app", "a question", "an answer")
    monkeypatch.setenv("CONVODEX_HOME", desk.env()["CONVODEX_HOME"])
    path = state_path(url, token)
    first = SyncState(path)
    with pytest.raises(SyncBusy, match="another sync of this hub is running"):
        SyncState(path)
    refused = subprocess.run(desk.command(), env=desk.env(), capture_output=True, timeout=300)
    assert refused.returncode != 0
    assert b"Traceback" not in refused.stderr
    assert (
        refused.stderr.decode()
        .strip()
        .splitlines()[-1]
        .endswith("another sync of this hub is running on this machine")
    )
    first.release()
    SyncState(path).release()


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "claude-code"


def _rewound(machine: Machine, fixture: str, session_id: str, secret_in: str) -> None:
    """A real Claude Code file with a rewind (two sibling turns under one parent), as
    Claude Code names it; the abandoned turn ``secret_in`` is given a secret."""
    text = (FIXTURES / fixture).read_text("utf-8")
    assert text.count(f'"text":"{secret_in}"') == 1
    text = text.replace(f'"text":"{secret_in}"', f'"text":"{secret_in} with {SECRET}"')
    folder = machine.sessions / "-tmp"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{session_id}.jsonl").write_text(text, "utf-8")


def test_abandoned_branches_are_journal_branches_never_searched(
    db: Database, people: People, hub: str, tmp_path: Path
) -> None:
    """Claude Code's rewound turns go to the hub as branches of the session's journal
    (off its active branch, redacted), not into its read or its search; two machines."""
    token = people.tokens["alice"]
    laptop, box = _machine(tmp_path, "laptop"), _machine(tmp_path, "box")
    for machine in (laptop, box):
        machine.configure(hub, token)
    _rewound(laptop, "claude-code-log-dag_compact_after_rewind.jsonl", "s1", "First attempt")
    _rewound(box, "claude-code-log-dag_compact_after_rewind_preserved.jsonl", "s2", "First answer")
    assert laptop.sync()["sent"] == 1
    assert box.sync()["sent"] == 1
    listed = {s["machine"]: s for s in _hub_sessions(hub, token)}
    assert sorted(listed) == ["box", "laptop"]
    effective = ["Start", "Ready", "Second attempt", "Second answer", "Keep going"]
    effective += ["Kept going", "After compaction", "Final answer"]
    for name in ("laptop", "box"):
        read = _read(hub, token, listed[name]["id"]).json()["entries"]
        assert [e["text"] for e in read] == effective
        with db.snapshot() as tx:
            rows = tx.all(
                "SELECT seq, parent_seq, on_branch, text FROM entries WHERE session_id = ?"
                " ORDER BY seq",
                (listed[name]["id"],),
            )
        assert [(r[0], r[1], bool(r[2])) for r in rows] == [
            *[(n, n - 1 or None, True) for n in range(1, 9)],
            (9, 2, False),  # the abandoned turn continues "Ready"
            (10, 9, False),
        ]
    with db.snapshot() as tx:
        branch = tx.all("SELECT text FROM entries WHERE NOT on_branch ORDER BY session_id, seq")
    assert sorted(r[0] for r in branch) == sorted(
        [
            "First attempt with [redacted]",
            "First answer",
            "First attempt",
            "First answer with [redacted]",
        ]
    )
    everything = _every_table_text(db)
    assert SECRET not in everything and SECRET[:12] not in everything
    # Neither search mode finds the abandoned turns; the effective ones are found.
    with httpx.Client(base_url=hub, headers={"Authorization": f"Bearer {token}"}) as http:
        for mode in ("literal", "ranked"):
            for query, found in (("First attempt", 0), ("Second attempt", 2)):
                hits = http.get("/brain/search", params={"q": query, "mode": mode}).json()
                assert len(hits["hits"]) == found, (mode, query)
    assert laptop.sync()["sent"] == 0 and box.sync()["sent"] == 0
