"""Every setting declared once: name, default, environment variable, why it exists."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

from convodex.errors import ConfigError, QueryError

APP = "convodex"

MIB = 1024 * 1024


class Setting(msgspec.Struct, frozen=True):
    name: str
    env: str
    default: int
    help: str
    unit: str = "bytes"

    def value(self) -> int:
        raw = os.environ.get(self.env)
        if raw is None or not raw.strip():
            return self.default
        try:
            parsed = int(raw)
        except ValueError as exc:
            raise ConfigError(f"{self.env} must be an integer number of {self.unit}") from exc
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

SEARCH_SHARES = Setting(
    "search_shares",
    "CONVODEX_SEARCH_SHARES",
    4,
    "Most rowid ranges one search runs at once, one per usable CPU at most (1: one "
    "connection); more than four cost more in merging than they save.",
    unit="shares",
)

REFRESH_BUDGET = Setting(
    "refresh_budget",
    "CONVODEX_REFRESH_BUDGET_MS",
    400,
    "Most time a CLI search spends first finding and bringing in transcripts changed "
    "since the last index (L17); past it the search answers and says what may be missing.",
    unit="milliseconds",
)

# The accelerators (``catalog/speed``): ``off`` serves every query from the core alone,
# the same answers more slowly (docs/architecture.md).
ACCELERATORS_ENV = "CONVODEX_ACCELERATORS"

PICK_FIRST_WAIT = Setting(
    "pick_first_wait",
    "CONVODEX_PICK_FIRST_WAIT_MS",
    1000,
    "How long `pick` keeps its first frame up for a slow first search before loading the "
    "full-screen app (which then shows the results itself).",
    unit="milliseconds",
)

SERVICE_IDLE_SECONDS = Setting(
    "service_idle_seconds",
    "CONVODEX_SERVICE_IDLE_SECONDS",
    900,
    "How long a background service (``convodex service start``) waits for a request "
    "before it exits: warm while someone works, gone when nobody does (L20).",
    unit="seconds",
)

# A search's page size (L4), declared once. Local history (the catalog, the CLI, its HTTP
# and MCP) refuses one out of range (``search_limit``); the team server keeps its own
# contract (S3: no hits for ``limit <= 0``) with the same numbers (``server_search_limit``).
DEFAULT_SEARCH_LIMIT = 50  # a page of hits for people (CLI, HTTP, web page)
MAX_SEARCH_LIMIT = 200
# The agent tool's default page: hits go into a model's context, so fewer by default.
AGENT_SEARCH_LIMIT = 20


def search_limit(limit: int | None, default: int = DEFAULT_SEARCH_LIMIT) -> int:
    """A search's page size: ``default`` when none is given; one outside 1 …
    ``MAX_SEARCH_LIMIT`` is refused with one line that names the range, never clamped
    (who asks for 500 hits is told so, not silently given 200)."""
    if limit is None:
        return default
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise QueryError("limit must be an integer")
    if not 1 <= limit <= MAX_SEARCH_LIMIT:
        raise QueryError(f"limit must be between 1 and {MAX_SEARCH_LIMIT}")
    return limit


def server_search_limit(limit: int) -> int:
    """The team server's page size over HTTP (``/brain/search``): its contract (SPEC S3)
    answers ``limit <= 0`` with no hits, so there it is kept (0), and a larger page than
    ``MAX_SEARCH_LIMIT`` is cut to it; the numbers are the local ones."""
    return max(0, min(limit, MAX_SEARCH_LIMIT))


MAX_AROUND = 10


def cache_root(override: str | os.PathLike[str] | None = None) -> Path:
    """``--cache-dir``, else ``CONVODEX_CACHE_HOME``, else the platform cache dir."""
    if override:
        return Path(override).expanduser()
    env = os.environ.get("CONVODEX_CACHE_HOME")
    if env:
        return Path(env).expanduser()
    import platformdirs  # on first use: with its imports, 10 ms of every start-up

    return Path(platformdirs.user_cache_dir(APP))


def data_home() -> Path:
    """convodex's own data directory: ``CONVODEX_HOME``, else the platform data dir."""
    env = os.environ.get("CONVODEX_HOME")
    if env:
        return Path(env).expanduser()
    import platformdirs

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


# -- the user config file ---------------------------------------------------------------
#
# ``$XDG_CONFIG_HOME/convodex/config.toml`` (default ``~/.config/convodex/config.toml``):
# what a person sets once and every command honours. One loader reads and validates
# it; each table or key is declared in ``CONFIG_KEYS`` with its type and why it exists.

CONFIG_KEYS: dict[str, tuple[type, str]] = {
    "resume": (dict, "Agent name -> resume command template with {id} and {cwd} (L15)."),
    "handoff": (dict, "Agent name -> command template that starts it with {prompt} (L15)."),
    "roots": (list, "More roots to index, PATH or PATH:format each (``roots``)."),
    "recall": (dict, "The recall hook: enabled, max_bytes, timeout_ms (L18, ``RECALL_KEYS``)."),
    "hub": (dict, "The team hub ``convodex sync`` pushes to: url, token, team, include… (S6)."),
}

_loaded: dict[str, tuple[tuple[int, int], dict[str, object]]] = {}


def config_file() -> Path:
    """``$XDG_CONFIG_HOME/convodex/config.toml``, else ``~/.config/convodex/config.toml``."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base).expanduser() / APP / "config.toml"


def user_config() -> dict[str, object]:
    """The parsed config file (empty when there is none), cached while it is unchanged.

    A malformed file or a value of the wrong type is one ``ConfigError`` naming the
    file and the problem; nothing is half-applied.
    """
    path = config_file()
    try:
        st = path.stat()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror})") from exc
    import tomllib  # only with a file to parse

    stamp = (st.st_mtime_ns, st.st_size)
    cached = _loaded.get(str(path))
    if cached is not None and cached[0] == stamp:
        return cached[1]
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot be read ({exc})") from exc
    for key, value in data.items():
        if key not in CONFIG_KEYS:
            known = ", ".join(sorted(CONFIG_KEYS))
            raise ConfigError(f"{path}: unknown setting {key!r} (known: {known})")
        expected = CONFIG_KEYS[key][0]
        if not isinstance(value, expected):
            kind = "a table" if expected is dict else f"a {expected.__name__}"
            raise ConfigError(f"{path}: {key} must be {kind}")
    _loaded[str(path)] = (stamp, data)
    return data


def config_table(name: str) -> dict[str, str]:
    """One table of string values (``[resume]``, ``[handoff]``); empty when absent."""
    table = user_config().get(name, {})
    assert isinstance(table, dict)
    for key, value in table.items():
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{config_file()}: [{name}] {key} must be a non-empty string")
    return dict(table)


# -- recall (L18) -------------------------------------------------------------------------
#
# The hook runs before every prompt of every agent it is wired into: it can be switched
# off for one session (the environment), one project (a ``.convodex.toml`` in the
# project or a directory above it) or everywhere (``[recall]`` in config.toml).

RECALL_ENV = "CONVODEX_RECALL"  # "0", "off", "false" or "no": recall prints nothing
PROJECT_CONFIG = ".convodex.toml"
# key -> (type, lowest, highest, default, why)
RECALL_KEYS: dict[str, tuple[type, int, int, int, str]] = {
    "enabled": (bool, 0, 1, 1, "false: the hook injects nothing"),
    "max_bytes": (int, 256, 64 * 1024, 2048, "the most bytes one injection adds to a prompt"),
    "timeout_ms": (int, 50, 10_000, 500, "past this the hook gives up and prints nothing"),
}


class RecallSettings(msgspec.Struct, frozen=True):
    enabled: bool = True
    max_bytes: int = RECALL_KEYS["max_bytes"][3]
    timeout_ms: int = RECALL_KEYS["timeout_ms"][3]


def _recall_table(table: object, where: Path) -> dict[str, object]:
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: recall must be a table")
    for key, value in table.items():
        if key not in RECALL_KEYS:
            known = ", ".join(RECALL_KEYS)
            raise ConfigError(f"{where}: unknown setting recall.{key} (known: {known})")
        kind, low, high, _, _ = RECALL_KEYS[key]
        if kind is bool:
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: recall.{key} must be true or false")
        elif isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ConfigError(f"{where}: recall.{key} must be an integer from {low} to {high}")
    return dict(table)


def project_config(start: Path) -> Path | None:
    """The nearest ``.convodex.toml`` in ``start`` or a directory above it."""
    for folder in (start, *start.parents):
        candidate = folder / PROJECT_CONFIG
        if candidate.is_file():
            return candidate
    return None


def recall_settings(cwd: Path | None = None) -> RecallSettings:
    """The recall settings for a prompt in ``cwd``: config.toml, then the project's file,
    then the environment (each later one wins). Bad values are one ``ConfigError``."""
    values: dict[str, object] = {}
    values.update(_recall_table(user_config().get("recall", {}), config_file()))
    found = project_config(cwd) if cwd is not None else None
    if found is not None:
        import tomllib

        try:
            with open(found, "rb") as handle:
                data = tomllib.load(handle)
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"{found}: cannot be read ({type(exc).__name__})") from exc
        values.update(_recall_table(data.get("recall", {}), found))
    switch = os.environ.get(RECALL_ENV, "").strip().lower()
    if switch in ("0", "off", "false", "no"):
        values["enabled"] = False
    return msgspec.convert(values, RecallSettings)


def recall_log_path() -> Path:
    """Where recall receipts are kept (time, session, refs, bytes; never a prompt)."""
    return data_home() / "recall" / "receipts.jsonl"
