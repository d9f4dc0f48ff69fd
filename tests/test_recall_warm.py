"""The recall hook beside a running warm service (SPEC L18, L20, issue 26): the thin
client reads the hook's stdin and the service answers it, with the very output the
hook gives in-process (a block naming the past session for a related prompt, nothing
for an unrelated one); a service that is gone leaves the hook to answer in-process."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from convodex.catalog.service import Background, HistoryService
from convodex.cli.warm import host
from convodex.warm import client
from convodex.warm.server import WarmServer
from helpers import write_claude_session
from warm.conftest import convodex, history, runtime, warm  # noqa: F401  (fixtures)

EVENT = {
    "session_id": "current",
    "transcript_path": "/tmp/current.jsonl",
    "cwd": "/work/p1",
    "hook_event_name": "UserPromptSubmit",
    "prompt": "how did we run the migration of orders twice",
}


def hook(cache_dir: Path, **env: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "convodex", "recall", "--cache-dir", str(cache_dir)],
        input=json.dumps(EVENT).encode(),
        capture_output=True,
        env={**os.environ, **env},
        timeout=120,
        check=False,
    )


def prompted(cache_dir: Path, prompt: str) -> subprocess.CompletedProcess[bytes]:
    """The real hook command given one prompt, as Claude Code sends it."""
    event = {**EVENT, "prompt": prompt, "cwd": APP}
    return subprocess.run(
        [sys.executable, "-m", "convodex", "recall", "--cache-dir", str(cache_dir)],
        input=json.dumps(event).encode(),
        capture_output=True,
        env=dict(os.environ),
        timeout=120,
        check=False,
    )


def patient() -> None:
    """A busy machine must not turn these into timeouts (that one has its own test)."""
    settings = Path(os.environ["HOME"]) / ".config" / "convodex" / "config.toml"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text("[recall]\ntimeout_ms = 10000\n", "utf-8")


def receipts() -> list[dict[str, object]]:
    path = Path(os.environ["CONVODEX_HOME"]) / "recall" / "receipts.jsonl"
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


PAST = "1a1a1a1a-0000-4000-8000-000000000001"
APP = "/home/dev/src/shop"
DAY = 86_400_000


@pytest.fixture
def answering(root: Path, cache_dir: Path, runtime: Path) -> Iterator[WarmServer]:  # noqa: F811
    """A service over past sessions of which one holds the answer to a prompt."""
    now = int(time.time() * 1000)
    write_claude_session(
        root,
        PAST,
        APP,
        [
            ("user", "the alembic migration fails: duplicate key value violates unique "
             "constraint ix_customers_email", now - 3 * DAY),
            ("assistant", "Deduplicate customers by email before the migration creates "
             "ix_customers_email; then build the index concurrently.", now - 3 * DAY + 1),
        ],
    )  # fmt: skip
    for n, (question, answer) in enumerate(
        [
            ("make the navbar sticky when the page scrolls", "position: sticky on the header."),
            ("bump the stripe sdk and rerun the checkout tests", "Bumped stripe to 11.2."),
            ("the dark mode toggle forgets its state", "Keep it in local storage."),
        ]
    ):
        at = now - (5 + n) * DAY
        sid = f"2b2b2b2b-0000-4000-8000-00000000000{n}"
        write_claude_session(root, sid, APP, [("user", question, at), ("assistant", answer, at)])
    service = HistoryService.open(cache_dir, [root], background=Background(listen_for_hints=False))
    with service:
        service.index()
        service.start()
        server = WarmServer(service, host())
        yield server
        server.close()


def test_the_service_answers_the_hook_as_the_hook_does_in_process(
    answering: WarmServer, cache_dir: Path
) -> None:
    patient()
    before = answering.answered
    prompt = "the migration broke again on ix_customers_email, duplicate key"
    answered = prompted(cache_dir, prompt)
    assert answered.returncode == 0 and answered.stderr == b""
    assert answering.answered == before + 1  # the service answered it
    assert f"[ref {PAST}#0]".encode() in answered.stdout
    answering.close()
    alone = prompted(cache_dir, prompt)  # no service: the hook runs in its own process
    assert alone.returncode == 0 and alone.stderr == b""
    assert alone.stdout == answered.stdout
    first, second = receipts()
    assert first["outcome"] == second["outcome"] == "injected"
    assert first["refs"] == second["refs"] == [f"{PAST}#0"]
    assert all(r["sessionId"] == "current" for r in receipts())


def test_a_service_of_another_environment_leaves_the_hook_in_process(
    warm: WarmServer,  # noqa: F811
    cache_dir: Path,
) -> None:
    patient()
    served = warm.served
    off = hook(cache_dir, CONVODEX_RECALL="0")  # the client's switch, not the service's
    assert off.returncode == 0 and off.stdout == b"" and off.stderr == b""
    assert warm.served == served
    assert [r["outcome"] for r in receipts()] == ["off"]


def test_a_killed_service_falls_back_silently(
    warm: WarmServer,  # noqa: F811
    cache_dir: Path,
) -> None:
    """A SIGKILLed service leaves its socket file with nobody listening on it."""
    patient()
    path = warm.path
    warm.close()
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(path)
    os.chmod(path, 0o600)
    stale.close()  # the file stays, as a killed process leaves it
    assert os.path.exists(path)
    done = hook(cache_dir)
    assert done.returncode == 0 and done.stderr == b""
    assert [r["sessionId"] for r in receipts()] == ["current"]  # answered in-process


def test_the_service_injects_the_related_session_and_nothing_for_an_unrelated_prompt(
    answering: WarmServer, cache_dir: Path
) -> None:
    """What reaches the model on the warm path: a block naming the session that holds
    the answer for a related prompt, within the byte budget; no output at all for a
    prompt the history knows nothing about. Both answered by the service."""
    patient()
    before = answering.answered
    related = prompted(cache_dir, "the migration broke again on ix_customers_email, duplicate key")
    assert related.returncode == 0 and related.stderr == b""
    output = json.loads(related.stdout)["hookSpecificOutput"]
    assert output["hookEventName"] == "UserPromptSubmit"
    block = output["additionalContext"]
    assert f"[ref {PAST}#0]" in block and "Deduplicate customers" in block
    assert "navbar" not in block and "stripe" not in block
    assert len(block.encode()) <= 2048
    unrelated = prompted(cache_dir, "write a haiku about autumn leaves on a quiet lake")
    assert unrelated.returncode == 0 and unrelated.stderr == b""
    assert unrelated.stdout == b""
    assert answering.answered == before + 2  # the service answered both, not the hook itself
    assert [r["outcome"] for r in receipts()] == ["injected", "nothing"]
    assert receipts()[0]["refs"] == [f"{PAST}#0"]


def test_a_long_running_service_keeps_its_catalog_connections_however_many_hooks_run(
    answering: WarmServer, cache_dir: Path
) -> None:
    """A service runs for days and answers every prompt: each hook run it answers must
    not leave a connection to the catalog open behind it (a thread per run opened one
    that nothing closed, until the process ran out of file descriptors)."""
    patient()
    catalog = os.path.realpath(answering.catalog)

    def open_on_catalog() -> int:
        fds = Path("/proc/self/fd")
        paths = []
        for fd in fds.iterdir():
            try:
                paths.append(os.readlink(fd))
            except OSError:
                continue  # closed while listed
        return sum(path == catalog for path in paths)

    prompt = "the migration broke again on ix_customers_email, duplicate key"
    event = {**EVENT, "prompt": prompt, "cwd": APP}

    def ask() -> bytes:
        answer = client.ask(
            answering.catalog,
            "recall",
            [b"claude-code", repr(time.monotonic()).encode(), json.dumps(event).encode()],
        )
        assert answer is not None and len(answer) == 1
        return answer[0]

    first = ask()
    assert f"[ref {PAST}#0]".encode() in first
    before = open_on_catalog()
    runs = 32
    for _ in range(runs):
        assert ask() == first
    # Only the few threads that answer hold connections (opened on their first run),
    # so far fewer descriptors than runs (a thread per run left two behind each).
    assert open_on_catalog() - before < runs // 2
    assert answering.answered == runs + 1
