"""Refs (SPEC L15): what ``show``, ``export``, ``resume``, the picker and MCP accept.

A ref is a session id, a unique id prefix of at least 6 characters, ``<id>#<index>``
(a hit's ``ref``), or a transcript path (optionally with ``#<index>``). Sessions live in
sources (one file, one session) or, in files of many (chat exports, resumed Claude Code
files), on the messages that name them (``messages.session_key``). An ambiguous ref is
an error listing its candidates; an unknown one says what was looked for.
"""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

from convodex.catalog.db import Catalog
from convodex.catalog.plan import MIN_SESSION_PREFIX
from convodex.catalog.rowids import ADDRESSES
from convodex.errors import NotFound, QueryError
from convodex.sqlite import marks

MAX_CANDIDATES = 8


class SessionRef(msgspec.Struct, frozen=True):
    """One session found by a ref: where it is, whose it is, and the message it names."""

    session_id: str
    session_path: str
    agent: str  # the source format (the ``--agent`` filter's names)
    workspace: str | None
    # The id of the file's own session: messages without a session of their own belong
    # to it (a chat export's conversations each have theirs).
    file_session: str
    message_index: int | None = None

    @property
    def ref(self) -> str:
        at = "" if self.message_index is None else f"#{self.message_index}"
        return f"{self.session_id}{at}"


class _Source(msgspec.Struct, frozen=True):
    id: int
    path: str
    format: str
    session_id: str
    workspace: str | None
    last_activity_at: int | None = None


_COLUMNS = "id, path, format, session_id, workspace, last_activity_at"


def resolve(catalog: Catalog, ref: str, root_ids: list[int] | None = None) -> SessionRef:
    """The session a ref names; ``root_ids`` limits it to a scoped service's roots."""
    text = ref.strip()
    if not text:
        raise QueryError("a ref is required: a session id, an id prefix, id#N or a path")
    index: int | None = None
    head, sep, tail = text.rpartition("#")
    if sep and head:
        if not tail.isdigit():
            raise QueryError("a ref's #N must be a message index (a number)")
        text, index = head, int(tail)
    if _looks_like_path(text):
        return _by_path(catalog, Path(text).expanduser(), index, root_ids)
    return _by_id(catalog, text, index, root_ids)


def _looks_like_path(text: str) -> bool:
    return os.sep in text or "/" in text or text.endswith((".json", ".jsonl"))


def _sources(
    catalog: Catalog, where: str, params: list[object], roots: list[int] | None
) -> list[_Source]:
    sql = f"SELECT {_COLUMNS} FROM sources WHERE {where}"
    if roots is not None:
        sql += f" AND root_id IN ({marks(roots)})"
        params = [*params, *roots]
    sql += " ORDER BY last_activity_at DESC, id"
    return [_Source(*row) for row in catalog.db.execute(sql, params)]


# A source's message rows: those in its slots.
_SOURCE_MESSAGES = f"slots AS s JOIN messages AS m ON {ADDRESSES.in_slot_sql('m.base', 's.slot')}"


def _keys_of(catalog: Catalog, source_id: int) -> list[str | None]:
    """The sessions a file holds: None for its own, each other one by its key."""
    return [
        None if row[0] is None else str(row[0])
        for row in catalog.db.execute(
            f"SELECT DISTINCT m.session_key FROM {_SOURCE_MESSAGES} WHERE s.source_id = ?",
            (source_id,),
        )
    ]


def _ref(src: _Source, session_id: str | None, index: int | None) -> SessionRef:
    return SessionRef(
        session_id=session_id or src.session_id,
        session_path=src.path,
        agent=src.format,
        workspace=src.workspace,
        file_session=src.session_id,
        message_index=index,
    )


def _by_path(
    catalog: Catalog, path: Path, index: int | None, roots: list[int] | None
) -> SessionRef:
    full = path.resolve() if path.exists() else Path(os.path.abspath(path))
    found = _sources(catalog, "path = ?", [str(full)], roots)
    if not found:
        return _unindexed(full, index)
    return _in_file(catalog, found[0], index, str(full))


def _in_file(catalog: Catalog, src: _Source, index: int | None, named: str) -> SessionRef:
    """The file's session a ref means: the one holding message ``index``, else the only
    one it holds (a file of many conversations needs the ref to say which)."""
    if index is not None:
        row = catalog.db.execute(
            f"SELECT m.session_key FROM {_SOURCE_MESSAGES} "
            "WHERE s.source_id = ? AND m.message = ? LIMIT 1",
            (src.id, index),
        ).fetchone()
        return _ref(src, None if row is None else row[0], index)
    keys = _keys_of(catalog, src.id)
    if None in keys or not keys:
        return _ref(src, None, index)  # the file's own session (with others, maybe)
    if len(keys) > 1:
        raise QueryError(_ambiguous(named, [k for k in keys if k is not None]))
    return _ref(src, keys[0], index)


def _unindexed(path: Path, index: int | None) -> SessionRef:
    """A transcript the catalog does not know yet: its format detected, read directly."""
    from convodex.sources.discover import FORMATS, detect

    try:
        st = path.stat()
    except OSError as exc:
        raise NotFound(f"no transcript at {path}") from exc
    fmt = detect(path, st.st_ino, None) if path.is_file() else None
    if fmt is None:
        raise NotFound(f"{path} is not a transcript convodex can read")
    info = FORMATS[fmt].info(path)
    src = _Source(0, str(path), fmt, info.session_id, info.workspace_root)
    return _ref(src, None, index)


def _by_id(catalog: Catalog, value: str, index: int | None, roots: list[int] | None) -> SessionRef:
    exact = _sources(catalog, "session_id = ?", [value], roots)
    if exact:
        return _in_file(catalog, exact[0], index, value)
    keyed = _keyed(catalog, "session_key = ?", value, roots)
    if keyed:
        return _ref(keyed[0][0], value, index)
    if len(value) < MIN_SESSION_PREFIX:
        raise NotFound(
            f"no session {value!r} (a prefix needs at least {MIN_SESSION_PREFIX} characters)"
        )
    pattern = value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    candidates: dict[str, tuple[_Source, str | None]] = {}
    for src in _sources(catalog, "session_id LIKE ? ESCAPE '\\'", [pattern], roots):
        candidates.setdefault(src.session_id, (src, None))
    for src, key in _keyed(catalog, "session_key LIKE ?", pattern, roots):
        candidates.setdefault(key, (src, key))
    if not candidates:
        raise NotFound(f"no session {value!r}")
    if len(candidates) > 1:
        raise QueryError(_ambiguous(value, list(candidates)))
    src, named = next(iter(candidates.values()))
    return _ref(src, named, index)


def _keyed(
    catalog: Catalog, condition: str, value: str, roots: list[int] | None
) -> list[tuple[_Source, str]]:
    """Sessions inside files of many: (their file, their id)."""
    rows = catalog.db.execute(
        "SELECT DISTINCT s.source_id, m.session_key FROM messages AS m "
        f"JOIN slots AS s ON s.slot = {ADDRESSES.slot_sql('m.base')} "
        f"WHERE m.{condition}" + (" ESCAPE '\\'" if "LIKE" in condition else "") + " LIMIT 100",
        (value,),
    ).fetchall()
    out = []
    for source_id, key in rows:
        found = _sources(catalog, "id = ?", [int(source_id)], roots)
        if found:
            out.append((found[0], str(key)))
    # A session continued in another file (a resumed Claude Code session) is in both:
    # the most recently active file holds its latest state, as for sources above.
    out.sort(key=lambda pair: (-(pair[0].last_activity_at or 0), pair[0].id))
    return out


def _ambiguous(value: str, names: list[str]) -> str:
    shown = sorted(set(names))
    more = len(shown) - MAX_CANDIDATES
    listed = ", ".join(shown[:MAX_CANDIDATES]) + (f" and {more} more" if more > 0 else "")
    return f"ref {value!r} is ambiguous: it matches {len(shown)} sessions: {listed}"


# -- a session's source, by id or path (the façade's lookups) ------------------------


def source_ref(
    catalog: Catalog, session_id: str | None, path: str | None, root_ids: list[int] | None
) -> SessionRef:
    """The session of an id (its newest source) or of a transcript path, within
    ``root_ids`` (a scoped service's roots; None: all)."""
    where: list[str] = []
    params: list[str | int] = []
    if path:
        where.append("path = ?")
        params.append(path)
    if session_id:
        where.append("session_id = ?")
        params.append(session_id)
    if not where:
        raise QueryError("a session id or path is required")
    if root_ids is not None:
        where.append(f"root_id IN ({marks(root_ids)})")
        params.extend(root_ids)
    row = catalog.db.execute(
        f"SELECT path, format, session_id, workspace FROM sources WHERE {' AND '.join(where)} "
        "ORDER BY last_activity_at DESC LIMIT 1",
        params,
    ).fetchone()
    if row is None and session_id:
        # A session inside a file of many (an Aider run, a chat export's conversation):
        # named by its messages, in the file given.
        keyed = _keyed(catalog, "session_key = ?", session_id, root_ids)
        src = next((s for s, _ in keyed if path is None or s.path == path), None)
        if src is not None:
            return _ref(src, session_id, None)
    if row is None:
        raise NotFound("unknown session")
    found_path, fmt, file_session, workspace = row
    return SessionRef(
        session_id=session_id or str(file_session or ""),
        session_path=str(found_path),
        agent=str(fmt),
        workspace=workspace,
        file_session=str(file_session or ""),
    )


def agents(catalog: Catalog, root_ids: list[int] | None) -> list[str]:
    """The agents (source formats) the catalog holds sessions of, by name."""
    sql, params = "SELECT DISTINCT format FROM sources", []
    if root_ids is not None:
        sql += f" WHERE root_id IN ({marks(root_ids)})"
        params = root_ids
    return sorted(str(row[0]) for row in catalog.db.execute(sql, params))


def root_of(catalog: Catalog, path: str) -> Path | None:
    """The root a source was found under (None: not a known source)."""
    row = catalog.db.execute(
        "SELECT r.path FROM sources s JOIN roots r ON r.id = s.root_id WHERE s.path = ?", (path,)
    ).fetchone()
    return None if row is None else Path(row[0])


def root_paths(catalog: Catalog) -> list[Path]:
    """Every root the catalog has recorded."""
    return [Path(row[0]) for row in catalog.db.execute("SELECT path FROM roots")]


def message_count(catalog: Catalog) -> int:
    """How many messages the catalog holds: a sum over sources, not over messages."""
    row = catalog.db.execute("SELECT total(message_count) FROM sources").fetchone()
    return int(row[0] or 0)
