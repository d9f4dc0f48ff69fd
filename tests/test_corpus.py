"""The project's corpus generator (bench/corpus.py) writes what the real readers accept.

Benchmarks trust its planted words to measure recall; these tests check, for every
format, through the real CLI, that each planted word is found in its own session and
nowhere else, that rewound branches stay unsearchable, and that output is reproducible.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

import corpus
from helpers import as_json, tree_hashes

CliRun = Callable[..., Result]  # the ``cli`` fixture (tests/conftest.py)
ALL_KINDS = ("--kind", "user_text,assistant_text,tool_input,tool_output,tool_error")
WITH_SUBAGENTS = {"native", "claude-code", "codex", "gemini"}
WITH_BRANCHES = {"claude-code", "codex", "gemini", "chatgpt", "dag"}
# Readers that report a session's workspace (the others' formats do not record it).
WITH_WORKSPACE = {"native", "claude-code", "codex"}


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


@pytest.fixture
def indexed(request: pytest.FixtureRequest, tmp_path: Path, cli: CliRun) -> corpus.Manifest:
    fmt: str = request.param
    manifest = corpus.generate(tmp_path / "corpus", mb=1, seed=3, formats=fmt)
    stats = as_json(cli("index", "--root", str(manifest.root(fmt)), "--json"))["stats"]
    assert stats["failed"] == 0 and stats["lineErrors"] == 0
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
    for planted in rewound:
        assert planted.rewound is not None
        assert planted.rewound in (indexed.path / planted.path).read_text("utf-8")
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


def test_same_seed_same_bytes_other_seed_other_sessions(tmp_path: Path) -> None:
    one = corpus.generate(tmp_path / "one", mb=0.5, seed=9, formats="all")
    two = corpus.generate(tmp_path / "two", mb=0.5, seed=9, formats="all")
    other = corpus.generate(tmp_path / "other", mb=0.5, seed=10, formats="all")
    strip = len(str(tmp_path)) + 4

    def relative(hashes: dict[str, str]) -> dict[str, str]:
        return {path[strip:]: digest for path, digest in hashes.items()}

    assert relative(tree_hashes(one.path)) == relative(tree_hashes(two.path))
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
    assert corpus.main([str(tmp_path / "x"), "--format", "opencode"]) == 2
    assert "unknown corpus format" in capsys.readouterr().err
