"""Every setting declared once: name, default, environment variable, why it exists."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from convodex.errors import ConfigError

APP = "convodex"

MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Setting:
    name: str
    env: str
    default: int
    help: str

    def value(self) -> int:
        raw = os.environ.get(self.env)
        if raw is None or not raw.strip():
            return self.default
        try:
            parsed = int(raw)
        except ValueError as exc:
            raise ConfigError(f"{self.env} must be an integer number of bytes") from exc
        if parsed <= 0:
            raise ConfigError(f"{self.env} must be positive")
        return parsed


REPLAY_MAX_LOG_BYTES = Setting(
    "replay_max_log_bytes",
    "CONVODEX_REPLAY_MAX_LOG_BYTES",
    512 * MIB,
    "Largest encoded session log replayed (L6).",
)
REPLAY_MAX_RECORD_BYTES = Setting(
    "replay_max_record_bytes",
    "CONVODEX_REPLAY_MAX_RECORD_BYTES",
    64 * MIB,
    "Largest single encoded record (L6).",
)
REPLAY_MAX_RETAINED_BYTES = Setting(
    "replay_max_retained_bytes",
    "CONVODEX_REPLAY_MAX_RETAINED_BYTES",
    64 * MIB,
    "Aggregate message payload bytes retained while replaying one source (L6).",
)
REPLAY_MAX_DAG_META_BYTES = Setting(
    "replay_max_dag_meta_bytes",
    "CONVODEX_REPLAY_MAX_DAG_META_BYTES",
    64 * MIB,
    "Legacy DAG metadata bytes per source (L6).",
)

SETTINGS = (
    REPLAY_MAX_LOG_BYTES,
    REPLAY_MAX_RECORD_BYTES,
    REPLAY_MAX_RETAINED_BYTES,
    REPLAY_MAX_DAG_META_BYTES,
)

DEFAULT_SEARCH_LIMIT = 50  # L4: a page of hits for people (CLI, HTTP, web page)
MAX_SEARCH_LIMIT = 200
# The agent tool's default page: hits go into a model's context, so fewer by default.
AGENT_SEARCH_LIMIT = 20
MAX_AROUND = 10
BUSY_TIMEOUT_MS = 250


def cache_root(override: str | os.PathLike[str] | None = None) -> Path:
    """``--cache-dir``, else ``CONVODEX_CACHE_HOME``, else the platform cache dir."""
    if override:
        return Path(override).expanduser()
    env = os.environ.get("CONVODEX_CACHE_HOME")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_cache_dir(APP))


def data_home() -> Path:
    """convodex's own data directory: ``CONVODEX_HOME``, else the platform data dir."""
    env = os.environ.get("CONVODEX_HOME")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_data_dir(APP))


def sessions_dir() -> Path:
    """Where convodex's own session writer keeps transcripts: the default root."""
    return data_home() / "sessions"


def catalog_path(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    return cache_root(cache_dir) / "history-search" / "v1.sqlite"


def hint_socket_path(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Where a serving process listens for other processes' write hints.

    Beside the catalog when the path fits a Unix socket address (about 100 bytes);
    otherwise in a private per-user directory under the temp dir, named by a hash.
    """
    path = cache_root(cache_dir) / "history-search" / "hints.sock"
    if len(os.fsencode(path)) < 100:
        return path
    import hashlib
    import tempfile

    digest = hashlib.blake2b(os.fsencode(path), digest_size=8).hexdigest()
    return Path(tempfile.gettempdir()) / f"convodex-{os.getuid()}" / f"{digest}.sock"


def summary_cache_path(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    return cache_root(cache_dir) / "history-search" / "summaries.json"
