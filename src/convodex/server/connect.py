"""Opening a server database by URL: the one module that chooses a dialect.

Kept apart from :mod:`convodex.server.db` so the dialects, which build on ``db``,
are imported by nothing that ``db`` itself imports (no cycle inside ``server/``).
"""

from __future__ import annotations

from pathlib import Path

from convodex import config
from convodex.errors import ConvodexError, QueryError
from convodex.server.db import Database

SERVER_EXTRA = "PostgreSQL support needs the server extra: pip install 'convodex[server]'"


def default_url() -> str:
    """The embedded default: a SQLite file under convodex's data directory."""
    return f"sqlite:///{config.data_home() / 'server' / 'server.sqlite'}"


def open_database(url: str, *, pool_size: int = 10) -> Database:
    """Open ``sqlite:///path`` or ``postgresql://…``; the caller closes it."""
    if url.startswith("sqlite://"):
        from convodex.server.dialects.sqlite import SQLiteDatabase

        # As in SQLAlchemy: sqlite:///relative/file, sqlite:////absolute/file.
        if not url.startswith("sqlite:///") or len(url) == len("sqlite:///"):
            raise QueryError("a SQLite database URL looks like sqlite:///path/to/file.sqlite")
        return SQLiteDatabase(Path(url[len("sqlite:///") :]))
    if url.startswith(("postgresql://", "postgres://")):
        try:
            from convodex.server.dialects.postgresql import PostgresDatabase
        except ModuleNotFoundError as exc:
            if exc.name not in ("psycopg", "psycopg_pool"):
                raise
            # The lean install (SPEC X8) has no PostgreSQL driver.
            raise ConvodexError(SERVER_EXTRA) from None
        except ImportError as exc:
            # Installed but unusable, e.g. psycopg finds no libpq.
            raise ConvodexError(f"PostgreSQL support is unavailable: {exc}") from None
        return PostgresDatabase(url, max_size=pool_size)
    raise QueryError("the database URL must start with sqlite:/// or postgresql://")
