"""Cursor: the agent's transcripts (public fixtures), its chat stores, and the editor's
``state.vscdb``.

The chat store fixture holds only metadata; stores with messages and the editor's
database are built here from their documented shape (no public sample exists).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from convodex.sources import cursor, cursor_ide
from convodex.sources.base import Budget, ReadResult, SourceMessage
from convodex.sources.discover import detect, scan
from convodex.sources.roots import resolve_root, vscode_user_dir
from convodex.sqlite import sqlite3
from helpers import (
    FIXTURES,
    CliRun,
    as_json,
    bubble,
    read_all,
    read_beside_a_writer,
    tree_hashes,
    write_vscdb,
)

CURSOR = FIXTURES / "cursor"
PARENT = "0b5e3c1a-7d2f-4c1e-9a6b-1f2e3d4c5b6a"
LISTED = "1c6f4d2b-8e3a-4d2f-8b7c-2a3b4c5d6e7f"
STORE_ONLY = "2d7a5e3c-9f4b-4e3a-9c8d-3b4c5d6e7f8a"
FIXTURE_STORE = "a1b2c3d4-e5f6-7890-abcd-ef1234567890"


def said(messages: list[SourceMessage]) -> list[str]:
    return [
        d.text for m in messages for d in m.documents if d.kind in ("user_text", "assistant_text")
    ]


def test_transcript_fixtures() -> None:
    result = ReadResult(0, 0)
    small = list(cursor.FORMAT.read(CURSOR / "agent-sessions-small.jsonl", result, Budget()))
    assert len(small) == 4 and result.errors == []  # the turn marker is not a message
    session = read_all(cursor.FORMAT, CURSOR / "agent-sessions-test-session.jsonl")
    assert said(session)[0] == "run ls command"  # <user_query> unwrapped
    assert said(session)[3] == "now show me the git status"
    large = read_all(cursor.FORMAT, CURSOR / "agent-sessions-large.jsonl")
    assert "Let me check the directory." not in " ".join(m.text() for m in large)  # thinking
    assert [m.role for m in large][:3] == ["user", "assistant", "tool"]
    assert [(d.kind, d.tool_name) for d in large[1].documents][1:] == [("tool_input", "Bash")]
    assert [d.kind for d in large[2].documents] == ["tool_output"]
    drift = read_all(cursor.FORMAT, CURSOR / "agent-sessions-schema_drift.jsonl")
    assert [(d.kind, d.tool_name) for m in drift for d in m.documents if d.tool_name] == [
        ("tool_input", "read_file"),
        ("tool_output", "read_file"),
    ]
    sub = read_all(cursor.FORMAT, CURSOR / "agent-sessions-subagent-session.jsonl")
    assert said(sub) == [
        "Run ls -la in the workspace directory and return the output.",
        "Done. The directory has 12 entries.",
    ]
    pair = CURSOR / "agent-sessions-subagent"
    assert said(read_all(cursor.FORMAT, pair / "parent.jsonl")) == [
        "Run a subagent.",
        "Spawning subagent.",
    ]
    child = pair / "subagents" / "child.jsonl"
    assert said(read_all(cursor.FORMAT, child)) == ["List files", "file1.txt\nfile2.txt"]
    info = cursor.FORMAT.info(child)
    assert info.subagent and info.parent_id == "agent-sessions-subagent"
    for path in CURSOR.glob("*.jsonl"):  # outside agent-transcripts: known by its lines
        assert detect(path, path.stat().st_ino, None) == "cursor", path.name


def varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def field(number: int, payload: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def write_store(
    path: Path, agent_id: str, name: str, messages: list[dict[str, Any]], workspace: str
) -> None:
    """A chat store as the agent writes it: content-addressed JSON messages, a protobuf
    root listing them (field 1) and naming the workspace (field 9), hex-encoded meta."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("CREATE TABLE blobs (id TEXT PRIMARY KEY, data BLOB)")
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    ids = []
    with db:
        for m in messages:
            data = json.dumps(m).encode()
            ids.append(hashlib.sha256(data).digest())
            db.execute("INSERT INTO blobs VALUES (?, ?)", (ids[-1].hex(), data))
        root = b"".join(field(1, i) for i in ids) + field(9, Path(workspace).as_uri().encode())
        root_id = hashlib.sha256(root).hexdigest()
        db.execute("INSERT INTO blobs VALUES (?, ?)", (root_id, root))
        meta = {"agentId": agent_id, "name": name, "createdAt": 1_767_225_600_000}
        meta["latestRootBlobId"] = root_id
        db.execute("INSERT INTO meta VALUES ('0', ?)", (json.dumps(meta).encode().hex(),))
    db.close()


STORE_MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a coding agent. systemprompt"},
    {
        "role": "user",
        "content": [
            {
                "type": "text",
                "text": "<user_info>OS darwin injectedinfo</user_info>\n"
                "<user_query>why is the capybara build red</user_query>",
            }
        ],
    },
    {
        "role": "assistant",
        "content": [
            {"type": "reasoning", "text": "privatereasoning"},
            {"type": "text", "text": "Let me run it."},
            {
                "type": "tool-call",
                "toolCallId": "c1",
                "toolName": "run_terminal_cmd",
                "args": {"command": "make"},
            },
        ],
    },
    {
        "role": "tool",
        "content": [
            {
                "type": "tool-result",
                "toolCallId": "c1",
                "toolName": "run_terminal_cmd",
                "result": "error: target missing",
            }
        ],
    },
]


def test_store_messages(tmp_path: Path) -> None:
    store = tmp_path / "chats" / ("0" * 32) / STORE_ONLY / "store.db"
    write_store(store, STORE_ONLY, "Red build", STORE_MESSAGES, "/home/dev/My App")
    messages = read_all(cursor.FORMAT, store)
    assert [m.role for m in messages] == ["system", "user", "assistant", "tool"]
    assert said(messages) == ["why is the capybara build red", "Let me run it."]
    words = " ".join(m.text() for m in messages)
    assert "systemprompt" not in words and "injectedinfo" not in words
    assert "privatereasoning" not in words
    assert [(d.kind, d.tool_name) for d in messages[3].documents] == [
        ("tool_error", "run_terminal_cmd")
    ]
    info = cursor.FORMAT.info(store)
    assert (info.session_id, info.title, info.workspace_root) == (
        STORE_ONLY,
        "Red build",
        "/home/dev/My App",
    )


def cursor_home(cli_home: Path) -> Path:
    """A fake ``~/.cursor``: a parent and its sub-agent, a transcript whose chat store
    also holds its messages, a store alone, and the public metadata-only store."""
    home = cli_home / ".cursor"
    transcripts = home / "projects" / "-work-app" / "agent-transcripts"
    pair = transcripts / PARENT
    pair.mkdir(parents=True)
    shutil.copy(CURSOR / "agent-sessions-subagent" / "parent.jsonl", pair / f"{PARENT}.jsonl")
    (pair / "subagents").mkdir()
    shutil.copy(
        CURSOR / "agent-sessions-subagent" / "subagents" / "child.jsonl", pair / "subagents"
    )
    shutil.copy(CURSOR / "agent-sessions-test-session.jsonl", transcripts / f"{LISTED}.jsonl")
    chats = home / "chats" / hashlib.md5(b"/home/dev/app").hexdigest()
    listed = [*STORE_MESSAGES[:1], {"role": "user", "content": "a duplicated okapi"}]
    write_store(chats / LISTED / "store.db", LISTED, "Listing files", listed, "/home/dev/app")
    write_store(chats / STORE_ONLY / "store.db", STORE_ONLY, "Red build", STORE_MESSAGES, "/w")
    (chats / FIXTURE_STORE).mkdir()
    shutil.copy(CURSOR / "agent-sessions-test-store.db", chats / FIXTURE_STORE / "store.db")
    return home


def test_default_roots_end_to_end(cli: CliRun) -> None:
    home = cursor_home(Path.home())
    before = tree_hashes(home)
    out = as_json(cli("index", "--json"))
    assert out["stats"]["failed"] == 0

    def hits(query: str, *extra: str) -> list[dict[str, Any]]:
        return list(as_json(cli("search", query, "--json", *extra))["hits"])

    found = hits("git status")
    assert {(h["sourceFormat"], h["sessionId"]) for h in found} == {("cursor", LISTED)}
    # The transcript's session is named and placed by its chat store.
    assert {(h["sessionTitle"], h["workspaceRoot"]) for h in found} == {
        ("Listing files", "/home/dev/app")
    }
    assert hits("okapi") == []  # the store's copy of a session with a transcript
    assert [h["sessionId"] for h in hits("capybara")] == [STORE_ONLY]
    assert hits("file2") == []  # only the sub-agent said it
    assert [h["sessionId"] for h in hits("file2", "--include-subagents")] == ["child"]
    assert tree_hashes(home) == before
    listed = as_json(cli("sources", "--json", cache=False))
    rows = {r["path"]: r for r in listed["roots"]}
    projects = rows[str((home / "projects").resolve())]
    assert projects["formats"] == {"cursor": 3} and projects["subagents"] == 1
    assert rows[str((home / "chats").resolve())]["formats"] == {"cursor": 3}
    fixture_store = next(home.rglob(f"{FIXTURE_STORE}/store.db"))
    info = cursor.FORMAT.info(fixture_store)
    assert (info.session_id, info.title) == (FIXTURE_STORE, "Test Session")


def test_appended_transcript_line_found_after_reindex(cli: CliRun) -> None:
    home = cursor_home(Path.home())
    as_json(cli("index", "--json"))
    transcript = next(home.rglob(f"{LISTED}.jsonl"))
    line = {
        "role": "user",
        "message": {
            "content": [{"type": "text", "text": "<user_query>and the platypus</user_query>"}]
        },
    }
    with open(transcript, "a") as handle:
        handle.write(json.dumps(line) + "\n")
    as_json(cli("index", "--json"))
    assert [h["messageIndex"] for h in as_json(cli("search", "platypus", "--json"))["hits"]] == [6]


def test_store_read_only_while_the_agent_writes(tmp_path: Path) -> None:
    store = tmp_path / "chats" / ("0" * 32) / STORE_ONLY / "store.db"
    write_store(store, STORE_ONLY, "Red build", STORE_MESSAGES, "/w")
    before = tree_hashes(store.parent)
    assert len(read_all(cursor.FORMAT, store)) == 4
    assert tree_hashes(store.parent) == before  # not even -wal or -shm files

    def write(agent: sqlite3.Connection, n: int) -> None:
        agent.execute("INSERT INTO blobs VALUES (?, x'00')", (f"unlisted-{n}",))

    during, interrupted = read_beside_a_writer(cursor.FORMAT, store, write)
    assert len(during) == len(interrupted) == 4


# -- the editor ----------------------------------------------------------------------


def test_editor_composers(tmp_path: Path) -> None:
    path = tmp_path / "globalStorage" / "state.vscdb"
    write_vscdb(path)
    messages = read_all(cursor_ide.FORMAT, path)
    assert [(m.session_id, m.title) for m in messages] == [("comp-0", "Old chat")] * 2 + [
        ("comp-1", "TOML parsing")
    ] * 3
    assert said(messages) == [
        "legacy question about ibis",
        "legacy answer",
        "how do I parse toml in a heron script",
        "Use tomllib.",
    ]
    words = " ".join(m.text() for m in messages)
    assert "pelicans" not in words and "innerthoughts" not in words
    assert [(d.kind, d.tool_name) for d in messages[4].documents] == [
        ("tool_input", "run_terminal_cmd"),
        ("tool_error", "run_terminal_cmd"),
    ]


def test_editor_default_root_end_to_end(cli: CliRun) -> None:
    storage = vscode_user_dir("Cursor") / "globalStorage"
    assert storage == Path.home() / ".config" / "Cursor" / "User" / "globalStorage"
    write_vscdb(storage / "state.vscdb")
    (storage / "some.extension").mkdir()
    (storage / "some.extension" / "notes.json").write_text('{"role": "user", "message": {}}')
    before = tree_hashes(storage)
    assert as_json(cli("index", "--json"))["stats"]["failed"] == 0

    def hits(query: str) -> list[dict[str, Any]]:
        return list(as_json(cli("search", query, "--json", "--include-subagents"))["hits"])

    assert [(h["sourceFormat"], h["sessionId"], h["sessionTitle"]) for h in hits("heron")] == [
        ("cursor_ide", "comp-1", "TOML parsing")
    ]
    assert [h["kind"] for h in hits("kestrel")] == ["tool_error"]
    assert hits("pelicans") == []
    assert tree_hashes(storage) == before
    listed = as_json(cli("sources", "--json", cache=False))
    (row,) = [r for r in listed["roots"] if r["path"] == str(storage.resolve())]
    assert row["formats"] == {"cursor_ide": 1}  # extension storage is not scanned


def test_editor_state_changes_alone_do_not_reindex(tmp_path: Path, cli: CliRun) -> None:
    path = tmp_path / "globalStorage" / "state.vscdb"
    write_vscdb(path)
    root = f"{path.parent}:cursor_ide"
    assert as_json(cli("index", "--root", root, "--json"))["stats"]["indexed"] == 1
    editor = sqlite3.connect(path)
    with editor:
        editor.execute("INSERT INTO ItemTable VALUES ('workbench.panel', '{\"open\": true}')")
    assert as_json(cli("index", "--root", root, "--json"))["stats"]["indexed"] == 0
    composer = json.loads(
        editor.execute(
            "SELECT value FROM cursorDiskKV WHERE key = 'composerData:comp-1'"
        ).fetchone()[0]
    )
    composer["fullConversationHeadersOnly"].append({"bubbleId": "b5", "type": 1})
    with editor:
        editor.execute(
            "INSERT INTO cursorDiskKV VALUES ('bubbleId:comp-1:b5', ?)",
            (json.dumps(bubble(1, "and a flamingo")),),
        )
        editor.execute(
            "INSERT INTO cursorDiskKV VALUES ('composerData:comp-1', ?)", (json.dumps(composer),)
        )
    editor.close()
    assert as_json(cli("index", "--root", root, "--json"))["stats"]["indexed"] == 1
    found = as_json(cli("search", "flamingo", "--json"))["hits"]
    assert [(h["sessionId"], h["messageIndex"]) for h in found] == [("comp-1", 5)]


def test_editor_read_only_while_cursor_writes(tmp_path: Path) -> None:
    path = tmp_path / "globalStorage" / "state.vscdb"
    write_vscdb(path)
    before = cursor_ide.FORMAT.stat(path)

    def write(editor: sqlite3.Connection, n: int) -> None:
        editor.execute("INSERT INTO ItemTable VALUES (?, '1')", (f"state-{n}",))

    # The editor's database is in rollback-journal mode: its commit needs every reader gone.
    during, interrupted = read_beside_a_writer(cursor_ide.FORMAT, path, write)
    assert len(during) == len(interrupted) == 5
    assert cursor_ide.FORMAT.stat(path) == before  # editor state is not a change


@pytest.mark.parametrize(
    ("platform", "parts"),
    [
        ("darwin", ("Library", "Application Support", "Cursor", "User")),
        ("linux", (".config", "Cursor", "User")),
        ("win32", ("AppData", "Roaming", "Cursor", "User")),
    ],
)
def test_editor_user_dir_per_platform(platform: str, parts: tuple[str, ...]) -> None:
    assert vscode_user_dir("Cursor", platform) == Path.home().joinpath(*parts)


def test_scan_finds_cursor_files_only_where_they_belong(tmp_path: Path) -> None:
    cursor_home(tmp_path)
    write_vscdb(tmp_path / "Cursor" / "User" / "globalStorage" / "state.vscdb")
    write_vscdb(tmp_path / "elsewhere" / "state.vscdb")  # not an editor's global storage
    shutil.copy(CURSOR / "agent-sessions-test-store.db", tmp_path / "elsewhere" / "store.db")
    found = sorted((d.path.name, d.format) for d in scan(resolve_root(tmp_path)))
    assert found == sorted(
        [
            (f"{LISTED}.jsonl", "cursor"),
            (f"{PARENT}.jsonl", "cursor"),
            ("child.jsonl", "cursor"),
            ("state.vscdb", "cursor_ide"),
            ("store.db", "cursor"),
            ("store.db", "cursor"),
            ("store.db", "cursor"),
        ]
    )
