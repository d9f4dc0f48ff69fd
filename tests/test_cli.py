"""The real ``convodex`` command: bad input fails in one line, originals stay untouched."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import CliRun, as_json, tree_hashes, write_session

SESSION = [
    {"role": "user", "content": "how do I rotate the signing keys?"},
    {
        "role": "assistant",
        "content": "Use the rotate command.",
        "tool_calls": [{"id": "c1", "name": "bash", "arguments": '{"cmd": "keys rotate"}'}],
    },
    {"role": "tool", "tool_call_id": "c1", "name": "bash", "content": "rotated 3 keys"},
]


def run_cli(*args: str, env_home: Path) -> subprocess.CompletedProcess[str]:
    env = dict(
        os.environ,
        CONVODEX_HOME=str(env_home / "home"),
        CONVODEX_CACHE_HOME=str(env_home / "cache"),
    )
    return subprocess.run(
        [sys.executable, "-m", "convodex", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["search", "?? !!"], "query must contain at least one letter or number"),
        (["search", "keys", "--kind", "bogus"], "unknown kind"),
        (["search", "keys", "--cursor", "garbage!"], "invalid cursor"),
        (["search", "keys", "--limit", "500"], "limit must be between 1 and 200"),
        (["search", "keys", "--root", "/definitely/not/here"], "root is not a directory"),
        (["index", "--root", "/definitely/not/here"], "root is not a directory"),
    ],
)
def test_bad_input_is_one_line_without_traceback(
    tmp_path: Path, args: list[str], message: str
) -> None:
    proc = run_cli(*args, env_home=tmp_path)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_version_is_the_installed_distribution_s(tmp_path: Path) -> None:
    from importlib.metadata import version

    proc = run_cli("--version", env_home=tmp_path)
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"convodex, version {version('convodex')}"


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    # (``search`` alone lists recent sessions: a query without words browses.)
    proc = run_cli("search", "--sort", "sideways", env_home=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_originals_untouched_by_index_search_and_rebuild(root: Path, cli: CliRun) -> None:
    write_session(root, "s1", SESSION, {"name": "keys"})
    write_session(root, "s2", SESSION, subdir="subagents")
    (root / "s1.events.jsonl").write_text('{"type":"append"}\n')
    before = tree_hashes(root)
    mtimes = {str(p): p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}
    as_json(cli("index", "--root", str(root), "--json"))
    as_json(cli("search", "rotate", "--around", "2", "--json"))
    # A rewrite elsewhere forces a rebuild of that source; the others are only read.
    write_session(root, "s3", SESSION)
    before["s3"] = ""
    as_json(cli("index", "--root", str(root), "--json"))
    as_json(cli("search", "keys", "--kind", "tool_output", "--json"))
    after = tree_hashes(root)
    for path, digest in before.items():
        if path != "s3":
            assert after[path] == digest, path
    for name, mtime in mtimes.items():
        assert Path(name).stat().st_mtime_ns == mtime


def test_human_output_says_when_the_index_is_incomplete(root: Path, cli: CliRun) -> None:
    write_session(root, "s1", SESSION)
    out = cli("search", "rotate")
    assert out.exit_code == 0 and "the index is empty" in out.stderr
    cli("index", "--root", str(root))
    out = cli("search", "rotate")
    assert out.exit_code == 0 and "rotate" in out.stdout and out.stderr == ""


def test_index_defaults_to_convodex_own_sessions(tmp_path: Path, cli: CliRun) -> None:
    own = tmp_path / "home" / "sessions"  # CONVODEX_HOME is tmp_path/home in tests
    write_session(own, "mine", SESSION)
    out = as_json(cli("index", "--json"))
    assert out["roots"][0] == str(own) and out["stats"]["indexed"] == 1


def test_demo_uses_the_bundled_corpus_when_there_are_no_sessions(cli: CliRun) -> None:
    out = cli("demo")
    assert out.exit_code == 0, out.output
    assert "bundled demo corpus" in out.stdout and "no hits" not in out.stdout


# What a search must not import: readers of agents it has no hits from, detection
# (which needs them all), and modules only other commands use. Each was measured as
# milliseconds of every search's start-up.
NOT_FOR_A_SEARCH = (
    "convodex.sources.discover",
    "convodex.sources.aider",
    "convodex.sources.claude_code",
    "convodex.sources.cline",
    "convodex.sources.opencode",
    "convodex.sources.cursor_ide",
    "convodex.catalog.indexer",
    "convodex.web",
    "convodex.server",
    "concurrent.futures",
    "tomllib",
)


def test_a_search_imports_only_what_it_reads(root: Path, cache_dir: Path, cli: CliRun) -> None:
    write_session(root, "s1", SESSION, {"name": "keys"})
    as_json(cli("index", "--root", str(root), "--json"))
    report = (
        "import atexit, runpy, sys\n"
        "atexit.register(lambda: print('MODULES', *sorted(sys.modules)))\n"
        f"sys.argv = ['convodex', 'search', 'rotate', '--root', {str(root)!r}, "
        f"'--cache-dir', {str(cache_dir)!r}]\n"
        "runpy.run_module('convodex', run_name='__main__')\n"
    )
    env = dict(os.environ, CONVODEX_SEARCH_SHARES="1")
    proc = subprocess.run(
        [sys.executable, "-c", report], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert "rotate" in proc.stdout  # a real hit, read from its file
    loaded = set(proc.stdout.rpartition("MODULES ")[2].split())
    assert "convodex.sources.session_log" in loaded  # the reader of the hit's session
    unwanted = sorted(m for m in loaded if m.startswith(NOT_FOR_A_SEARCH))
    assert unwanted == []
