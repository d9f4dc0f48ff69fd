"""Writing an agent's config file the safe way: atomically, with a backup of the
original, and a manifest of what convodex changed so ``uninstall`` can take back
exactly that (SPEC L18).

The manifest (``$CONVODEX_HOME/install/manifest.json``) records per file: whether
convodex created it, where the backup of its original bytes is, the hash of the
bytes convodex last wrote, and the entries it added. ``uninstall`` on a file nobody
touched since restores the backup byte for byte; on a file the user edited since, it
removes convodex's entries and keeps their edits.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from pathlib import Path

import msgspec

from convodex import config


class FileRecord(msgspec.Struct, kw_only=True, rename="camel"):
    agent: str
    created: bool
    backup: str | None = None
    written_sha256: str = ""
    # What convodex added: entries (an array item as its path and "#marker"), and the
    # objects or tables it made to hold them (removed again only when left empty).
    leaves: list[list[str]] = msgspec.field(default_factory=list)
    containers: list[list[str]] = msgspec.field(default_factory=list)


def manifest_path() -> Path:
    return config.data_home() / "install" / "manifest.json"


def backup_dir() -> Path:
    return config.data_home() / "install" / "backups"


def read_manifest() -> dict[str, FileRecord]:
    try:
        raw = manifest_path().read_bytes()
    except FileNotFoundError:
        return {}
    try:
        return msgspec.json.decode(raw, type=dict[str, FileRecord])
    except (msgspec.DecodeError, msgspec.ValidationError):
        return {}  # a damaged manifest: uninstall falls back to removing entries


def write_manifest(records: dict[str, FileRecord]) -> None:
    path = manifest_path()
    if not records:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        return
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    atomic_write(path, msgspec.json.format(msgspec.json.encode(records)) + b"\n", 0o600)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def atomic_write(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` in one rename: never a half-written file. The
    file keeps its permission bits (new files: 0600 unless ``mode`` says)."""
    # A config file that is a link (dotfiles kept in a repository) stays a link: the
    # file it points at is the one replaced.
    path = Path(os.path.realpath(path))
    try:
        keep = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        keep = mode if mode is not None else 0o600
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, spare = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".convodex", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(spare, keep)
        os.replace(spare, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(spare)
        raise


def keep_backup(path: Path, original: bytes) -> Path:
    """A copy of the original bytes, named by the file and their hash (kept once)."""
    folder = backup_dir()
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    name = hashlib.sha256(os.fsencode(path)).hexdigest()[:12]
    target = folder / f"{name}-{path.name}.{sha256(original)[:12]}"
    if not target.exists():
        atomic_write(target, original, 0o600)
    return target
