"""The catalog open policy (SPEC L8) on real files.

Remote or unusable cache dirs fall back to memory; corrupt files and failed
migrations are quarantined and rebuilt; a newer schema is served read-only and
left untouched; a lock or a permission problem is never taken for corruption.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import pytest

from convodex.catalog import db as catalog_db
from convodex.catalog.db import SCHEMA_VERSION, open_catalog
from convodex.catalog.files import (
    KEEP_QUARANTINED,
    parse_mountinfo,
    remote_filesystem,
    unusable_reason,
)
from convodex.catalog.indexer import Indexer
from convodex.catalog.search import progress
from convodex.config import catalog_path
from convodex.errors import CatalogError
from convodex.sqlite import sqlite3
from helpers import CliRun, search, write_session

MOUNTINFO = """\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
40 22 0:35 / /mnt rw,relatime shared:2 - nfs4 server:/export rw,vers=4.2
41 40 8:2 / /mnt/local rw,relatime shared:3 - ext4 /dev/sdb1 rw
42 22 0:36 / /srv/with\\040space rw - cifs //nas/share rw
43 22 0:37 / /afs rw - afs AFS rw
"""


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def indexed_catalog(root: Path, cache_dir: Path) -> Path:
    write_session(root, "s1", [{"role": "user", "content": "alpha migration"}])
    with open_catalog(cache_dir) as catalog:
        Indexer(catalog).run([root])
    return catalog_path(cache_dir)


def hit_count(cache_dir: Path, query: str = "alpha") -> int:
    with open_catalog(cache_dir) as catalog:
        return len(search(catalog, query)["hits"])


# -- remote and unusable cache directories ---------------------------------------------


def test_mountinfo_parsing_and_remote_detection(tmp_path: Path) -> None:
    mounts = parse_mountinfo(MOUNTINFO)
    assert ("/srv/with space", "cifs") in mounts
    assert remote_filesystem("/mnt/cache/convodex", MOUNTINFO) == "nfs4"
    assert remote_filesystem("/mnt/local/cache", MOUNTINFO) is None  # longest mount wins
    assert remote_filesystem("/srv/with space/cache", MOUNTINFO) == "cifs"
    assert remote_filesystem("/afs/cell/home", MOUNTINFO) == "afs"
    assert remote_filesystem("/home/me/.cache", MOUNTINFO) is None
    assert remote_filesystem(r"\\fileserver\share\cache", "") == "unc"
    assert remote_filesystem("//fileserver/share/cache", "") == "unc"
    assert remote_filesystem(tmp_path) is None  # this machine's real mount table


def test_remote_cache_dir_falls_back_to_memory(tmp_path: Path, root: Path) -> None:
    cache = tmp_path / "remote-cache"
    table = f"1 0 0:40 / {tmp_path} rw - nfs server:/x rw\n"
    with open_catalog(cache, mountinfo=table) as catalog:
        assert catalog.mode == "memory" and catalog.path is None
        assert "remote filesystem (nfs)" in (catalog.note or "")
        write_session(root, "s1", [{"role": "user", "content": "alpha"}])
        Indexer(catalog).run([root])
        assert len(search(catalog, "alpha")["hits"]) == 1
    assert not cache.exists()  # nothing was written on the remote filesystem


def test_cache_dir_that_is_a_file_falls_back_to_memory(
    tmp_path: Path, root: Path, cli: CliRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "cache-is-a-file"
    blocker.write_text("not a directory")
    assert unusable_reason(blocker / "history-search") is not None
    with open_catalog(blocker) as catalog:
        assert catalog.mode == "memory"
    write_session(root, "s1", [{"role": "user", "content": "alpha"}])
    monkeypatch.setenv("CONVODEX_CACHE_HOME", str(blocker))
    result = cli("index", "--root", str(root), "--json", cache=False)
    assert result.exit_code == 0, result.output  # indexed, in memory
    assert json.loads(result.stdout)["stats"]["indexed"] == 1
    assert blocker.read_text() == "not a directory"


def test_read_only_cache_dir_falls_back_to_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "ro-cache"
    cache.mkdir()
    real_access = os.access

    def access(path: object, mode: int, **kwargs: object) -> bool:
        # Tests run as root, where chmod never denies: report the directory read-only.
        if Path(str(path)) == cache and mode & os.W_OK:
            return False
        return real_access(path, mode)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "access", access)
    with open_catalog(cache) as catalog:
        assert catalog.mode == "memory"
        assert catalog.note == "the cache directory is not writable"
    assert list(cache.iterdir()) == []


def test_catalog_path_that_cannot_be_opened_is_not_corruption(cache_dir: Path) -> None:
    path = catalog_path(cache_dir)
    path.mkdir(parents=True)  # not a file SQLite can use, and not corruption either
    with open_catalog(cache_dir) as catalog:
        assert catalog.mode == "memory"
    assert path.is_dir()
    assert not [p for p in path.parent.iterdir() if ".quarantine-" in p.name]


# -- quarantine ------------------------------------------------------------------------


def quarantined(cache_dir: Path) -> list[Path]:
    folder = catalog_path(cache_dir).parent
    return sorted(p for p in folder.iterdir() if ".quarantine-" in p.name)


def test_random_bytes_catalog_is_quarantined_with_its_side_files(
    root: Path, cache_dir: Path
) -> None:
    path = catalog_path(cache_dir)
    path.parent.mkdir(parents=True)
    junk = os.urandom(64 * 1024)
    path.write_bytes(junk)
    Path(f"{path}-wal").write_bytes(b"stale wal")
    Path(f"{path}-shm").write_bytes(b"stale shm")
    write_session(root, "s1", [{"role": "user", "content": "alpha"}])
    with open_catalog(cache_dir) as catalog:
        assert catalog.mode == "disk"
        assert catalog.quarantined is not None
        assert re.fullmatch(r"v1\.sqlite\.quarantine-\d{13}", catalog.quarantined.name)
        Indexer(catalog).run([root])
    moved = quarantined(cache_dir)
    names = {p.name for p in moved}
    stamp = catalog.quarantined.name
    assert names == {stamp, f"{stamp}-wal", f"{stamp}-shm"}
    assert (path.parent / stamp).read_bytes() == junk
    assert (path.parent / f"{stamp}-wal").read_bytes() == b"stale wal"
    assert hit_count(cache_dir) == 1


def test_damaged_pages_fail_the_quick_check_and_are_quarantined(
    root: Path, cache_dir: Path
) -> None:
    for n in range(30):
        write_session(root, f"s{n}", [{"role": "user", "content": f"alpha word{n} " * 50}])
    path = catalog_path(cache_dir)
    with open_catalog(cache_dir) as catalog:
        Indexer(catalog).run([root])
    size = path.stat().st_size
    assert size > 8 * 4096
    with open(path, "r+b") as handle:  # keep the header, scribble over the pages
        handle.seek(4096 * 2)
        handle.write(os.urandom(size - 4096 * 2))
    with open_catalog(cache_dir) as catalog:
        assert catalog.quarantined is not None
        assert catalog.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert catalog.db.execute("SELECT count(*) FROM sources").fetchone()[0] == 0
        Indexer(catalog).run([root])
    assert hit_count(cache_dir, "word7") == 1


def test_failed_migration_quarantines_and_rebuilds(cache_dir: Path) -> None:
    path = catalog_path(cache_dir)
    path.parent.mkdir(parents=True)
    db = sqlite3.connect(str(path))
    db.execute("CREATE TABLE catalog_meta (unexpected INTEGER)")  # m001 cannot create it
    db.commit()
    db.close()
    with open_catalog(cache_dir) as catalog:
        assert catalog.quarantined is not None
        assert catalog.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert len([p for p in quarantined(cache_dir) if not p.name.endswith(("-wal", "-shm"))]) == 1


def test_only_the_newest_quarantined_copies_are_kept(cache_dir: Path) -> None:
    path = catalog_path(cache_dir)
    path.parent.mkdir(parents=True)
    for _ in range(5):
        path.write_bytes(os.urandom(4096))
        open_catalog(cache_dir).close()
    assert len(quarantined(cache_dir)) == KEEP_QUARANTINED


# -- newer schema: degraded ------------------------------------------------------------


def make_future(path: Path) -> None:
    db = sqlite3.connect(str(path))
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    db.execute("PRAGMA journal_mode = DELETE")  # one self-contained file to hash
    db.close()


def test_future_schema_is_served_read_only_and_left_untouched(
    root: Path, cache_dir: Path, cli: CliRun
) -> None:
    path = indexed_catalog(root, cache_dir)
    make_future(path)
    before = digest(path)
    files_before = sorted(p.name for p in path.parent.iterdir())
    with open_catalog(cache_dir) as catalog:
        assert catalog.mode == "degraded" and not catalog.writable
        assert progress(catalog).state == "degraded"
        result = search(catalog, "alpha")
        assert len(result["hits"]) == 1 and result["progress"]["state"] == "degraded"
        with pytest.raises(CatalogError, match="read-only"):
            Indexer(catalog).run([root])
        with pytest.raises(CatalogError, match="read-only"):
            with catalog.transaction():
                pass
    out = cli("index", "--root", str(root))
    assert out.exit_code == 1 and "read-only (degraded mode" in out.stderr
    out = cli("search", "alpha", "--json")
    assert out.exit_code == 0
    out = cli("catalogs", "reindex", "history", "--dir", str(root))
    assert out.exit_code == 1 and "left untouched" in out.stderr
    assert digest(path) == before
    assert sorted(p.name for p in path.parent.iterdir() if not p.name.endswith("-shm")) == [
        n for n in files_before if not n.endswith("-shm")
    ]


# -- contention is not corruption ------------------------------------------------------


def test_locked_catalog_is_an_error_not_corruption(root: Path, cache_dir: Path) -> None:
    path = indexed_catalog(root, cache_dir)
    other = sqlite3.connect(str(path), isolation_level=None)
    try:
        other.execute("PRAGMA locking_mode = EXCLUSIVE")
        other.execute("BEGIN EXCLUSIVE")
        other.execute("INSERT INTO catalog_meta(key, value) VALUES ('held', '1')")
        with pytest.raises(CatalogError, match="locked by another process"):
            open_catalog(cache_dir)
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert quarantined(cache_dir) == []
    assert hit_count(cache_dir) == 1


@pytest.mark.parametrize(
    "error",
    [
        PermissionError(13, "Permission denied"),
        sqlite3.OperationalError("attempt to write a readonly database"),
        sqlite3.OperationalError("unable to open database file"),
    ],
)
def test_permission_errors_are_not_corruption(
    root: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    path = indexed_catalog(root, cache_dir)
    before = digest(path)

    def refuse(*args: object, **kwargs: object) -> None:
        raise error

    monkeypatch.setattr(catalog_db, "open_file", refuse)
    with open_catalog(cache_dir) as catalog:
        # Not ours to write: read as it is (its sessions still answer), never written.
        assert catalog.mode == "degraded" and not catalog.writable
        assert type(error).__name__ in (catalog.note or "")
        assert catalog.db.execute("SELECT count(*) FROM sources").fetchone()[0] == 1
    assert quarantined(cache_dir) == []
    assert digest(path) == before
