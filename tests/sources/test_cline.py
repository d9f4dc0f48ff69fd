"""Cline CLI/SDK sessions, and the Cline, Roo Code and Kilo Code extension task folders."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from convodex.sources import cline
from convodex.sources.base import SourceFormat
from convodex.sources.discover import FORMATS, detect
from convodex.sources.roots import vscode_user_dir
from helpers import FIXTURES, as_json, hits, kinds, read_all, shown, source_row

SDK = FIXTURES / "cline" / "cline-sdk"
HANDWRITTEN = FIXTURES / "handwritten"
EXTENSIONS = HANDWRITTEN / "cline-extensions" / "globalStorage"
CLINE_TASK = EXTENSIONS / "saoudrizwan.claude-dev" / "tasks" / "1767225600000"
ROO_TASK = (
    EXTENSIONS / "rooveterinaryinc.roo-cline" / "tasks" / "0195f0e2-7c1d-7a6b-9e33-3c5d6e7f8a9b"
)
SDK_ID = "1784094124598_rruoq"


def test_every_sdk_fixture_reads_and_loads_the_same() -> None:
    for path in sorted(SDK.glob("*.json")):
        if path.name != "session.json":  # the manifest: a sidecar, not a transcript
            assert read_all(cline.FORMAT, path), path.name
    session = read_all(cline.FORMAT, SDK / "session.messages.json")
    assert kinds(session) == {"user_text", "assistant_text", "tool_input", "tool_output"}
    named = {d.tool_name for m in session for d in m.documents if d.kind == "tool_output"}
    assert named == {"editor", "read_files", "run_commands"}
    success = read_all(cline.FORMAT, SDK / "success.messages.json")
    assert "I should read the README first" not in " ".join(shown(success))  # thinking


def test_sdk_compaction_keeps_words_on_disk_and_drops_summaries() -> None:
    basic = shown(read_all(cline.FORMAT, SDK / "basic.compaction.json"))
    assert basic[0].startswith("can you update @apps/examples")  # the kept prompt
    assert not any("SYSTEM_NOTICE" in t or "Earlier context was compacted" in t for t in basic)
    agentic = read_all(cline.FORMAT, SDK / "agentic.compaction.json")
    assert agentic[0].documents == []  # `compaction_summary`: a summary, not user text
    assert shown(agentic) == ["hello", "Hello! How can I assist you today?"]


def test_sdk_manifest_gives_the_session_its_fork_title_and_workspace(tmp_path: Path) -> None:
    folder = tmp_path / SDK_ID
    folder.mkdir()
    shutil.copy(SDK / "session.json", folder / f"{SDK_ID}.json")
    shutil.copy(SDK / "session.messages.json", folder / f"{SDK_ID}.messages.json")
    info = cline.FORMAT.info(folder / f"{SDK_ID}.messages.json")
    assert (info.session_id, info.parent_id) == (SDK_ID, "1784094053271_p8pzo")  # a fork
    assert info.workspace_root == "/Users/example/dev/cline"
    assert info.title is not None and info.title.endswith("(fork)")
    assert not info.subagent


def test_extension_tasks_tools_and_errors() -> None:
    messages = read_all(cline.FORMAT, CLINE_TASK / "api_conversation_history.json")
    texts = " ".join(shown(messages))
    assert "envonlyword" not in texts and "thinkingonlyword" not in texts  # context, thinking
    assert shown(messages)[0] == "rename the persimmon module to fruit"  # <task> unwrapped
    documents = [(d.kind, d.tool_name) for m in messages for d in m.documents]
    assert ("tool_input", "read_file") in documents  # an XML-era call inside the text
    assert ("tool_output", "read_file") in documents  # its result, sent back as text
    assert ("tool_error", "execute_command") in documents
    assert shown(messages)[-1] == "Renamed persimmon to fruit by hand."  # attempt_completion
    roo = read_all(FORMATS["roo_code"], ROO_TASK / "api_conversation_history.json")
    assert kinds(roo) == {"user_text", "assistant_text", "tool_input", "tool_output"}
    assert "42 tamarind.csv" in roo[2].text()


def test_extension_task_info_from_the_task_index() -> None:
    info = cline.FORMAT.info(CLINE_TASK / "api_conversation_history.json")
    assert (info.session_id, info.title) == (
        "1767225600000",
        "rename the persimmon module to fruit",
    )
    assert (info.workspace_root, info.created_at) == ("/home/dev/orchard", 1767225600000)


@pytest.mark.parametrize(
    ("task", "agent"),
    [
        (CLINE_TASK, "cline"),
        (ROO_TASK, "roo_code"),
        (EXTENSIONS / "kilocode.kilo-code" / "tasks" / "1767398400000", "kilo_code"),
    ],
)
def test_each_extension_is_its_own_agent(task: Path, agent: str) -> None:
    path = task / "api_conversation_history.json"
    assert detect(path, path.stat().st_ino, None) == agent  # by the extension's folder
    fmt: SourceFormat = FORMATS[agent]
    assert fmt.name == agent and fmt.resume is None  # reopened from the History view


def test_default_roots_search_sub_agents_and_sources(cli) -> None:  # type: ignore[no-untyped-def]
    home = Path.home()
    sessions = home / ".cline" / "data" / "sessions"
    (sessions / SDK_ID).mkdir(parents=True)
    shutil.copy(SDK / "session.json", sessions / SDK_ID / f"{SDK_ID}.json")
    shutil.copy(SDK / "session.messages.json", sessions / SDK_ID / f"{SDK_ID}.messages.json")
    shutil.copytree(HANDWRITTEN / "cline-cli" / "sessions", sessions, dirs_exist_ok=True)
    code = vscode_user_dir("Code") / "globalStorage"
    shutil.copytree(EXTENSIONS, code)
    cursor = vscode_user_dir("Cursor") / "globalStorage"
    shutil.copytree(EXTENSIONS / "kilocode.kilo-code", cursor / "kilocode.kilo-code")
    cli("index", "--json")
    assert {h["sessionId"] for h in hits(cli, "ThreadSection", "--kind", "assistant_text")} == {
        SDK_ID
    }
    assert [h["sourceFormat"] for h in hits(cli, "persimmon module", "--kind", "user_text")] == [
        "cline"
    ]
    assert [h["sourceFormat"] for h in hits(cli, "tamarind rows", "--kind", "user_text")] == [
        "roo_code"
    ]
    jackfruit = hits(cli, "jackfruit report", "--kind", "user_text")
    assert sorted(h["sourceFormat"] for h in jackfruit) == ["kilo_code", "kilo_code"]
    assert hits(cli, "not under version control", "--kind", "tool_error")
    assert hits(cli, "teammateonlyword") == []  # a spawned teammate: only on request
    assert len(hits(cli, "teammateonlyword", "--include-subagents")) == 1
    assert source_row(cli, home / ".cline" / "data")["formats"] == {"cline": 2}
    assert source_row(cli, code / "rooveterinaryinc.roo-cline")["formats"] == {"roo_code": 1}
    assert source_row(cli, cursor / "kilocode.kilo-code")["format"] == "kilo_code"
    listed = as_json(cli("sources", "--json", cache=False))["roots"]
    assert not any("Code - Insiders" in r["path"] for r in listed)  # not installed: not listed


def test_agent_names_and_resume_templates() -> None:
    assert FORMATS["cline"] is cline.FORMAT
    assert [FORMATS[n].resume for n in ("cline", "roo_code", "kilo_code")] == [None] * 3
