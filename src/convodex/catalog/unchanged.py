"""A no-op ``index`` that costs nothing (SPEC L20, issue 28): whether an indexing run of
some roots would change nothing, found without the indexer, its readers or a scan.

Nothing changed when, for every root: its last full scan completed, less than
``FULL_SCAN_SECONDS`` ago; no directory under it was modified since that scan's
listing began (every directory is stat'ed, no file listed: a directory whose entries
are as the scan saw them holds no file it did not see); every known source's
fingerprint is the indexed one and none is pending; and the bounded signature check
(``stamps.verify_signatures``) finds no same-size, same-mtime edit; and no workspace
the sessions name holds an Aider history (a run scans those too). Anything else, or
a tree too large to walk cheaply, is answered "maybe": the caller runs the indexer.
A file whose kind only its content tells (an empty ``.jsonl`` that became a session
without its directory changing) waits for the next full scan: at most an hour.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from stat import S_ISREG

from convodex.catalog.db import Catalog
from convodex.catalog.stamps import FULL_LISTING, verify_signatures
from convodex.models import IndexStats
from convodex.sources.roots import Root
from convodex.sqlite import marks

# A root is scanned in full (every directory listed, every file looked at) at least
# this often, whatever the no-op check says.
FULL_SCAN_SECONDS = 3600
# Directory times come from a coarse clock: one modified just before a scan's listing
# began may carry a time after it, or one just after it a time before.
MARGIN_NS = 1_000_000_000
# Directories walked per known source (and at least this many) before the check gives
# up and lets a scan decide: trees the scan would not walk can be large.
DIRS_PER_SOURCE, MIN_DIRS = 4, 256
# Signatures re-read per no-op (a full run reads ``stamps.SIGNATURE_CHECKS``): a no-op
# runs often (a hook, a timer), so the catalog is still gone round within a few runs.
NOOP_SIGNATURE_CHECKS = 64
# ``aider.HISTORY``: a run also scans the Aider history in each workspace sessions name
# (``Indexer.workspace_roots``); where there is one, the run decides.
AIDER_HISTORY = ".aider.chat.history.md"


def unchanged(catalog: Catalog, roots: Sequence[Root], follow_symlinks: bool) -> IndexStats | None:
    """The stats of a run that changes nothing, or None when a run may change something."""
    started = time.perf_counter()
    if follow_symlinks or not catalog.writable or catalog.path is None:
        return None
    catalog.verify()  # an integrity check when one is due (L8), as a run makes it
    db = catalog.db
    stored = {
        str(path): (int(root_id), fmt, scanned, completed)
        for root_id, path, fmt, scanned, completed in db.execute(
            "SELECT id, path, format, scan_generation, completed_generation FROM roots"
        )
    }
    now_ns = time.time_ns()
    root_ids: list[int] = []
    for root in roots:
        row = stored.get(str(root))
        if row is None or root.shallow:
            return None
        root_id, fmt, scanned, completed = row
        if scanned is None or scanned != completed or root.format not in (None, fmt):
            return None
        listed_at = _full_listing(catalog, root_id)
        if listed_at is None or now_ns - listed_at > FULL_SCAN_SECONDS * 1_000_000_000:
            return None
        root_ids.append(root_id)
        sources = _sources_same(catalog, root_id)
        if sources is None:
            return None
        limit = max(MIN_DIRS, DIRS_PER_SOURCE * sources)
        if not _tree_unmodified(root, listed_at - MARGIN_NS, limit):
            return None
    if _aider_workspaces(catalog, roots):
        return None
    if verify_signatures(catalog, NOOP_SIGNATURE_CHECKS):
        return None  # queued: the run reads them
    count = db.execute(
        f"SELECT count(*) FROM sources WHERE root_id IN ({marks(root_ids)})",
        root_ids,
    ).fetchone()[0]
    seconds = round(time.perf_counter() - started, 3)
    return IndexStats(roots=len(root_ids), sources=int(count), seconds=seconds)


def _aider_workspaces(catalog: Catalog, roots: Sequence[Root]) -> bool:
    """Whether a workspace the sessions name, outside the roots, holds an Aider history."""
    for (workspace,) in catalog.db.execute(
        "SELECT DISTINCT workspace FROM sources WHERE workspace IS NOT NULL"
    ):
        folder = Path(str(workspace)).expanduser()
        if (folder / AIDER_HISTORY).is_file() and not any(folder.is_relative_to(r) for r in roots):
            return True
    return False


def _full_listing(catalog: Catalog, root_id: int) -> int | None:
    row = catalog.db.execute(
        "SELECT value FROM catalog_meta WHERE key = ?", (FULL_LISTING.format(root_id),)
    ).fetchone()
    return int(row[0]) if row else None


def _sources_same(catalog: Catalog, root_id: int) -> int | None:
    """How many sources the root has when each one's fingerprint is its indexed one and
    none waits to be read; None otherwise."""
    from convodex.sources.registry import OWN_STAT, fingerprint

    rows = catalog.db.execute(
        "SELECT path, format, size, mtime_ns, inode, pending FROM sources WHERE root_id = ?",
        (root_id,),
    ).fetchall()
    folders: dict[str, int] = {}
    try:
        for path, fmt, size, mtime_ns, inode, pending in rows:
            if pending:
                return None
            try:
                if fmt in OWN_STAT:
                    st = fingerprint(str(fmt), str(path))
                    seen = (st.size, st.mtime_ns, st.inode)
                else:  # ``FileStat.of``, inline: one stat a source is most of the check
                    raw = _stat(str(path), folders)
                    if not S_ISREG(raw.st_mode):
                        return None
                    seen = (raw.st_size, raw.st_mtime_ns, raw.st_ino)
            except Exception:  # gone, unreadable, no regular file any more: a run decides
                return None
            if seen != (size, mtime_ns, inode):
                return None
    finally:
        for fd in folders.values():
            os.close(fd)
    return len(rows)


# A directory held open only to stat names in it (Linux: no read permission needed,
# as for a stat by path); elsewhere a plain read-only open.
_FOLDER_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | getattr(os, "O_DIRECTORY", 0)


def _stat(path: str, folders: dict[str, int]) -> os.stat_result:
    """``os.stat(path)``, through one descriptor per directory (``folders``, closed by
    the caller): the kernel walks each directory's path once, not once per source
    (a third of the check's stats on 3,244 sources in a few directories)."""
    folder, _, name = path.rpartition(os.sep)
    if not folder or not name or os.stat not in os.supports_dir_fd:
        return os.stat(path)
    fd = folders.get(folder)
    if fd is None:
        try:
            fd = os.open(folder, _FOLDER_FLAGS)
        except OSError:
            return os.stat(path)  # its error, or its answer, as before
        folders[folder] = fd
    return os.stat(name, dir_fd=fd)


def _tree_unmodified(root: Path, before_ns: int, limit: int) -> bool:
    """Whether ``root`` and every directory below it (links not followed) were last
    modified before ``before_ns``; False past ``limit`` directories."""
    try:
        if os.stat(root).st_mtime_ns >= before_ns:
            return False
    except OSError:
        return False
    stack, seen = [os.fspath(root)], 1
    while stack:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    if not entry.is_dir(follow_symlinks=False):
                        continue
                    seen += 1
                    if seen > limit or entry.stat(follow_symlinks=False).st_mtime_ns >= before_ns:
                        return False
                    stack.append(entry.path)
        except OSError:
            return False
    return True
