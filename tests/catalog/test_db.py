"""The catalog file (SPEC L8, L3): private, WAL, recorded migrations, tokens only."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from convodex.catalog.db import SCHEMA_VERSION, open_catalog
from convodex.catalog.migrations import MIGRATIONS
from convodex.config import catalog_path
from helpers import CliRun, as_json, write_session

SECRET = "The quick vermilion aardvark whispered passwords to Zanzibar's lighthouse keeper."


def test_catalog_location_modes_and_pragmas(cache_dir: Path) -> None:
    with open_catalog(cache_dir) as catalog:
        db = catalog.db
        assert catalog.path == cache_dir / "history-search" / "v1.sqlite"
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
        assert db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert 0 < db.execute("PRAGMA busy_timeout").fetchone()[0] <= 1000
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        applied = [r[0] for r in db.execute("SELECT name FROM _migrations")]
        assert applied == [fn.__name__ for fn in MIGRATIONS]
        tokenizer = db.execute(
            "SELECT value FROM catalog_meta WHERE key = 'tokenizer_version'"
        ).fetchone()
        assert tokenizer == ("1",)
        db.execute("CREATE TABLE t(x)")  # force a WAL file into existence
    folder = cache_dir / "history-search"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for file in folder.iterdir():
        assert stat.S_IMODE(file.stat().st_mode) == 0o600, file


def test_reopening_does_not_reapply_migrations(cache_dir: Path) -> None:
    open_catalog(cache_dir).close()
    with open_catalog(cache_dir) as catalog:
        count = catalog.db.execute("SELECT count(*) FROM _migrations").fetchone()[0]
    assert count == len(MIGRATIONS)


def test_cache_root_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CONVODEX_CACHE_HOME", str(tmp_path / "env-cache"))
    assert catalog_path() == tmp_path / "env-cache" / "history-search" / "v1.sqlite"
    assert catalog_path(tmp_path / "flag") == tmp_path / "flag" / "history-search" / "v1.sqlite"


def test_catalog_never_contains_message_text(root: Path, cache_dir: Path, cli: CliRun) -> None:
    write_session(
        root,
        "s1",
        [
            {"role": "user", "content": SECRET},
            {"role": "assistant", "content": "数据库迁移失败了 " + SECRET.upper()},
            {"role": "tool", "name": "bash", "content": "error: " + SECRET},
        ],
        {"name": "untitled"},
    )
    as_json(cli("index", "--root", str(root), "--json"))
    hits = as_json(
        cli(
            "search",
            "aardvark",
            "--kind",
            "tool_error",
            "--kind",
            "user_text",
            "--no-group",
            "--json",
        )
    )["hits"]
    assert len(hits) == 2  # indexed and findable...
    blob = b"".join(p.read_bytes() for p in (cache_dir / "history-search").iterdir())
    for needle in (SECRET, SECRET.lower(), "vermilion aardvark", "数据库迁移失败了"):
        assert needle.encode() not in blob  # ...yet no sentence is in the catalog


def test_an_older_projection_is_wiped_and_rebuilt(root: Path, cache_dir: Path) -> None:
    """A catalog written by another projection version finds nothing of it (its rows
    are gone, not reinterpreted) until the next index reads every source again."""
    from convodex.catalog.indexer import Indexer
    from convodex.catalog.plan import SearchRequest
    from convodex.catalog.search import Searcher

    write_session(root, "s1", [{"role": "user", "content": "rotate the zanzibar keys"}])
    with open_catalog(cache_dir) as catalog:
        Indexer(catalog).run([root])
        assert Searcher(catalog).search(SearchRequest(query="zanzibar")).hits
        with catalog.db:
            catalog.db.execute(
                "UPDATE catalog_meta SET value = '1' WHERE key = 'projection_version'"
            )
    with open_catalog(cache_dir) as catalog:
        db = catalog.db
        assert not Searcher(catalog).search(SearchRequest(query="zanzibar")).hits
        assert db.execute("SELECT count(*) FROM messages").fetchone() == (0,)
        assert db.execute("SELECT pending, byte_offset FROM sources").fetchall() == [(1, 0)]
        stats = Indexer(catalog).run([root])
        assert stats.rebuilt == 1
        hits = Searcher(catalog).search(SearchRequest(query="zanzibar")).hits
        assert [h.session_id for h in hits] == ["s1"]
