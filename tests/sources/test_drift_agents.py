"""Format drift in the newer agents' readers: each agent's public samples, placed as
the agent writes them, give no unknown shape at all (the readers know every type they
hold); the same samples with one record and one part of a type to come give exactly
those, counted per source for ``doctor catalogs`` (names only), and their words are
found where they have words."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from convodex.sqlite import sqlite3
from helpers import FIXTURES, CliRun, as_json, hits
from sources.agents import Agent, place
from sources.test_amp import AGENT as AMP
from sources.test_antigravity import AGENT as ANTIGRAVITY
from sources.test_cline import CLINE_TASK
from sources.test_goose import build_store as goose_store
from sources.test_grok import AGENT as GROK
from sources.test_hermes import build_store as hermes_store
from sources.test_kimi import AGENT as KIMI
from sources.test_kiro import CLI as KIRO

Edit = Callable[[Path, str], None]


def shapes_of(cli: CliRun, root: str) -> dict[tuple[str, str, str], int]:
    """Index ``root`` and return doctor's unknown shapes: (format, kind, name) → count."""
    out = as_json(cli("index", "--root", root, "--json"))
    assert out["stats"]["failed"] == 0
    report = as_json(cli("doctor", "catalogs", "--json"))["catalogs"][0]
    assert "privatewords" not in json.dumps(report)  # names and counts, never content
    return {(s["format"], s["kind"], s["name"]): s["count"] for s in report["unknownShapes"]}


def found(cli: CliRun, word: str) -> int:
    return len(
        hits(cli, word, "--include-subagents", "--kind", "user_text,assistant_text,tool_output")
    )


def append(path: Path, *records: dict[str, Any]) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in records)


def _kiro(root: Path, word: str) -> None:
    append(
        root / f"{KIRO.session}.jsonl",
        {"version": "v1", "kind": "Hologram", "data": {"mood": "privatewords"}},
        {
            "version": "v1",
            "kind": "AssistantMessage",
            "data": {"message_id": "m-drift", "content": [{"kind": "citation", "data": word}]},
        },
    )


def _kimi(root: Path, word: str) -> None:
    folder = root / KIMI.placed[0].where
    loop = {"type": "content.part", "stepUuid": "s-drift", "part": {"type": "quote", "text": word}}
    append(
        folder,
        {"type": "hologram.sync", "time": 1767261600, "mood": "privatewords"},
        {"type": "context.append_loop_event", "time": 1767261601, "event": loop},
    )


def _antigravity(root: Path, word: str) -> None:
    step = {"step_index": 900, "source": "SYSTEM", "type": "HOLOGRAM_NOTE", "content": word}
    append(root / ANTIGRAVITY.placed[0].where, step)


def _grok(root: Path, word: str) -> None:
    append(root / GROK.placed[0].where, {"type": "hologram", "content": word})


def _amp(root: Path, word: str) -> None:
    path = root / AMP.placed[0].where
    thread = json.loads(path.read_text("utf-8"))
    answer = next(m for m in thread["messages"] if m["role"] == "assistant")
    answer["content"].append({"type": "citation", "text": word})
    path.write_text(json.dumps(thread), "utf-8")


def _droid(root: Path, word: str) -> None:
    path = root / "run.jsonl"
    session = json.loads(path.read_text("utf-8").splitlines()[0])["session_id"]
    append(path, {"type": "hologram", "session_id": session, "text": word})


def _qwen(root: Path, word: str) -> None:
    path = root / "chats" / QWEN_CHAT.name
    session = json.loads(path.read_text("utf-8").splitlines()[0])["sessionId"]
    append(path, {"type": "hologram", "uuid": "u-drift", "sessionId": session, "mood": "x"})


def _cline(root: Path, word: str) -> None:
    path = root / "tasks" / CLINE_TASK.name / "api_conversation_history.json"
    history = json.loads(path.read_text("utf-8"))
    history.append({"role": "user", "content": [{"type": "citation", "text": word}]})
    path.write_text(json.dumps(history), "utf-8")


def _claude_export(root: Path) -> None:
    at = "2026-01-01T10:00:00Z"
    said = [{"type": "text", "text": "do emus swim"}]
    answer = [{"type": "text", "text": "They do."}]

    def message(uuid: str, sender: str, content: list[dict[str, Any]]) -> dict[str, Any]:
        return {"uuid": uuid, "sender": sender, "created_at": at, "content": content}

    chat = {
        "uuid": "c-drift",
        "name": "emus",
        "created_at": at,
        "updated_at": at,
        "chat_messages": [message("m1", "human", said), message("m2", "assistant", answer)],
    }
    root.mkdir(parents=True, exist_ok=True)
    (root / "conversations.json").write_text(json.dumps([chat]), "utf-8")


def _claude_export_drift(root: Path, word: str) -> None:
    path = root / "conversations.json"
    export = json.loads(path.read_text("utf-8"))
    export[0]["chat_messages"][1]["content"].append({"type": "hologram_card", "text": word})
    path.write_text(json.dumps(export), "utf-8")


def _chatgpt_drift(root: Path, word: str) -> None:
    path = root / "conversations.json"
    export = json.loads(path.read_text("utf-8"))
    node = export[0]["mapping"][export[0]["current_node"]]
    node["message"]["content"] = {"content_type": "hologram_text", "parts": [word]}
    node["message"]["author"] = {"role": "narrator"}
    path.write_text(json.dumps(export), "utf-8")


def _goose_drift(root: Path, word: str) -> None:
    db = sqlite3.connect(root / "sessions.db")
    with db:
        db.execute(
            "insert into messages (message_id, session_id, role, content_json, created_timestamp)"
            " values ('m-drift', '20250724_3', 'assistant', ?, 1784282600)",
            (json.dumps([{"type": "citation", "text": word}]),),
        )
    db.close()


def _hermes_drift(root: Path, word: str) -> None:
    db = sqlite3.connect(root / "state.db")
    with db:
        db.execute(
            "insert into messages (session_id, role, content, timestamp)"
            " values ('01JCH1', 'narrator', ?, 1784282600.0)",
            (word,),
        )
    db.close()


def _copy(sample: Path, where: str) -> Callable[[Path], None]:
    def lay(root: Path) -> None:
        target = root / where
        target.parent.mkdir(parents=True, exist_ok=True)
        if sample.is_dir():
            shutil.copytree(sample, target)
        else:
            shutil.copy(sample, target)

    return lay


def _placed(agent: Agent) -> Callable[[Path], None]:
    return lambda root: place(agent, root)


def _store(build: Callable[[Path], Path], name: str) -> Callable[[Path], None]:
    def lay(root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        build(root / name)

    return lay


QWEN_CHAT = FIXTURES / "qwen" / "agent-sessions" / "019f0000-0000-7000-8000-000000000001.jsonl"
CHATGPT = FIXTURES / "chatgpt-export" / "polylogue-golden-conversations.json"
Shapes = dict[tuple[str, str, str], int]
CASES: dict[str, tuple[str, Callable[[Path], None], Edit, Shapes]] = {
    "kiro": (
        "kiro",
        _placed(KIRO),
        _kiro,
        {("kiro", "record", "Hologram"): 1, ("kiro", "block", "citation"): 1},
    ),
    "kimi": (
        "kimi",
        _placed(KIMI),
        _kimi,
        {("kimi", "record", "hologram.sync"): 1, ("kimi", "block", "quote"): 1},
    ),
    "antigravity": (
        "antigravity",
        _placed(ANTIGRAVITY),
        _antigravity,
        {("antigravity", "record", "HOLOGRAM_NOTE"): 1},
    ),
    "grok": ("grok", _placed(GROK), _grok, {("grok", "record", "hologram"): 1}),
    "amp": ("amp", _placed(AMP), _amp, {("amp", "block", "citation"): 1}),
    "droid": (
        "droid",
        _copy(FIXTURES / "droid" / "agent-sessions-stream_json_large.jsonl", "run.jsonl"),
        _droid,
        {("droid", "record", "hologram"): 1},
    ),
    "qwen": (
        "qwen",
        _copy(QWEN_CHAT, f"chats/{QWEN_CHAT.name}"),
        _qwen,
        {("qwen", "record", "hologram"): 1},
    ),
    "cline": (
        "cline",
        _copy(CLINE_TASK, f"tasks/{CLINE_TASK.name}"),
        _cline,
        {("cline", "block", "citation"): 1},
    ),
    "claude_export": (
        "chat_export",
        _claude_export,
        _claude_export_drift,
        {("chat_export", "block", "hologram_card"): 1},
    ),
    "chatgpt": (
        "chat_export",
        _copy(CHATGPT, "conversations.json"),
        _chatgpt_drift,
        {("chat_export", "block", "hologram_text"): 1, ("chat_export", "record", "narrator"): 1},
    ),
    "goose": (
        "goose",
        _store(goose_store, "sessions.db"),
        _goose_drift,
        {("goose", "block", "citation"): 1},
    ),
    "hermes": (
        "hermes",
        _store(hermes_store, "state.db"),
        _hermes_drift,
        {("hermes", "record", "narrator"): 1},
    ),
}
# Drift that has no words of its own: counted, nothing to find.
WORDLESS = frozenset({"qwen"})


@pytest.mark.parametrize("name", sorted(CASES))
def test_samples_show_no_drift_and_new_types_are_counted(
    name: str, tmp_path: Path, cli: CliRun
) -> None:
    fmt, lay, edit, expected = CASES[name]
    clean, drifted = tmp_path / "clean", tmp_path / "drifted"
    lay(clean)
    lay(drifted)
    assert shapes_of(cli, f"{clean}:{fmt}") == {}  # every sample's types are known
    word = f"{name}zephyrquill"  # a word no sample holds
    assert found(cli, word) == 0
    edit(drifted, word)
    assert shapes_of(cli, f"{drifted}:{fmt}") == expected
    assert found(cli, word) == (1 if name not in WORDLESS else 0), word


def test_every_public_sample_shows_only_its_deliberate_drift(cli: CliRun) -> None:
    """All of ``tests/fixtures`` under one root of no format: the only unknown shapes are
    the two samples written to show drift (a Cursor ``custom_block``, a Codex
    ``future_synthetic_record``), so every other record and block type in them is one
    its reader knows; and a Codex rollout's generic ``tool_call``/``tool_result`` items
    (a shape other tools write) are read as the call and its output."""
    cli("index", "--root", str(FIXTURES), "--json")
    report = as_json(cli("doctor", "catalogs", "--json"))["catalogs"][0]
    shapes = {(s["format"], s["kind"], s["name"]): s["count"] for s in report["unknownShapes"]}
    assert shapes == {
        ("cursor", "block", "custom_block"): 1,
        ("codex", "record", "future_synthetic_record"): 1,
    }
    found = hits(cli, "line1", "--kind", "tool_input", "--kind", "tool_output")
    large = [h for h in found if h["sessionPath"].endswith("codex/agent-sessions-large.jsonl")]
    assert {(h["kind"], h["toolName"]) for h in large} == {
        ("tool_input", "run_shell_command"),
        ("tool_output", "run_shell_command"),
    }
