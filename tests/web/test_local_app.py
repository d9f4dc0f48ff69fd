"""The local service over real HTTP (SPEC L7, L9, L10): never blocking, always telling."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from convodex import config
from convodex.catalog.db import open_catalog
from convodex.catalog.scheduler import Scheduler
from convodex.catalog.search import progress_sentence
from convodex.catalog.speed.settings import Accelerators
from convodex.models import Progress
from convodex.sources.roots import resolve_root
from convodex.writer import SessionWriter
from corpus import generate as generate_corpus
from helpers import CliRun, append_lines, service, write_claude_session, write_session
from live_server import serving, wait_for


def convo(word: str, n: int = 4) -> list[dict[str, object]]:
    return [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"{word} line {i}",
            "createdAt": 1767225600000 + i,
        }
        for i in range(n)
    ]


def big_corpus(tmp_path: Path, mb: float = 12) -> Path:
    """Native sessions from the project's generator (bench/corpus.py)."""
    return generate_corpus(tmp_path / "corpus", mb=mb, seed=7).path


def progress(client: httpx.Client) -> dict[str, Any]:
    state: dict[str, Any] = client.get("/status").json()
    return state


def test_search_tree_session_and_around(root: Path, cache_dir: Path) -> None:
    write_session(root, "s1", convo("walrus", 6), {"name": "Walrus talk", "workspace_root": "/w"})
    write_session(root, "s2", convo("otter"))
    with serving(service(cache_dir, [root])) as client:
        wait_for(lambda: progress(client)["state"] == "complete")
        # One hit per document with group=0 (as the page asks).
        flat: dict[str, str | int] = {"q": "walrus", "group": 0}
        found = client.get("/search", params={**flat, "limit": 2}).json()
        assert len(found["hits"]) == 2 and found["nextCursor"] and found["grouped"] is False
        assert found["hits"][0]["sessionTitle"] == "Walrus talk"
        rest = client.get(
            "/search", params={**flat, "limit": 5, "cursor": found["nextCursor"]}
        ).json()
        assert len(rest["hits"]) == 4
        latest = client.get("/search", params={"q": "line", "latest": 1, "limit": 50, "group": 0})
        assert len(latest.json()["hits"]) == 10
        # Grouped by default: the session once, with its best moments.
        grouped = client.get("/search", params={"q": "walrus"}).json()
        assert grouped["grouped"] is True and len(grouped["hits"]) == 1
        assert grouped["hits"][0]["moreHits"] == 5 and len(grouped["hits"][0]["moments"]) == 2
        bad = client.get("/search", params={"q": "walrus", "group": "maybe"})
        assert bad.status_code == 400 and "group must be 1 or 0" in bad.json()["error"]
        tree = client.get("/tree").json()
        assert tree["listingState"] == "complete" and tree["countsComplete"] is True
        rows = {r["sessionId"]: r for r in tree["rows"]}
        assert rows["s1"]["messageCount"] == 6 and rows["s1"]["title"] == "Walrus talk"
        session = client.get("/sessions/s1").json()
        assert [m["messageIndex"] for m in session["messages"]] == list(range(6))
        ctx = client.get("/sessions/s1/around", params={"index": 3, "before": 1, "after": 1})
        assert [(m["messageIndex"], m["hit"]) for m in ctx.json()["messages"]] == [
            (2, False),
            (3, True),
            (4, False),
        ]


def test_search_filters_and_orders_over_http(root: Path, cache_dir: Path) -> None:
    day = 86_400_000
    for n, project in enumerate(["/srv/a", "/srv/b", "/srv/a"]):
        messages = [
            {"role": "user", "content": f"heron sighting {n}", "createdAt": (n + 1) * day},
            {"role": "assistant", "content": "noted heron", "createdAt": (n + 1) * day + 1},
        ]
        write_session(root, f"s{n}", messages, {"workspace_root": project})
    with serving(service(cache_dir, [root])) as client:
        wait_for(lambda: progress(client)["state"] == "complete")

        def refs(**params: Any) -> list[str]:
            answer = client.get("/search", params={"q": "heron", "group": 0, **params})
            assert answer.status_code == 200, answer.text
            return [h["ref"] for h in answer.json()["hits"]]

        assert refs(sort="newest", role="user") == ["s2#0", "s1#0", "s0#0"]
        assert refs(latest=1, role="user") == ["s2#0", "s1#0", "s0#0"]  # the older spelling
        assert refs(sort="oldest", role="user") == ["s0#0", "s1#0", "s2#0"]
        assert sorted(refs(project="/srv/a", kind="user_text")) == ["s0#0", "s2#0"]
        assert refs(q="heron project:b", kind="user_text") == ["s1#0"]
        assert refs(session="s1", sort="oldest") == ["s1#0", "s1#1"]
        assert refs(until="1970-01-02T12:00:00Z", sort="oldest") == ["s0#0", "s0#1"]
        bad = client.get("/search", params={"q": "heron", "sort": "sideways"})
        assert bad.status_code == 400 and "sort must be one of" in bad.json()["error"]


def test_tree_titles_fall_back_to_the_first_user_message(root: Path, cache_dir: Path) -> None:
    write_session(root, "named", convo("walrus"), {"name": "Walrus talk"})
    write_session(root, "untitled", [{"role": "user", "content": "Why  does\nthe walrus sing?"}])
    with serving(service(cache_dir, [root])) as client:
        wait_for(lambda: progress(client)["state"] == "complete")
        titles = {r["sessionId"]: r["title"] for r in client.get("/tree").json()["rows"]}
        assert titles == {"named": "Walrus talk", "untitled": "Why does the walrus sing?"}


def test_a_broken_config_file_never_breaks_showing_a_session(
    tmp_path: Path, cache_dir: Path
) -> None:
    config = Path.home() / ".config" / "convodex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("[resume\nthis is not toml")
    root = tmp_path / "claude"
    write_claude_session(root, "abc123", "/srv/app", [("user", "heron sighting", 1_000)])
    expected = "cd /srv/app && claude --resume abc123"
    with serving(service(cache_dir, [resolve_root(f"{root}:claude-code")])) as client:
        wait_for(lambda: progress(client)["state"] == "complete")
        hits = client.get("/search", params={"q": "heron"}).json()["hits"]
        assert [h["resumeCommand"] for h in hits] == [expected]
        view = client.get("/sessions/abc123")
        assert view.status_code == 200 and view.json()["resumeCommand"] == expected


def test_one_error_shape(root: Path, cache_dir: Path) -> None:
    with serving(service(cache_dir, [root])) as client:
        cases: list[tuple[str, dict[str, Any], int]] = [
            ("/search", {"q": "!!"}, 400),
            ("/search", {"q": "x", "kind": "bogus"}, 400),
            ("/search", {"q": "x", "limit": "lots"}, 400),
            ("/search", {"q": "x", "cursor": "garbage"}, 400),
            ("/sessions/nope", {}, 404),
            ("/sessions/nope/around", {"index": 1}, 404),
            ("/sessions/s1/around", {"index": "1" * 30}, 400),  # beyond SQLite's integers
            ("/no/such/route", {}, 404),
        ]
        for path, params, status in cases:
            response = client.get(path, params=params)
            assert response.status_code == status, path
            body = response.json()
            assert body["ok"] is False and body["status"] == status and body["error"]
            assert "bogus" not in body["error"] or "kind" in body["error"]
        response = client.post("/runtime", content=b"not json")
        assert response.status_code == 400 and response.json()["ok"] is False


def test_search_worker_processes_answer_with_the_runtime_overlay(
    root: Path, cache_dir: Path
) -> None:
    """`convodex serve` searches in worker processes; the overlay stays this process's."""
    write_session(root, "s1", convo("walrus"))
    write_session(root, "s2", convo("walrus"))
    pooled = service(cache_dir, [root], Accelerators(search_workers=2))
    with serving(pooled) as client:
        assert pooled.speed.workers == 2
        wait_for(lambda: progress(client)["state"] == "complete")
        client.post("/runtime", json={"open": ["s2"], "running": [], "current": "s2"})
        hits = client.get("/search", params={"q": "walrus", "sort": "newest"}).json()["hits"]
        assert {h["sessionId"]: (h["open"], h["current"]) for h in hits} == {
            "s1": (False, False),
            "s2": (True, True),
        }
        # Appends keep being found: the workers read the catalog the scheduler writes.
        append_lines(root / "s1.jsonl", [{"role": "user", "content": "a late narwhal"}])
        client.post("/runtime", json={})
        assert pooled.scheduler is not None
        pooled.scheduler.request_scan()
        wait_for(lambda: bool(client.get("/search", params={"q": "narwhal"}).json()["hits"]))


def test_runtime_overlay_comes_from_memory(root: Path, cache_dir: Path) -> None:
    write_session(root, "s1", convo("walrus"))
    write_session(root, "s2", convo("walrus"))
    with serving(service(cache_dir, [root])) as client:
        wait_for(lambda: progress(client)["state"] == "complete")
        assert client.post(
            "/runtime", json={"open": ["s1", "s2"], "running": ["s2"], "current": "s1"}
        ).json() == {"ok": True}
        flags = {
            h["sessionId"]: (h["open"], h["running"], h["current"])
            for h in client.get("/search", params={"q": "walrus"}).json()["hits"]
        }
        assert flags == {"s1": (True, False, True), "s2": (True, True, False)}
        rows = {r["sessionId"]: r["running"] for r in client.get("/tree").json()["rows"]}
        assert rows == {"s1": False, "s2": True}
    with open_catalog(cache_dir) as catalog:  # nothing of it was persisted
        columns = [r[1] for r in catalog.db.execute("PRAGMA table_info(sources)")]
        assert not {"open", "running", "current"} & set(columns)


def test_writer_hint_makes_an_append_searchable(root: Path, cache_dir: Path) -> None:
    """Rescans an hour apart and no file watcher: only the writer's hint brings the
    appends in. How soon is bench/bench_writer_hint.py's (p50/p95 beside the watcher)."""
    write_session(root, "s1", convo("walrus"))
    with serving(service(cache_dir, [root], rescan_seconds=3600)) as client:
        wait_for(lambda: progress(client)["state"] == "complete")
        # Another process's writer: the hint travels over the local socket.
        writer = SessionWriter(root, channel=config.hint_socket_path(cache_dir))
        for i in range(5):
            word = f"zebrafish{i}"
            writer.append("s1", [{"role": "user", "content": f"the {word} appeared"}])
            wait_for(
                lambda w=word: bool(  # type: ignore[misc]
                    client.get("/search", params={"q": w}).json()["hits"]
                ),
                timeout=60,
            )


def test_file_watcher_catches_external_writers(root: Path, cache_dir: Path) -> None:
    path = write_session(root, "s1", convo("walrus"))
    watched = service(cache_dir, [root], rescan_seconds=3600)
    with serving(watched, watch=True) as client:
        wait_for(lambda: progress(client)["state"] == "complete")
        assert watched.watching.wait(10), "the file watcher did not start"
        append_lines(path, [{"role": "user", "content": "an externally written narwhal"}])
        wait_for(
            lambda: bool(client.get("/search", params={"q": "narwhal"}).json()["hits"]), timeout=5
        )


def test_progressive_tree_answers_at_once_while_indexing(tmp_path: Path, cache_dir: Path) -> None:
    corpus = big_corpus(tmp_path)
    with serving(service(cache_dir, [corpus])) as client:
        wait_for(lambda: progress(client)["total"] > 0)
        # How fast it answers is bench/bench_serve.py's ("progressive /tree"); here:
        # it answers from what is known while indexing, with the rest still pending.
        states = []
        for _ in range(5):
            tree = client.get("/tree", params={"progressive": 1}).json()
            states.append(progress(client)["state"])
        assert "indexing" in states  # asked while the corpus was still indexing
        assert tree["pendingMetadata"] > 0 and tree["countsComplete"] is False
        wait_for(lambda: progress(client)["state"] == "complete", timeout=120)
        wait_for(
            lambda: client.get("/tree", params={"progressive": 1}).json()["countsComplete"],
            timeout=60,
        )
        final = client.get("/tree", params={"progressive": 1}).json()
        complete = client.get("/tree").json()
        assert complete["rows"] == final["rows"]
        assert len(complete["rows"]) == len(list(corpus.rglob("*.jsonl")))


def test_interactive_read_preempts_a_rebuild(tmp_path: Path, cache_dir: Path) -> None:
    corpus = big_corpus(tmp_path)
    first = sorted(corpus.rglob("*.jsonl"))[0]
    with serving(service(cache_dir, [corpus])) as client:
        wait_for(lambda: progress(client)["indexed"] > 0)
        src = client.get("/tree", params={"progressive": 1}).json()["rows"][0]
        response = client.get(
            f"/sessions/{src['sessionId']}/around", params={"index": 1, "path": src["sessionPath"]}
        )
        after = progress(client)
        assert response.status_code == 200 and response.json()["messages"]
        assert after["state"] == "indexing"  # the read finished before the rebuild did
        assert first.exists()


def test_hits_and_reads_carry_where_the_query_matches(root: Path, cache_dir: Path) -> None:
    """The library's highlighter marks, in code points: a surface has no tokenizer."""
    write_session(root, "s1", [{"role": "user", "content": "Le café 数据库迁移 Walrus walruses"}])
    with serving(service(cache_dir, [root])) as client:
        wait_for(lambda: progress(client)["state"] == "complete")
        query = '"cafe" 迁移 walrus* -nothing agent:session-log'
        hit = client.get("/search", params={"q": query}).json()["hits"][0]
        marked = [hit["snippet"][a:b] for a, b in hit["highlights"]]
        assert marked == ["café", "迁移", "Walrus", "walruses"]
        ref = {"path": hit["sessionPath"], "q": query}
        around = client.get("/sessions/s1/around", params={"index": 0, **ref}).json()
        text = around["messages"][0]["text"]
        assert [text[a:b] for a, b in around["messages"][0]["highlights"]] == marked
        whole = client.get("/sessions/s1", params=ref).json()["messages"][0]
        assert [whole["text"][a:b] for a, b in whole["highlights"]] == marked
        # Without a query (a session opened from the tree) nothing is marked.
        plain = client.get("/sessions/s1", params={"path": hit["sessionPath"]}).json()
        assert "highlights" not in plain["messages"][0]


def test_events_stream_progress(root: Path, cache_dir: Path) -> None:
    """Each event is the state, its counts and the library's sentence for them: what
    ``/status`` answers, so the page rebuilds nothing from counts."""
    write_session(root, "s1", convo("walrus"))
    with serving(service(cache_dir, [root])) as client:
        with client.stream("GET", "/events") as stream:
            for line in stream.iter_lines():
                if line.startswith("data: "):
                    event = json.loads(line[6:])
                    assert set(event) == {
                        "state",
                        "revision",
                        "indexed",
                        "total",
                        "pending",
                        "failed",
                        "reason",
                        "sentence",
                    }
                    counts = {k: v for k, v in event.items() if k not in ("sentence", "reason")}
                    assert event["sentence"] == progress_sentence(Progress(**counts))
                    if event["indexed"] == 1:
                        assert event["state"] == "complete"
                        assert event["sentence"] == "index complete: 1 of 1 source"
                        break
        status = client.get("/status").json()
        assert status["state"] == "complete" and status["sentence"] == event["sentence"]


def test_interrupted_scan_keeps_vanished_sources_completed_scan_removes_them(
    root: Path, cache_dir: Path
) -> None:
    for i in range(40):
        write_session(root, f"s{i:02d}", convo(f"word{i}"))
    victim = root / "s39.jsonl"
    with open_catalog(cache_dir) as catalog:
        scheduler = Scheduler(catalog, [root], rescan_seconds=3600)
        with scheduler.interactive():  # hold the scan at its first batch boundary
            scheduler.start()
            wait_for(lambda: catalog.db.execute("SELECT count(*) FROM sources").fetchone()[0] == 40)
            victim.unlink()
            (root / "s39.jsonl.meta").unlink()
            scheduler.stop()  # the scan never completes
        assert scheduler.scans_completed == 0
        assert (
            catalog.db.execute(
                "SELECT count(*) FROM sources WHERE path = ?", (str(victim),)
            ).fetchone()[0]
            == 1
        )
        second = Scheduler(catalog, [root], rescan_seconds=3600).start()
        wait_for(lambda: second.scans_completed == 1)
        second.stop()
        paths = {r[0] for r in catalog.db.execute("SELECT path FROM sources")}
        assert str(victim) not in paths and len(paths) == 39


def test_two_processes_share_one_catalog(tmp_path: Path, cache_dir: Path) -> None:
    corpus = big_corpus(tmp_path, mb=6)
    env = dict(os.environ)
    cmd = [
        sys.executable,
        "-m",
        "convodex",
        "index",
        "--root",
        str(corpus),
        "--cache-dir",
        str(cache_dir),
        "--json",
    ]
    procs = [
        subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(2)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err.decode()[-500:]  # a locked catalog is waited out
    with open_catalog(cache_dir) as catalog:
        assert catalog.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finish = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    assert json.loads(finish.stdout)["progress"]["state"] == "complete"
    clean = tmp_path / "clean-cache"
    subprocess.run(
        cmd[:-3] + ["--cache-dir", str(clean), "--json"], check=True, capture_output=True
    )
    search = [sys.executable, "-m", "convodex", "search", "the", "--limit", "200", "--json"]
    shared = json.loads(
        subprocess.run(
            search + ["--cache-dir", str(cache_dir)], capture_output=True, text=True, check=True
        ).stdout
    )
    fresh = json.loads(
        subprocess.run(
            search + ["--cache-dir", str(clean)], capture_output=True, text=True, check=True
        ).stdout
    )
    key = lambda hit: (hit["sessionPath"], hit["messageIndex"], hit["partIndex"])  # noqa: E731
    assert sorted(map(key, shared["hits"])) == sorted(map(key, fresh["hits"]))


def test_serve_refuses_a_non_loopback_bind(cli: CliRun) -> None:
    result = cli("serve", "--host", "0.0.0.0", "--port", "1")
    assert result.exit_code == 2 and "refusing to bind" in result.output


def test_the_trees_loading_count_settles_once_indexed(
    root: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 24: no row says "loading" for good once the index is complete: more sessions
    than one listing refresh summarizes, and a source that failed (counted unreadable)."""
    monkeypatch.setenv("CONVODEX_REPLAY_MAX_RECORD_BYTES", "2000")
    for n in range(300):
        write_session(root, f"s{n:03}", convo(f"word{n}", 2))
    huge = json.dumps({"role": "user", "content": "alpha " + "x" * 3000})
    (root / "huge.jsonl").write_text(huge + "\n")
    with serving(service(cache_dir, [root])) as client:
        wait_for(lambda: progress(client)["state"] == "complete", timeout=120)
        assert progress(client)["failed"] == 1

        def settled() -> bool:
            tree = client.get("/tree", params={"progressive": 1}).json()
            return bool(tree["pendingMetadata"] == 0 and tree["failedMetadata"] == 1)

        wait_for(settled, timeout=60)
        tree = client.get("/tree", params={"progressive": 1}).json()
        assert tree["listingState"] == "partial" and len(tree["rows"]) == 301
        assert sum(r["messageCount"] == 2 for r in tree["rows"]) == 300
