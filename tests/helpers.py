"""Helpers the local-history tests share: real session files, hashes, CLI output."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import Result

from convodex.catalog.db import Catalog
from convodex.catalog.plan import SearchRequest
from convodex.catalog.search import Searcher
from convodex.catalog.service import Background, HistoryService
from convodex.catalog.speed.settings import Accelerators
from convodex.catalog.speed.wing import Wing
from convodex.models import to_builtins
from convodex.sources.base import Budget, ReadResult, SourceFormat, SourceMessage
from convodex.sqlite import sqlite3

CliRun = Callable[..., Result]
"""The ``cli`` fixture: runs the real CLI with the test's cache dir."""
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def write_session(
    root: Path,
    session_id: str,
    messages: list[Any],
    meta: dict[str, Any] | None = None,
    subdir: str = "",
) -> Path:
    """A native session log with its ``.jsonl.meta`` sidecar."""
    folder = root / subdir if subdir else root
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{session_id}.jsonl"
    path.write_text("".join(json.dumps(m, ensure_ascii=False) + "\n" for m in messages), "utf-8")
    sidecar = {"id": session_id, "revision": len(messages)}
    sidecar.update(meta or {})
    (folder / f"{session_id}.jsonl.meta").write_text(json.dumps(sidecar), "utf-8")
    return path


def append_lines(path: Path, messages: list[dict[str, Any]]) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        for m in messages:
            handle.write(json.dumps(m, ensure_ascii=False) + "\n")


def tree_hashes(root: Path) -> dict[str, str]:
    return {
        str(p): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def as_json(result: Result) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def die_at_once(*args: Any) -> None:
    """A helper-process target that dies before sending anything."""
    import os

    os._exit(3)


# The accelerators direct searches (``search``) use: the ``accelerators`` fixture's
# (conftest: the test runs once with none, once with all), else what the environment
# asks for (``CONVODEX_ACCELERATORS``), as a service would.
SPEED: list[Wing] = []


def speed() -> Wing:
    if not SPEED:
        SPEED.append(Wing(Accelerators.from_config()))
    return SPEED[-1]


def helped() -> Wing:
    """A helper process on every index run, however small and however few the CPUs
    (the catalog it builds must be the one a single process builds)."""
    return Wing(Accelerators(helper_process=True, helper_min_bytes=1))


def search(catalog: Catalog, query: str, **options: Any) -> dict[str, Any]:
    """One search page as its JSON shape (what ``--json`` and HTTP print): one hit per
    document unless ``group=True`` is given, since catalog tests look at documents."""
    options.setdefault("group", False)
    page = Searcher(catalog, speed=speed()).search(SearchRequest(query=query, **options))
    result: dict[str, Any] = to_builtins(page)
    return result


def service(
    cache_dir: Path,
    roots: list[Path],
    accelerators: Accelerators | None = None,
    **background: Any,
) -> HistoryService:
    """A history service whose background work (once started) uses these settings;
    ``accelerators``: the ones a test of an accelerator asks for (default: the
    environment's)."""
    return HistoryService.open(
        cache_dir, roots, background=Background(**background), accelerators=accelerators
    )


def iso(epoch_ms: int) -> str:
    """An ISO 8601 UTC time the way agents write it."""
    from datetime import UTC, datetime

    return datetime.fromtimestamp(epoch_ms / 1000, UTC).isoformat().replace("+00:00", "Z")


def write_claude_session(
    root: Path, session_id: str, cwd: str, turns: list[tuple[str, str, int]]
) -> Path:
    """A Claude Code transcript (``<root>/<slug>/<id>.jsonl``): (role, text, epoch ms)."""
    folder = root / cwd.strip("/").replace("/", "-")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{session_id}.jsonl"
    lines, parent = [], None
    for n, (role, text, at) in enumerate(turns):
        uuid = f"{session_id}-{n}"
        content: Any = text if role == "user" else [{"type": "text", "text": text}]
        lines.append(
            {
                "type": role,
                "uuid": uuid,
                "parentUuid": parent,
                "sessionId": session_id,
                "cwd": cwd,
                "timestamp": iso(at),
                "message": {"role": role, "content": content},
            }
        )
        parent = uuid
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), "utf-8")
    return path


def write_codex_rollout(
    root: Path, session_id: str, cwd: str, turns: list[tuple[str, str, int]]
) -> Path:
    """A Codex rollout (``<root>/YYYY/MM/DD/rollout-…-<id>.jsonl``): (role, text, epoch ms)."""
    folder = root / "2026" / "11" / "01"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"rollout-2026-11-01T00-00-00-{session_id}.jsonl"
    start = turns[0][2] if turns else 0
    lines: list[dict[str, Any]] = [
        {
            "timestamp": iso(start),
            "type": "session_meta",
            "payload": {"id": session_id, "timestamp": iso(start), "cwd": cwd},
        }
    ]
    for role, text, at in turns:
        kind = "input_text" if role == "user" else "output_text"
        lines.append(
            {
                "timestamp": iso(at),
                "type": "response_item",
                "payload": {
                    "type": "message",
                    "role": role,
                    "content": [{"type": kind, "text": text}],
                },
            }
        )
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), "utf-8")
    return path


def read_all(fmt: SourceFormat, path: Path) -> list[SourceMessage]:
    """Every message ``read`` yields, each checked against ``load`` of its span:
    hydration at search time rebuilds exactly what was indexed."""
    messages = list(fmt.read(path, ReadResult(0, 0), Budget.from_env()))
    for m in messages:
        loaded = fmt.load(path, m.offset, m.length, m.index)
        assert loaded is not None
        assert [(d.part, d.kind, d.text, d.tool_name) for d in loaded.documents] == [
            (d.part, d.kind, d.text, d.tool_name) for d in m.documents
        ]
        assert (loaded.role, loaded.session_id, loaded.title, loaded.subagent) == (
            m.role,
            m.session_id,
            m.title,
            m.subagent,
        )
    return messages


def shown(messages: list[SourceMessage]) -> list[str]:
    """The text of every message that has documents, in order."""
    return [m.text() for m in messages if m.documents]


def kinds(messages: list[SourceMessage]) -> set[str]:
    return {d.kind for m in messages for d in m.documents}


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    """A transcript of one JSON record a line (parents created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), "utf-8")
    return path


def hits(cli: CliRun, query: str, *extra: str) -> list[dict[str, Any]]:
    """The hits of a real ``convodex search --json --no-group`` (one per document),
    every kind unless ``--kind`` is given."""
    every = ("--kind", "user_text,assistant_text,tool_input,tool_output,tool_error")
    kinds = () if "--kind" in extra else every
    result = as_json(cli("search", query, "--json", "--no-group", *kinds, *extra))
    return list(result["hits"])


def source_row(cli: CliRun, root: Path) -> dict[str, Any]:
    """``convodex sources --json``'s row for one of the default roots."""
    out = as_json(cli("sources", "--json", cache=False))
    rows = [r for r in out["roots"] if Path(r["path"]) == root.resolve()]
    assert len(rows) == 1, f"{root} is not a default root"
    return dict(rows[0])


Write = Callable[[sqlite3.Connection, int], None]
"""The agent's write number ``n`` on its own connection (0: left open, 1: mid-read)."""


def read_beside_a_writer(
    fmt: Any, path: Path, write: Write
) -> tuple[list[SourceMessage], list[SourceMessage]]:
    """Read a database while its agent writes: (a read during the agent's open write
    transaction, a read the agent commits into between two messages).

    The agent never waits (busy timeout 0): a reader that held a lock or a transaction
    across messages would make its commit fail.
    """
    agent = sqlite3.connect(path, timeout=0)
    try:
        agent.execute("BEGIN IMMEDIATE")
        write(agent, 0)
        during = read_all(fmt, path)
        agent.commit()
        reading = fmt.read(path, ReadResult(0, 0), Budget.from_env())
        interrupted = [next(reading)]
        with agent:
            write(agent, 1)
        interrupted.extend(reading)
    finally:
        agent.close()
    return during, interrupted


def bubble(kind: int, text: str, **extra: Any) -> dict[str, Any]:
    return {"_v": 3, "type": kind, "text": text, **extra}


def write_vscdb(path: Path) -> None:
    """The editor's global database: a composer listing its bubbles (one edited away),
    an old composer with its conversation inline, and some editor state."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    db.execute("CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    tool = {
        "name": "run_terminal_cmd",
        "rawArgs": '{"command": "pytest -x"}',
        "result": '{"output": "kestrel exploded"}',
        "status": "error",
    }
    bubbles = {
        "b1": bubble(1, "how do I parse toml in a heron script"),
        "b2": bubble(2, "an abandoned answer about pelicans"),  # edited away
        "b3": bubble(2, "Use tomllib.", thinking={"text": "innerthoughts"}),
        "b4": bubble(2, "", toolFormerData=tool),
    }
    composer = {
        "_v": 3,
        "composerId": "comp-1",
        "name": "TOML parsing",
        "createdAt": 1_767_225_600_000,
        "fullConversationHeadersOnly": [
            {"bubbleId": b, "type": bubbles[b]["type"]} for b in ("b1", "b3", "b4")
        ],
    }
    old = {
        "composerId": "comp-0",
        "name": "Old chat",
        "conversation": [bubble(1, "legacy question about ibis"), bubble(2, "legacy answer")],
    }
    with db:
        db.execute("INSERT INTO ItemTable VALUES ('workbench.panel', '{}')")
        db.execute("INSERT INTO cursorDiskKV VALUES ('composerData:comp-0', ?)", (json.dumps(old),))
        for key, value in bubbles.items():
            db.execute(
                "INSERT INTO cursorDiskKV VALUES (?, ?)",
                (f"bubbleId:comp-1:{key}", json.dumps(value)),
            )
        db.execute(
            "INSERT INTO cursorDiskKV VALUES ('composerData:comp-1', ?)", (json.dumps(composer),)
        )
    db.close()


def slow_helper(*args: Any) -> None:
    """An index helper that waits 50 ms before it claims each source: a helper that is
    the slower half, so the indexing process claims sources too."""
    import time

    from convodex.catalog.speed import helper as batches

    claim = batches.Claims.claim

    def slowly(self: batches.Claims, count: int, allow: Any = None) -> int | None:
        time.sleep(0.05)
        return claim(self, count, allow)

    batches.Claims.claim = slowly  # type: ignore[method-assign]
    batches.read_in_helper(*args)


def die_after_a_group(*args: Any) -> None:
    """An index helper that dies (as if killed) right after sending its first group."""
    import os

    from convodex.catalog.speed import helper as batches

    connect = batches._connection

    def connection(sock: Any) -> Any:
        conn = connect(sock)
        send = conn.send

        def send_then_die(obj: Any) -> None:
            send(obj)
            os._exit(3)

        conn.send = send_then_die  # type: ignore[method-assign]
        return conn

    batches._connection = connection
    batches.read_in_helper(*args)
