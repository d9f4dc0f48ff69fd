"""A no-op ``index`` (SPEC L20, issue 28): when nothing changed it loads neither the
indexer nor a reader and writes no source row; whatever did change (an append, a new
file in any directory, a deletion, an edit that kept size and time) is still indexed,
and a root is scanned in full at least once an hour."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from convodex.catalog.service import HistoryService
from convodex.catalog.stamps import FULL_LISTING
from convodex.catalog.unchanged import FULL_SCAN_SECONDS
from convodex.models import IndexStats
from helpers import FIXTURES, append_lines, write_claude_session, write_session

HANDWRITTEN = FIXTURES / "handwritten" / "aider" / "project"
SESSION = "5e5e5e5e-0000-4000-8000-000000000005"


def message(text: str, role: str = "user") -> dict[str, str]:
    return {"role": role, "content": text}


def backdate(root: Path, seconds: float = 60.0) -> None:
    """Every directory under ``root`` last modified a while ago, as on a history that
    is not being written (a scan right after a write cannot tell it from a race)."""
    at = time.time() - seconds
    for folder in [root, *(p for p in root.rglob("*") if p.is_dir())]:
        os.utime(folder, (at, at))


def history(root: Path) -> None:
    write_session(root, "s-one", [message("the kettle whistles"), message("ok", "assistant")])
    write_session(root, "s-two", [message("a quiet harbour")], subdir="project")
    (root / "empty-project").mkdir()
    backdate(root)


def index(cache_dir: Path, root: Path) -> IndexStats:
    with HistoryService.open(cache_dir, [root]) as service:
        return service.index()


def hits(cache_dir: Path, root: Path, word: str) -> int:
    from convodex.catalog.plan import SearchRequest

    with HistoryService.open(cache_dir, [root]) as service:
        return len(service.search(SearchRequest(query=word)).hits)


def test_nothing_changed_loads_no_indexer_nor_reader(root: Path, cache_dir: Path) -> None:
    history(root)
    first = index(cache_dir, root)
    assert (first.indexed, first.sources) == (2, 2)
    probe = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from convodex.catalog.service import HistoryService\n"
        f"with HistoryService.open(Path({str(cache_dir)!r}), [Path({str(root)!r})]) as s:\n"
        "    stats = s.index()\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(('convodex.sources.',"
        " 'convodex.catalog.indexer', 'convodex.catalog.batches')))\n"
        "print(json.dumps([stats.indexed, stats.sources, stats.roots, loaded]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    indexed, sources, roots, loaded = json.loads(done.stdout)
    assert (indexed, sources, roots) == (0, 2, 1)
    # The stat helpers and the roots' table, no reader, no indexer.
    assert set(loaded) <= {f"convodex.sources.{m}" for m in ("base", "registry", "roots")}


def test_an_append_is_indexed(root: Path, cache_dir: Path) -> None:
    history(root)
    index(cache_dir, root)
    append_lines(root / "s-one.jsonl", [message("a lighthouse keeper")])
    assert index(cache_dir, root).indexed == 1
    assert hits(cache_dir, root, "lighthouse") == 1


def test_a_new_file_in_a_directory_without_sources_is_indexed(root: Path, cache_dir: Path) -> None:
    """The one case a check of known directories alone would miss: every directory is
    stat'ed, so the empty one's new entry is seen."""
    history(root)
    index(cache_dir, root)
    assert index(cache_dir, root).indexed == 0
    write_session(root, "s-three", [message("an orchard in april")], subdir="empty-project")
    assert index(cache_dir, root).indexed == 1
    assert hits(cache_dir, root, "orchard") == 1


def test_a_deleted_source_is_removed(root: Path, cache_dir: Path) -> None:
    history(root)
    index(cache_dir, root)
    (root / "project" / "s-two.jsonl").unlink()
    backdate(root)  # even with its directory's time put back, the stat tells
    assert index(cache_dir, root).removed == 1
    assert hits(cache_dir, root, "harbour") == 0


def test_an_edit_that_keeps_size_and_time_is_found(root: Path, cache_dir: Path) -> None:
    history(root)
    index(cache_dir, root)
    path = root / "s-one.jsonl"
    st = path.stat()
    path.write_bytes(path.read_bytes().replace(b"kettle", b"teapot"))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # touch -r, cp -p
    index(cache_dir, root)  # the no-op check's signatures queue it; the run reads it
    assert hits(cache_dir, root, "teapot") == 1 and hits(cache_dir, root, "kettle") == 0


def test_a_root_is_scanned_in_full_at_least_hourly(root: Path, cache_dir: Path) -> None:
    history(root)
    index(cache_dir, root)
    # A file whose directory time was put back: no stat the check looks at changed.
    write_session(root, "s-four", [message("a hidden meadow")], subdir="empty-project")
    backdate(root)
    assert index(cache_dir, root).indexed == 0  # within the hour: the check trusts it
    with HistoryService.open(cache_dir, [root]) as service:
        with service.catalog.transaction() as db:
            hour_ago = time.time_ns() - (FULL_SCAN_SECONDS + 1) * 1_000_000_000
            db.execute(
                "UPDATE catalog_meta SET value = ? WHERE key LIKE ?",
                (str(hour_ago), FULL_LISTING.format("%")),
            )
    assert index(cache_dir, root).indexed == 1
    assert hits(cache_dir, root, "meadow") == 1


def test_an_aider_history_in_a_named_workspace_leaves_it_to_a_run(
    root: Path, cache_dir: Path, tmp_path: Path
) -> None:
    """A run also reads the Aider history of each workspace sessions name, outside the
    roots; the no-op check does not know those, so it lets the run decide."""
    from convodex.catalog.unchanged import AIDER_HISTORY
    from convodex.sources import aider

    assert AIDER_HISTORY == aider.HISTORY
    workspace = tmp_path / "work"
    workspace.mkdir()
    now = int(time.time() * 1000)
    write_claude_session(root, SESSION, str(workspace), [("user", "a windmill", now)])
    backdate(root)
    index(cache_dir, root)
    assert index(cache_dir, root).indexed == 0
    shutil.copy(HANDWRITTEN / AIDER_HISTORY, workspace / AIDER_HISTORY)
    assert index(cache_dir, root).indexed == 1


def test_noops_write_nothing_and_go_round_every_signature(root: Path, cache_dir: Path) -> None:
    """Each no-op re-reads the next ``NOOP_SIGNATURE_CHECKS`` signatures and says where
    it stopped outside the catalog: the catalog file is not written, and an edit that
    kept size and time in the last source is still found within a turn of no-ops."""
    from convodex import config
    from convodex.catalog.unchanged import NOOP_SIGNATURE_CHECKS

    count = NOOP_SIGNATURE_CHECKS + 6
    for n in range(count):
        write_session(root, f"s-{n:03d}", [message(f"calm note {n}")])
    backdate(root)
    assert index(cache_dir, root).indexed == count
    catalog = config.catalog_path(cache_dir)
    wal = catalog.with_name(catalog.name + "-wal")
    before = catalog.stat().st_mtime_ns, catalog.read_bytes()
    assert index(cache_dir, root).indexed == 0
    assert (catalog.stat().st_mtime_ns, catalog.read_bytes()) == before
    assert not wal.exists() or wal.stat().st_size == 0
    with HistoryService.open(cache_dir, [root]) as service:
        (last,) = service.catalog.db.execute("SELECT path FROM sources ORDER BY id DESC LIMIT 1")
    path = Path(last[0])
    st = path.stat()
    path.write_bytes(path.read_bytes().replace(b"calm", b"wild"))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # touch -r, cp -p
    runs = [index(cache_dir, root).indexed for _ in range(count // NOOP_SIGNATURE_CHECKS + 1)]
    assert runs.count(1) == 1 and set(runs) == {0, 1}
    assert hits(cache_dir, root, "wild") == 1
