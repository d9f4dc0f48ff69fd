"""The catalog's files (SPEC L8): where it may live (no remote filesystem, a writable
directory), private modes, quarantine of a damaged file with its side files, and the
swap of a rebuilt one. No SQL here beyond the checkpoint before a swap.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from convodex.sqlite import CATALOG_BUSY_TIMEOUT_MS, sqlite3

# Filesystem types on which SQLite's WAL locking cannot be trusted.
REMOTE_FILESYSTEMS = frozenset(
    {
        "nfs",
        "nfs4",
        "cifs",
        "smb",
        "smb2",
        "smb3",
        "smbfs",
        "afs",
        "ncpfs",
        "9p",
        "fuse.sshfs",
        "sshfs",
        "ceph",
        "glusterfs",
        "fuse.glusterfs",
        "lustre",
        "gpfs",
        "davfs",
        "fuse.davfs2",
    }
)
MOUNTINFO = Path("/proc/self/mountinfo")
QUARANTINE_MARK = ".quarantine-"
REBUILD_MARK = ".rebuild-"
KEEP_QUARANTINED = 3
SIDE_FILES = ("-wal", "-shm")


def private_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    with contextlib.suppress(OSError):
        os.chmod(path, 0o700)


def private_files(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        candidate = Path(f"{path}{suffix}")
        if candidate.exists():
            with contextlib.suppress(OSError):
                os.chmod(candidate, 0o600)


def _unescape_mount(field_: str) -> str:
    """Mount points in mountinfo escape space, tab, newline and backslash as octal."""
    out, i = [], 0
    while i < len(field_):
        if field_[i] == "\\" and i + 3 < len(field_) and field_[i + 1 : i + 4].isdigit():
            out.append(chr(int(field_[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field_[i])
            i += 1
    return "".join(out)


def parse_mountinfo(text: str) -> list[tuple[str, str]]:
    """(mount point, filesystem type) for each line of ``/proc/self/mountinfo``."""
    mounts = []
    for line in text.splitlines():
        fields = line.split(" ")
        if "-" not in fields or len(fields) < 5:
            continue
        sep = fields.index("-")
        if sep + 1 >= len(fields):
            continue
        mounts.append((_unescape_mount(fields[4]), fields[sep + 1]))
    return mounts


def is_unc_path(path: str) -> bool:
    """``\\\\server\\share`` or ``//server/share``: a network path on any platform."""
    return path.startswith(("\\\\", "//")) and not path.startswith(("///", "\\\\\\"))


def remote_filesystem(path: str | os.PathLike[str], mountinfo: str | None = None) -> str | None:
    """The remote filesystem type ``path`` lives on, or ``None`` for a local one.

    ``mountinfo`` is the text of ``/proc/self/mountinfo`` (read when not given; on
    systems without it only UNC-like paths are recognised).
    """
    raw = os.fspath(path)
    if is_unc_path(raw):
        return "unc"
    if mountinfo is None:
        try:
            mountinfo = MOUNTINFO.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
    target = Path(os.path.abspath(raw))
    # Resolve symlinks in the part that exists; a not-yet-created rest keeps its name.
    existing, rest = target, Path()
    while not existing.exists() and existing.parent != existing:
        existing, rest = existing.parent, Path(existing.name) / rest
    with contextlib.suppress(OSError):
        target = existing.resolve() / rest
    best, fstype = -1, ""
    for mount_point, kind in parse_mountinfo(mountinfo):
        mount = Path(mount_point)
        if (target == mount or target.is_relative_to(mount)) and len(mount.parts) > best:
            best, fstype = len(mount.parts), kind
    if fstype.lower() in REMOTE_FILESYSTEMS:
        return fstype.lower()
    return None


# A cache directory this process cannot write: a catalog already there is read as it is.
NOT_WRITABLE = "the cache directory is not writable"


def unusable_reason(folder: Path, mountinfo: str | None = None) -> str | None:
    """Why a cache directory cannot hold the catalog file, or ``None`` when it can."""
    remote = remote_filesystem(folder, mountinfo)
    if remote is not None:
        return f"the cache directory is on a remote filesystem ({remote})"
    probe = folder
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    if not probe.is_dir():
        return "the cache directory path is not a directory"
    if not os.access(probe, os.W_OK | os.X_OK):
        return NOT_WRITABLE
    return None


def side_files(path: Path) -> list[Path]:
    return [Path(f"{path}{suffix}") for suffix in SIDE_FILES]


def quarantined_files(path: Path) -> list[Path]:
    """Quarantined copies of the catalog at ``path`` (main files only), oldest first."""
    try:
        names = [
            p
            for p in path.parent.iterdir()
            if p.name.startswith(path.name + QUARANTINE_MARK) and not p.name.endswith(SIDE_FILES)
        ]
    except OSError:
        return []
    return sorted(names, key=lambda p: p.name)


def quarantine(path: Path) -> Path:
    """Rename the catalog and its ``-wal``/``-shm`` aside as ``<name>.quarantine-<ms>``.

    The side files keep their suffixes, so SQLite can still open the quarantined copy
    with its WAL for a post-mortem. Only the newest few copies are kept.
    """
    stamp = int(time.time() * 1000)
    target = path.with_name(f"{path.name}{QUARANTINE_MARK}{stamp}")
    while target.exists():
        stamp += 1
        target = path.with_name(f"{path.name}{QUARANTINE_MARK}{stamp}")
    for source, dest in zip([path, *side_files(path)], [target, *side_files(target)], strict=True):
        if source.exists():
            os.replace(source, dest)
    for old in quarantined_files(path)[:-KEEP_QUARANTINED]:
        for file in [old, *side_files(old)]:
            with contextlib.suppress(OSError):
                file.unlink()
    return target


def remove_with_side_files(path: Path) -> None:
    for file in [path, *side_files(path)]:
        with contextlib.suppress(FileNotFoundError):
            file.unlink()


def replace_catalog(new: Path, path: Path) -> None:
    """Swap a rebuilt catalog file in for ``path`` atomically.

    The new file must be closed and out of WAL mode. SQLite replays any ``-wal`` it
    finds beside a database, whatever that WAL belonged to, so the old WAL is
    checkpointed and removed before the swap, and removed again after it in case a
    writer of the old file recreated it meanwhile.
    """
    if path.exists():
        with contextlib.suppress(sqlite3.Error):
            old = sqlite3.connect(
                str(path), isolation_level=None, timeout=CATALOG_BUSY_TIMEOUT_MS / 1000
            )
            try:
                old.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                old.close()
    _remove_side_files(path)
    os.replace(new, path)
    _remove_side_files(path)
    private_files(path)


def _remove_side_files(path: Path) -> None:
    for file in side_files(path):
        with contextlib.suppress(FileNotFoundError):
            file.unlink()
