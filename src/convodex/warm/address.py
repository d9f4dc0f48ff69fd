"""Where a service for one catalog listens, and what a client must share with it.

Standard library only, and only its cheapest parts: the console script computes the
address before anything else is imported. The socket lives in the user's runtime
directory (``$XDG_RUNTIME_DIR/convodex``, else ``$TMPDIR/convodex-UID``, mode 0700),
named by a hash of the catalog's path, so each catalog has its own service.
"""

from __future__ import annotations

import os
import stat
import sys

# A request and its answer change shape only with this number (and the version).
PROTOCOL = "1"

# Environment a command's answer depends on besides its arguments: a service answers
# only clients whose values are the same as its own (config file, cache, home, dates,
# colour, pager); anything else is refused and the command runs in-process.
_SHARED_ENV = ("HOME", "TZ", "NO_COLOR", "PAGER", "PATH", "LANG", "LC_ALL", "LC_CTYPE")
_SHARED_PREFIXES = ("CONVODEX_", "XDG_")


def runtime_dir() -> str:
    """The per-user directory holding service sockets (created by the service)."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    if base and os.path.isabs(base):
        return os.path.join(base, "convodex")
    tmp = os.environ.get("TMPDIR") or "/tmp"
    return os.path.join(tmp, f"convodex-{os.getuid()}")


def default_cache_root() -> str | None:
    """``config.cache_root()`` without platformdirs: the same answer on Linux, None
    elsewhere (the client then runs in-process)."""
    env = os.environ.get("CONVODEX_CACHE_HOME")
    if env:
        return os.path.expanduser(env)
    if not sys.platform.startswith("linux"):
        return None
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    return os.path.join(xdg or os.path.expanduser("~/.cache"), "convodex")


def catalog_file(cache_root: str) -> str:
    """``config.catalog_path`` of a cache root, absolute and normalised."""
    return os.path.abspath(os.path.join(cache_root, "history-search", "v1.sqlite"))


def _digest(data: bytes) -> str:
    try:
        from _blake2 import blake2b  # the C module: hashlib costs an OpenSSL load
    except ImportError:  # pragma: no cover - a build without it
        from hashlib import blake2b
    return blake2b(data, digest_size=10).hexdigest()


def socket_path(catalog: str) -> str:
    """The service socket of one catalog file (a short name: socket addresses are
    limited to about 100 bytes)."""
    return os.path.join(runtime_dir(), _digest(os.fsencode(catalog)) + ".sock")


def environment() -> str:
    """A digest of the environment a short command's answer depends on."""
    items = sorted(
        (k, v) for k, v in os.environ.items() if k in _SHARED_ENV or k.startswith(_SHARED_PREFIXES)
    )
    return _digest(b"\0".join(os.fsencode(f"{k}={v}") for k, v in items))


def private_dir(path: str, uid: int) -> bool:
    """A directory (not a link) owned by ``uid`` that nobody else can enter."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == uid and st.st_mode & 0o077 == 0


def own_socket(path: str, uid: int) -> bool:
    """A socket file (not a link) owned by ``uid``."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISSOCK(st.st_mode) and st.st_uid == uid
