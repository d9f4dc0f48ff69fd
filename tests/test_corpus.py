"""The project's corpus generator (bench/corpus.py) writes what the real readers accept.

Benchmarks trust its planted words to measure recall; these tests check, for every
format, through the real CLI, that each planted word is found in its own session and
nowhere else, that sub-agents stay out of default searches, that rewound branches are on
disk yet unsearchable, and that output is reproducible. Each corpus is written as a home
directory and indexed from convodex's default roots, so every writer's layout is also the
one the agent's default-root detection expects.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

import corpus
from helpers import as_json, tree_hashes

CliRun = Callable[..., Result]  # the ``cli`` fixture (tests/conftest.py)
ALL_KINDS = ("--kind", "user_text,assistant_text,tool_input,tool_output,tool_error")
WITH_SUBAGENTS = {
    "native",
    "claude-code",
    "codex",
    "gemini",
    "qwen",
    "copilot-cli",
    "cline",
    "opencode",
    "opencode-db",
    "cursor",
}
WITH_BRANCHES = {
    "claude-code",
    "codex",
    "gemini",
    "chatgpt",
    "dag",
    "qwen",
    "copilot-vscode",
    "droid",
    "pi",
    "opencode",
    "opencode-db",
    "cursor-ide",
}
# Readers that report a session's workspace (the others' formats do not record it, or
# keep it where these layouts do not write it: Roo Code's and Kilo Code's task index is
# editor state, and OpenCode's database, the Cursor editor's and chat exports hold many
# sessions in one source).
WITH_WORKSPACE = {
    "native",
    "claude-code",
    "codex",
    "qwen",
    "copilot-cli",
    "copilot-vscode",
    "droid",
    "pi",
    "cline",
    "cline-vscode",
    "opencode",
    "cursor-store",
    "aider",
}


def search(cli: CliRun, query: str, *options: str) -> list[dict[str, Any]]:
    """Every hit, page after page."""
    hits: list[dict[str, Any]] = []
    cursor: list[str] = []
    while True:
        page = as_json(cli("search", query, "--json", "--limit", "200", *options, *cursor))
        hits += page["hits"]
        if not page["nextCursor"]:
            return hits
        cursor = ["--cursor", page["nextCursor"]]


def on_disk(root: Path) -> bytes:
    """Every byte written under ``root``; a SQLite database as its SQL dump (a word in a
    row may straddle two of its pages)."""
    found = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        data = path.read_bytes()
        if data.startswith(b"SQLite format 3\x00"):
            db = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
            data = "\n".join(db.iterdump()).encode("utf-8")
            db.close()
        found.append(data)
    return b"\n".join(found)


@pytest.fixture
def indexed(
    request: pytest.FixtureRequest, cli: CliRun, monkeypatch: pytest.MonkeyPatch
) -> corpus.Manifest:
    """A corpus of one format written as the home directory (``$CONVODEX_HOME`` too, for
    convodex's own sessions and exports), indexed from the default roots."""
    fmt: str = request.param
    home = Path.home()
    monkeypatch.setenv("CONVODEX_HOME", str(home))
    manifest = corpus.generate(home, mb=1, seed=3, formats=fmt)
    roots = [] if corpus.WRITERS[fmt].home_layout else ["--root", str(manifest.root(fmt))]
    stats = as_json(cli("index", *roots, "--json"))["stats"]
    assert stats["failed"] == 0 and stats["lineErrors"] == 0
    assert stats["indexed"] > 0
    return manifest


@pytest.mark.parametrize("indexed", sorted(corpus.WRITERS), indirect=True)
def test_each_planted_word_is_found_once_in_its_own_session(
    indexed: corpus.Manifest, cli: CliRun
) -> None:
    fmt = indexed.formats[0]
    main = indexed.main_sessions()
    subagents = [p for p in indexed.sessions if p.subagent]
    assert len(main) >= 8
    assert bool(subagents) == (fmt in WITH_SUBAGENTS)
    for planted in main:
        hits = search(cli, planted.marker)
        assert [(h["sessionId"], h["kind"]) for h in hits] == [(planted.session_id, "user_text")]
        if fmt in WITH_WORKSPACE:
            assert hits[0]["workspaceRoot"] == planted.workspace
    for planted in subagents:
        assert search(cli, planted.marker) == []  # sub-agents are left out by default
        hits = search(cli, planted.marker, "--include-subagents")
        assert [h["sessionId"] for h in hits] == [planted.session_id]


@pytest.mark.parametrize("indexed", sorted(corpus.WRITERS), indirect=True)
def test_rewound_branches_are_in_the_files_but_never_found(
    indexed: corpus.Manifest, cli: CliRun
) -> None:
    fmt = indexed.formats[0]
    rewound = [p for p in indexed.sessions if p.rewound]
    assert bool(rewound) == (fmt in WITH_BRANCHES)
    written = on_disk(indexed.root(fmt))
    for planted in rewound:
        assert planted.rewound is not None
        assert planted.rewound.encode() in written
        assert search(cli, planted.rewound, *ALL_KINDS, "--include-subagents") == []


@pytest.mark.parametrize("indexed", sorted(corpus.WRITERS), indirect=True)
def test_common_words_cjk_tool_calls_and_errors_are_searchable(
    indexed: corpus.Manifest, cli: CliRun
) -> None:
    main = {p.session_id for p in indexed.main_sessions()}
    first_prompts = search(cli, "the", "--kind", "user_text")
    assert {h["sessionId"] for h in first_prompts} == main
    migration = {p.session_id for p in indexed.sessions if p.cjk_migration}
    assert migration and {h["sessionId"] for h in search(cli, "迁移")} == migration
    assert search(cli, "error", "--kind", "tool_error")
    assert search(cli, "src", "--kind", "tool_input")


def test_every_format_in_one_home_is_found_under_its_own_agent(
    cli: CliRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    """All writers in one home directory (OpenCode's tree beside its database, Cursor's
    transcripts beside its chat stores …): each main session is found by its marker, in
    its own session, under its own agent, and ``--agent`` narrows to it."""
    home = Path.home()
    monkeypatch.setenv("CONVODEX_HOME", str(home))
    manifest = corpus.generate(home, mb=6, seed=8, formats="all")
    config = home / ".config" / "convodex" / "config.toml"
    roots = [f"~/{w.subdir}" for w in corpus.WRITERS.values() if not w.home_layout]
    config.write_text(config.read_text("utf-8").replace("]", f', "{roots[0]}"]'), "utf-8")
    assert len(roots) == 1  # the legacy DAG log, which has no place of its own
    stats = as_json(cli("index", "--json"))["stats"]
    assert stats["failed"] == 0 and stats["lineErrors"] == 0
    main = manifest.main_sessions()
    assert {p.format for p in main} == set(corpus.WRITERS)
    for planted in main:
        agent = corpus.WRITERS[planted.format].agent
        hits = search(cli, planted.marker)
        found = [(h["sessionId"], h["kind"], h["sourceFormat"]) for h in hits]
        assert found == [(planted.session_id, "user_text", agent)], planted.format
        assert search(cli, planted.marker, "--agent", agent) == hits
        others = next(w.agent for w in corpus.WRITERS.values() if w.agent != agent)
        assert search(cli, planted.marker, "--agent", others) == []


def test_sessions_spread_over_months_with_a_time_on_every_message() -> None:
    stream = corpus.sessions(seed=4)
    drawn = [next(stream) for _ in range(30)]
    starts = [s.created for s in drawn]
    assert max(starts) - min(starts) > 60 * 86_400_000
    for session in drawn:
        times = [m.at for m in session.messages]
        assert times == sorted(times) and len(set(times)) == len(times)
        assert session.created < times[0]
    assert len({s.workspace.cwd for s in drawn}) >= 4


def relative(hashes: dict[str, str], root: Path) -> dict[str, str]:
    return {str(Path(path).relative_to(root)): digest for path, digest in hashes.items()}


@pytest.mark.parametrize("fmt", sorted(corpus.WRITERS))
def test_each_writer_gives_the_same_bytes_for_the_same_seed(fmt: str, tmp_path: Path) -> None:
    one = corpus.generate(tmp_path / "one", mb=0.3, seed=5, formats=fmt)
    two = corpus.generate(tmp_path / "two", mb=0.3, seed=5, formats=fmt)
    assert one.sessions and one.bytes >= 0.3 * 1024 * 1024
    assert relative(tree_hashes(one.path), one.path) == relative(tree_hashes(two.path), two.path)
    assert [p.marker for p in one.sessions] == [p.marker for p in two.sessions]


def test_same_seed_same_bytes_other_seed_other_sessions(tmp_path: Path) -> None:
    one = corpus.generate(tmp_path / "one", mb=0.5, seed=9, formats="all")
    two = corpus.generate(tmp_path / "two", mb=0.5, seed=9, formats="all")
    other = corpus.generate(tmp_path / "other", mb=0.5, seed=10, formats="all")
    assert relative(tree_hashes(one.path), one.path) == relative(tree_hashes(two.path), two.path)
    assert {p.session_id for p in one.sessions}.isdisjoint(p.session_id for p in other.sessions)
    assert set(one.roots) == set(corpus.WRITERS)
    assert one.bytes >= 0.5 * 1024 * 1024


def test_the_cli_writes_a_corpus_and_refuses_a_non_empty_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert corpus.main([str(out), "--mb", "0.2", "--format", "codex,gemini"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["sessions"] > 0 and set(summary["roots"]) == {"codex", "gemini"}
    assert corpus.main([str(out), "--mb", "0.2"]) == 2
    assert "not empty" in capsys.readouterr().err
    assert corpus.main([str(tmp_path / "x"), "--format", "goose"]) == 2
    assert "unknown corpus format" in capsys.readouterr().err
