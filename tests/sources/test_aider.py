"""Aider: chat histories split into runs, prompts dated by the prompt log, and the
three ways histories are found (workspace directories, ``--root DIR:aider``, the
config file's ``roots``)."""

from __future__ import annotations

import shutil
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from convodex.sources import aider
from convodex.sources.base import SourceMessage
from convodex.sources.discover import scan, workspace_roots
from helpers import FIXTURES, CliRun, as_json, read_all, tree_hashes

HANDWRITTEN = FIXTURES / "handwritten" / "aider" / "project"


def local_ms(text: str) -> int:
    return int(datetime.fromisoformat(text).timestamp() * 1000)


def docs(messages: list[SourceMessage]) -> list[tuple[str, str | None, str]]:
    return [(d.kind, d.tool_name, d.text) for m in messages for d in m.documents]


def test_upstream_excerpt_runs_prompts_edits_and_commits() -> None:
    messages = read_all(aider.FORMAT, FIXTURES / "aider" / "aider-chat-history-excerpt.md")
    runs = list(dict.fromkeys(m.session_id for m in messages))
    assert len(runs) == 10  # 16 runs, 6 of them closed before anything was said
    assert runs[0] is not None and runs[0].startswith("aider-20240806T100358-")
    first = [m for m in messages if m.session_id == runs[0]]
    assert first[0].title is not None and first[0].title.startswith("if `/add` find that no")
    assert [m.role for m in first][:4] == ["tool", "user", "assistant", "tool"]
    found = docs(messages)
    assert ("user_text", None, "/undo") in found
    edits = [text for kind, tool, text in found if tool == "edit"]
    assert edits[0].startswith("edit aider/commands.py\n<<<<<<< SEARCH")
    assert edits[0].endswith(">>>>>>> REPLACE")
    assert not any("<<<<<<< SEARCH" in text for kind, _, text in found if kind == "assistant_text")
    assert (
        "tool_input",
        "git",
        "git commit e8cb43f feat: Add existing untracked files to git and the chat",
    ) in found
    errors = [text for kind, _, text in found if kind == "tool_error"]
    assert any("litellm.InternalServerError" in text for text in errors)
    assert {m.created_at for m in first} == {local_ms("2024-08-06 10:03:58")}


def test_minimal_history_with_its_prompt_log() -> None:
    path = FIXTURES / "aider" / "0latency-cli" / ".aider.chat.history.md"
    messages = read_all(aider.FORMAT, path)
    assert [m.role for m in messages] == ["tool"]
    assert [d.kind for d in messages[0].documents] == ["tool_output"]
    assert messages[0].title is None  # no prompt: the run has no title
    assert messages[0].created_at == local_ms("2026-05-09 06:38:37")
    assert aider.FORMAT.info(path).workspace_root == str(path.parent)


def test_handwritten_history_dates_prompts_and_reads_outputs() -> None:
    messages = read_all(aider.FORMAT, HANDWRITTEN / aider.HISTORY)
    one, two = list(dict.fromkeys(m.session_id for m in messages))
    assert [m.title for m in messages if m.session_id == two][0] == "what does the tapir module do?"
    assert docs([m for m in messages if m.session_id == one]) == [
        (
            "tool_output",
            "aider",
            "aider /home/user/.local/bin/aider greet.py\nAider v0.80.0\n"
            "Added greet.py to the chat.",
        ),
        ("user_text", None, "make the greeting mention a wombat"),
        ("assistant_text", None, "I will change the greeting so it mentions a wombat."),
        (
            "tool_input",
            "edit",
            'edit greet.py\n<<<<<<< SEARCH\nprint("hello")\n=======\nprint("hello, wombat")\n'
            ">>>>>>> REPLACE",
        ),
        (
            "tool_output",
            "aider",
            "aider Tokens: 2.1k sent, 120 received.\nApplied edit to greet.py",
        ),
        ("tool_input", "git", "git commit 1a2b3c4 feat: Greet the wombat"),
        ("user_text", None, "/run python greet.py"),
        ("tool_error", "aider", "aider Error: python: command not found"),
    ]
    times = [(m.role, m.created_at) for m in messages]
    assert times[:4] == [
        ("tool", local_ms("2025-03-01 09:15:02")),  # the run's start
        ("user", local_ms("2025-03-01 09:15:20.123456")),  # typed, per the prompt log
        ("assistant", local_ms("2025-03-01 09:15:20.123456")),  # the prompt it answers
        ("tool", local_ms("2025-03-01 09:15:20.123456")),
    ]
    assert (messages[-2].role, messages[-2].created_at) == ("user", local_ms("2025-03-02 18:42:30"))


def project(tmp_path: Path, name: str) -> Path:
    """A project directory holding the hand-written history and prompt log."""
    directory = tmp_path / name
    shutil.copytree(HANDWRITTEN, directory)
    return directory


def test_workspace_directories_are_shallow_aider_roots(tmp_path: Path) -> None:
    home = project(tmp_path, "home")
    nested = project(home, "src/app")
    plain = tmp_path / "plain"
    plain.mkdir()
    roots = workspace_roots([home, plain, str(home), nested])
    assert roots == [home.resolve(), nested.resolve()]
    # The home directory's own history only: a workspace is not searched below.
    assert [d.path for d in scan(roots[0])] == [(home / aider.HISTORY).resolve()]
    assert [d.format for d in scan(roots[1])] == ["aider"]


def test_root_of_projects_end_to_end(tmp_path: Path, cli: CliRun) -> None:
    src = tmp_path / "src"
    app = project(src, "app")
    project(src / "app" / "node_modules", "dep")  # never a project of its own
    before = tree_hashes(src)
    out = as_json(cli("index", "--root", f"{src}:aider", "--json"))
    assert out["stats"]["indexed"] == 1 and out["stats"]["failed"] == 0

    def hits(query: str) -> list[dict[str, Any]]:
        return list(as_json(cli("search", query, "--json"))["hits"])

    (found,) = hits("tapir")
    assert (found["sourceFormat"], found["kind"], found["workspaceRoot"]) == (
        "aider",
        "user_text",
        str(app.resolve()),
    )
    assert found["sessionId"].startswith("aider-20250302T184011-")
    assert found["sessionTitle"] == "what does the tapir module do?"
    assert [h["toolName"] for h in hits("1a2b3c4")] == ["git"]
    assert tree_hashes(src) == before
    history = app / aider.HISTORY
    with open(history, "a", encoding="utf-8") as handle:
        handle.write(
            "\n# aider chat started at 2025-03-03 08:00:00\n\n#### ask about the quetzal\n"
        )
    as_json(cli("index", "--root", f"{src}:aider", "--json"))
    assert [h["sessionId"][:21] for h in hits("quetzal")] == ["aider-20250303T080000"]


@pytest.fixture
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    (tmp_path / "config" / "convodex").mkdir(parents=True)
    return tmp_path / "config" / "convodex"


def test_config_file_roots(tmp_path: Path, config_home: Path, cli: CliRun) -> None:
    src = tmp_path / "src"
    project(src, "app")
    (config_home / "config.toml").write_text(f'roots = ["{src}:aider"]\n\n[resume]\n')
    listed = as_json(cli("sources", "--json", cache=False))
    (row,) = [r for r in listed["roots"] if r["path"] == str(src.resolve())]
    assert (row["format"], row["formats"]) == ("aider", {"aider": 1})
    as_json(cli("index", "--json"))
    assert len(as_json(cli("search", "wombat", "--json"))["hits"]) >= 1


def test_malformed_config_file_is_one_clear_line(config_home: Path, cli: CliRun) -> None:
    (config_home / "config.toml").write_text("roots = [oops\n")
    result = cli("sources", "--json", cache=False)
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and "config.toml" in result.stderr
    (config_home / "config.toml").write_text("roots = 'one/path'\n")
    result = cli("sources", "--json", cache=False)
    assert result.exit_code == 1 and "roots must be a list" in result.stderr


def test_a_workspace_another_agents_session_names_is_indexed(tmp_path: Path, cli: CliRun) -> None:
    """`convodex index` with no root: a Claude Code session ran in a project that holds
    an Aider history, so that history is indexed too (its directory only)."""
    app = project(tmp_path, "app")
    project(app, "vendored")  # below the workspace: not scanned
    session = FIXTURES / "claude-code" / "sessions-chronicle" / "claude_sessions"
    text = (session / "sample-session.jsonl").read_text("utf-8")
    target = Path.home() / ".claude" / "projects" / "-app" / "sample-session.jsonl"
    target.parent.mkdir(parents=True)
    target.write_text(text.replace("/home/user/project", str(app.resolve())), "utf-8")
    out = as_json(cli("index", "--json"))
    assert out["stats"]["failed"] == 0
    found = as_json(cli("search", "tapir", "--json"))["hits"]
    assert [(h["sourceFormat"], h["workspaceRoot"]) for h in found] == [
        ("aider", str(app.resolve()))
    ]


def test_prompts_only_the_prompt_log_holds_are_a_session() -> None:
    """The real minimal pair: `exit` was typed but never reached the chat history."""
    log = FIXTURES / "aider" / "0latency-cli" / aider.INPUT_HISTORY
    assert aider.FORMAT.claims(log, True)
    (message,) = read_all(aider.FORMAT, log)
    assert (message.role, message.text(), message.created_at) == (
        "user",
        "exit",
        local_ms("2026-05-09 06:38:37.579907"),
    )
    assert message.session_id == aider.FORMAT.info(log).session_id
    # Every prompt of the hand-written log is in its history: nothing of its own.
    assert not aider.FORMAT.claims(HANDWRITTEN / aider.INPUT_HISTORY, True)


def test_a_lost_history_leaves_its_prompts_searchable(tmp_path: Path, cli: CliRun) -> None:
    app = project(tmp_path / "src", "app")
    (app / aider.HISTORY).unlink()  # cleared, or never written
    out = as_json(cli("index", "--root", f"{tmp_path / 'src'}:aider", "--json"))
    assert out["stats"]["indexed"] == 1
    found = as_json(cli("search", "tapir", "--json"))["hits"]
    assert [(h["kind"], h["sessionTitle"]) for h in found] == [
        ("user_text", "make the greeting mention a wombat")
    ]


def test_two_runs_at_once_leave_no_prompt_to_the_prompt_log(tmp_path: Path) -> None:
    """Two aider runs in one folder at once: the prompt log interleaves their prompts,
    the history holds one run after the other. Every prompt is dated from the log and
    none is taken for a prompt only the log holds."""
    history = (
        "\n# aider chat started at 2026-05-09 06:00:00\n\n"
        "#### first run asks about otters  \n\n"
        "#### first run asks about herons  \n\n"
        "\n# aider chat started at 2026-05-09 06:05:00\n\n"
        "#### second run asks about badgers  \n\n"
    )
    log = "".join(
        f"\n# {stamp}\n+{text}\n"
        for stamp, text in [
            ("2026-05-09 06:00:10.000000", "first run asks about otters"),
            ("2026-05-09 06:05:10.000000", "second run asks about badgers"),
            ("2026-05-09 06:09:10.000000", "first run asks about herons"),
        ]
    )
    (tmp_path / aider.HISTORY).write_text(history)
    (tmp_path / aider.INPUT_HISTORY).write_text(log)
    assert not aider.FORMAT.claims(tmp_path / aider.INPUT_HISTORY, True)
    dated = {m.text(): m.created_at for m in read_all(aider.FORMAT, tmp_path / aider.HISTORY)}
    assert dated == {
        "first run asks about otters": local_ms("2026-05-09 06:00:10"),
        "first run asks about herons": local_ms("2026-05-09 06:09:10"),
        "second run asks about badgers": local_ms("2026-05-09 06:05:10"),
    }
