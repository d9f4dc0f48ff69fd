"""GitHub Copilot Chat in VS Code: `.json` sessions, the `.jsonl` operation log, workspaces."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from convodex.sources.copilot_vscode import FORMAT, uri_path
from convodex.sources.discover import FORMATS
from convodex.sources.roots import vscode_user_dir
from helpers import FIXTURES, hits, kinds, read_all, shown, source_row

SAMPLES = FIXTURES / "copilot-vscode" / "github-copilot-token-usage" / "chatSessions"
USER = FIXTURES / "handwritten" / "copilot-vscode" / "User"
WORKSPACE = USER / "workspaceStorage" / "5f2c0a9e1b7d"
LOG = WORKSPACE / "chatSessions" / "7d3e9b10-5c1f-4e2a-9d7b-0a1b2c3d4e5f.jsonl"
SERIALIZED = WORKSPACE / "chatSessions" / "aa11bb22-0000-4000-8000-0000000000aa.json"


def test_every_fixture_reads_and_loads_the_same() -> None:
    for path in sorted(SAMPLES.glob("*.json")):
        messages = read_all(FORMAT, path)
        assert [m.role for m in messages[:2]] == ["user", "assistant"], path.name
        assert len(messages) % 2 == 0  # the prompt, then the answer, of every request
    first = read_all(FORMAT, SAMPLES / "sample-session-1.json")
    assert shown(first)[0] == "How do I create a React component with TypeScript?"
    info = FORMAT.info(SAMPLES / "sample-session-1.json")
    assert (info.session_id, info.created_at) == ("test-session-001", 1705651200000)
    bare = read_all(FORMAT, SAMPLES / "session-01-today.json")  # only `requests`
    assert kinds(bare) == {"user_text", "assistant_text"}


def test_operation_log_replays_to_the_effective_session() -> None:
    messages = read_all(FORMAT, LOG)
    assert shown(messages) == [
        "why does the quince build fail?",
        "The quince script is missing from package.json.\n"
        'run_in_terminal {"kind":"terminal","commandLine":{"original":"npm run quince"},'
        '"language":"sh"}',
        "add the quince script then",
        "Added `quince` to the scripts.",
    ]  # the edited request replaced the one after it; thinking is never indexed
    assert messages[1].documents[0].kind == "assistant_text"
    assert [m.created_at for m in messages] == [1767000001000] * 2 + [1767000120000] * 2
    info = FORMAT.info(LOG)
    assert (info.title, info.workspace_root) == ("Quince build", "/home/dev/quince app")


def test_tool_invocations_and_results() -> None:
    messages = read_all(FORMAT, SERIALIZED)
    answer = messages[1]
    assert [(d.kind, d.tool_name) for d in answer.documents] == [
        ("assistant_text", None),
        ("tool_input", "copilot_runTests"),
        ("tool_error", "copilot_runTests"),
    ]
    assert "medlar assertion failed" in answer.documents[2].text


@pytest.mark.parametrize(
    ("uri", "path"),
    [("file:///home/dev/my%20app", "/home/dev/my app"), ("vscode-remote://ssh/x", None)],
)
def test_workspace_uris(uri: str, path: str | None) -> None:
    assert uri_path(uri) == (path or uri)  # remote workspaces stay URIs


def test_default_roots_search_and_sources(cli) -> None:  # type: ignore[no-untyped-def]
    user = vscode_user_dir("Code")
    assert user == Path.home() / ".config" / "Code" / "User"
    shutil.copytree(USER, user)
    cli("index", "--json")
    found = hits(cli, "quince script", "--kind", "user_text,assistant_text")
    assert {h["sessionId"] for h in found} == {"7d3e9b10-5c1f-4e2a-9d7b-0a1b2c3d4e5f"}
    assert {h["workspaceRoot"] for h in found} == {"/home/dev/quince app"}
    assert hits(cli, "abandonedpromptword") == hits(cli, "abandonedanswerword") == []
    assert hits(cli, "thinkingonlyword") == []
    assert [h["toolName"] for h in hits(cli, "medlar assertion", "--kind", "tool_error")] == [
        "copilot_runTests"
    ]
    (loquat,) = hits(cli, "loquat", "--kind", "user_text")  # a chat without a folder
    assert (loquat["sourceFormat"], loquat["workspaceRoot"]) == ("copilot_vscode", None)
    assert hits(cli, "notachatword") == []  # other extensions' storage is not walked
    assert source_row(cli, user / "workspaceStorage")["formats"] == {"copilot_vscode": 2}


def test_user_folders_per_os(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    assert vscode_user_dir("Code") == Path.home() / "Library/Application Support/Code/User"
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setenv("APPDATA", str(Path.home() / "Roaming"))
    assert vscode_user_dir("Code - Insiders") == Path.home() / "Roaming/Code - Insiders/User"
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(Path.home() / "cfg"))
    assert vscode_user_dir("VSCodium") == Path.home() / "cfg/VSCodium/User"


def test_agent_name_and_resume_template() -> None:
    assert FORMATS["copilot_vscode"] is FORMAT
    assert FORMAT.resume is None  # VS Code reopens chats from its history, not a shell
