"""Search (SPEC L4): BM25 candidates from FTS5, then hydration from the sources.

SQLite chooses the final candidates from tokens alone; only then is each chosen
message read from its authoritative file (by stored byte offset) to build the
snippet and context. A candidate whose source no longer matches is dropped and
its source queued for reindexing.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from convodex import config
from convodex.catalog import spans
from convodex.catalog.batches import (
    KIND_BITS,
    SOURCE_SHIFT,
    SUBAGENT_BIT,
    TAIL_MARK,
    split_rowid,
)
from convodex.catalog.db import Catalog
from convodex.errors import QueryError
from convodex.sources.base import SessionInfo, SourceMessage
from convodex.sources.discover import FORMATS, source_stat
from convodex.sqlite import sqlite3
from convodex.text.documents import KINDS, Document, Kind, parse_kinds
from convodex.text.snippet import head, window
from convodex.text.tokens import QueryTerm, iter_tokens, parse_query

SNIPPET_RADIUS = 80
CONTEXT_CHARS = 400
MAX_BATCHES = 20
RANK_WINDOW = 20_000


@dataclass(frozen=True, slots=True)
class RuntimeState:
    """Which sessions are open, running or current in this process: never persisted."""

    open: frozenset[str] = frozenset()
    running: frozenset[str] = frozenset()
    current: str | None = None


@dataclass(slots=True)
class _SourceRow:
    id: int
    path: str
    format: str
    session_id: str
    last_activity_at: int | None
    byte_offset: int
    size: int | None
    mtime_ns: int | None
    inode: int | None
    info: SessionInfo | None = None
    changed: bool = False
    bad: bool = False
    messages: dict[int, SourceMessage | None] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Plan:
    """One search's fixed parts, shared by every page of candidates it reads."""

    terms: list[QueryTerm]
    kinds: tuple[Kind, ...]
    root_ids: list[int] | None
    latest: bool
    include_subagents: bool
    # The lowest rowid BM25 ranks per table (see ``Searcher._rank_window``), found once.
    windows: dict[str, int | None] = field(default_factory=dict)


def match_expression(terms: list[QueryTerm], phrases: bool = True) -> str:
    """The FTS5 MATCH text: every term required.

    A CJK run is a phrase of its bigrams where positions are kept; tool output keeps
    no positions (detail=none), so there its bigrams are simply all required.
    """
    parts = []
    for term in terms:
        if term.single_cjk:
            ch = term.tokens[0]
            parts.append(f'("{ch}"* OR "{TAIL_MARK}{ch}")')
        elif phrases:
            parts.append('"' + " ".join(term.tokens).replace('"', '""') + '"')
        else:
            parts.extend('"' + tok.replace('"', '""') + '"' for tok in term.tokens)
    return " AND ".join(parts)


def progress(catalog: Catalog, root_ids: list[int] | None = None) -> dict[str, Any]:
    """``{state, indexed, total, pending, failed, revision}`` from the catalog alone."""
    where, params = "", []
    if root_ids is not None:
        where = f"WHERE root_id IN ({', '.join('?' for _ in root_ids)})"
        params = list(root_ids)
    row = catalog.db.execute(
        "SELECT count(*), "
        "coalesce(sum(pending = 1), 0), "
        "coalesce(sum(pending = 0 AND health = 'failed'), 0), "
        "coalesce(sum(pending = 0 AND health IN ('ok', 'stale')), 0) "
        f"FROM sources {where}",
        params,
    ).fetchone()
    total, pending, failed, indexed = (int(v) for v in row)
    scanned_sql = "SELECT count(*) FROM roots WHERE scan_generation > 0"
    scan_params: list[Any] = []
    if root_ids is not None:
        scanned_sql += f" AND id IN ({', '.join('?' for _ in root_ids)})"
        scan_params = list(root_ids)
    scanned = catalog.db.execute(scanned_sql, scan_params).fetchone()[0]
    if catalog.mode == "degraded":
        state = "degraded"
    elif not scanned:
        state = "empty"
    elif pending:
        state = "indexing"
    else:
        state = "complete"
    return {
        "state": state,
        "indexed": indexed,
        "total": total,
        "pending": pending,
        "failed": failed,
        "revision": catalog.revision(),
    }


def root_ids_for(catalog: Catalog, roots: list[Path] | None) -> list[int] | None:
    if roots is None:
        return None
    ids = []
    for root in roots:
        row = catalog.db.execute("SELECT id FROM roots WHERE path = ?", (str(root),)).fetchone()
        if row is not None:
            ids.append(int(row[0]))
    return ids


def _query_key(
    terms: list[QueryTerm], kinds: tuple[Kind, ...], root_ids: list[int] | None, latest: bool
) -> str:
    raw = msgspec.json.encode([[list(t.tokens) for t in terms], list(kinds), root_ids, latest])
    return hashlib.blake2b(raw, digest_size=6).hexdigest()


def encode_cursor(revision: int, rank: float, rowid: int, key: str) -> str:
    raw = msgspec.json.encode([1, revision, rank, rowid, key])
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(cursor: str) -> tuple[int, float, int, str]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        version, revision, rank, rowid, key = msgspec.json.decode(
            base64.urlsafe_b64decode(padded.encode("ascii"))
        )
        if version != 1:
            raise ValueError("cursor version")
        return int(revision), float(rank), int(rowid), str(key)
    except (ValueError, TypeError, msgspec.DecodeError, UnicodeError) as exc:
        raise QueryError("invalid cursor") from exc


def validate_limit(limit: int | None) -> int:
    if limit is None:
        return config.DEFAULT_SEARCH_LIMIT
    if limit < 1 or limit > config.MAX_SEARCH_LIMIT:
        raise QueryError(f"limit must be between 1 and {config.MAX_SEARCH_LIMIT}")
    return limit


class Searcher:
    """Runs one search against one catalog; hydrates hits from their sources."""

    def __init__(self, catalog: Catalog, runtime: RuntimeState | None = None) -> None:
        self.catalog = catalog
        self.runtime = runtime or RuntimeState()

    def search(
        self,
        query: str,
        kinds: list[str] | tuple[str, ...] | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        roots: list[Path] | None = None,
        around: int = 0,
        latest: bool = False,
        include_subagents: bool = False,
    ) -> dict[str, Any]:
        """Ranked by BM25, or newest first with ``latest`` (the source's last activity)."""
        terms = parse_query(query)
        kind_list = parse_kinds(kinds)
        limit = validate_limit(limit)
        if around < 0 or around > config.MAX_AROUND:
            raise QueryError(f"around must be between 0 and {config.MAX_AROUND}")
        root_ids = root_ids_for(self.catalog, roots)
        key = _query_key(terms, kind_list, root_ids, latest)
        key += "+s" if include_subagents else ""
        revision = self.catalog.revision()
        after: tuple[float, int] | None = None
        if cursor:
            cur_revision, rank, rowid, cur_key = decode_cursor(cursor)
            if cur_key != key:
                raise QueryError("cursor belongs to a different query")
            if cur_revision != revision:
                return self._answer([], None, revision, True, root_ids)
            after = (rank, rowid)
        plan = _Plan(terms, kind_list, root_ids, latest, include_subagents)
        hits, last, more = self._collect(plan, limit, after, around)
        next_cursor = encode_cursor(revision, last[0], last[1], key) if more and last else None
        return self._answer(hits, next_cursor, revision, False, root_ids)

    def _answer(
        self,
        hits: list[dict[str, Any]],
        next_cursor: str | None,
        revision: int,
        stale: bool,
        root_ids: list[int] | None,
    ) -> dict[str, Any]:
        return {
            "hits": hits,
            "nextCursor": next_cursor,
            "revision": revision,
            "staleCursor": stale,
            "progress": progress(self.catalog, root_ids),
        }

    def _candidates(
        self, plan: _Plan, after: tuple[float, int] | None, count: int
    ) -> list[tuple[int, float, float]]:
        """The next ``count`` (rowid, rank, order key) candidates, every filter inside SQL."""
        terms, kinds, root_ids, latest = plan.terms, plan.kinds, plan.root_ids, plan.latest
        selects: list[str] = []
        params: list[Any] = []
        main_kinds = [k for k in kinds if k != "tool_output"]
        # Newest-first never needs BM25, the costly part of a common word's search.
        rank = "0.0 AS rank" if latest else "rank"
        if main_kinds:
            expression = match_expression(terms)
            sql = f"SELECT rowid, {rank} FROM documents WHERE documents MATCH ?"
            params.append(expression)
            if len(main_kinds) < len(KINDS) - 1:
                sql += f" AND (rowid & 7) IN ({', '.join('?' for _ in main_kinds)})"
                params.extend(KIND_BITS[k] for k in main_kinds)
            if not latest:
                sql += self._rank_window(plan, "documents", expression, params)
            selects.append(sql)
        if "tool_output" in kinds:
            expression = match_expression(terms, phrases=False)
            sql = f"SELECT rowid, {rank} FROM outputs WHERE outputs MATCH ?"
            params.append(expression)
            if not latest:
                sql += self._rank_window(plan, "outputs", expression, params)
            selects.append(sql)
        if latest:
            # Newest first: the source's last activity, then later messages first.
            key = (
                f"coalesce((SELECT last_activity_at FROM sources WHERE id = rowid >> "
                f"{SOURCE_SHIFT}), 0)"
            )
            order, after_cmp = "key DESC, rowid DESC", "(key < ? OR (key = ? AND rowid < ?))"
        else:
            key, order, after_cmp = "rank", "key, rowid", "(key > ? OR (key = ? AND rowid > ?))"
        sql = (
            f"SELECT rowid, rank, key FROM (SELECT rowid, rank, {key} AS key FROM ("
            + " UNION ALL ".join(selects)
            + ")) WHERE 1"
        )
        if after is not None:
            sql += f" AND {after_cmp}"
            params.extend([after[0], after[0], after[1]])
        if root_ids is not None:
            sql += (
                f" AND (rowid >> {SOURCE_SHIFT}) IN (SELECT id FROM sources WHERE root_id IN "
                f"({', '.join('?' for _ in root_ids)}))"
            )
            params.extend(root_ids)
        if not plan.include_subagents:
            # Sub-agent and headless sessions, and sub-agent work inside a parent's file,
            # are left out unless asked for: inside SQL, before ranking and the limit.
            sql += (
                f" AND (rowid & {SUBAGENT_BIT}) = 0 AND (rowid >> {SOURCE_SHIFT}) NOT IN "
                "(SELECT id FROM sources WHERE subagent = 1)"
            )
        sql += f" ORDER BY {order} LIMIT ?"
        params.append(count)
        try:
            return [
                (int(r[0]), float(r[1]), float(r[2])) for r in self.catalog.db.execute(sql, params)
            ]
        except sqlite3.OperationalError as exc:
            raise QueryError("query cannot be searched") from exc

    def _rank_window(self, plan: _Plan, table: str, expression: str, params: list[Any]) -> str:
        """Bound BM25's work: when a query matches more than ``RANK_WINDOW`` documents,
        rank only the most recently indexed ``RANK_WINDOW`` of them.

        FTS5 scores every match before it can sort, so an all-common-words query would
        cost time in proportion to the whole history. The window is the same for every
        page of one catalog revision, so cursors stay exact.
        """
        if table not in plan.windows:
            row = self.catalog.db.execute(
                f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid DESC "
                "LIMIT 1 OFFSET ?",
                (expression, RANK_WINDOW - 1),
            ).fetchone()
            plan.windows[table] = None if row is None else int(row[0])
        lowest = plan.windows[table]
        if lowest is None:
            return ""
        params.append(lowest)
        return " AND rowid >= ?"

    def _collect(
        self, plan: _Plan, limit: int, after: tuple[float, int] | None, around: int
    ) -> tuple[list[dict[str, Any]], tuple[float, int] | None, bool]:
        hits: list[dict[str, Any]] = []
        sources: dict[int, _SourceRow | None] = {}
        last = after
        try:
            for _ in range(MAX_BATCHES):
                want = limit - len(hits)
                batch = self._candidates(plan, last, want + 1)
                for rowid, rank, order_key in batch:
                    if len(hits) == limit:
                        return hits, last, True  # another candidate follows ``last``
                    hit = self._hydrate(rowid, rank, plan.terms, sources, around)
                    last = (order_key, rowid)
                    if hit is not None:
                        hits.append(hit)
                if len(batch) <= want:
                    return hits, last, False  # the candidates ran out
            return hits, last, True
        finally:
            self._queue_changed(sources)

    def _source(self, source_id: int, cache: dict[int, _SourceRow | None]) -> _SourceRow | None:
        if source_id in cache:
            return cache[source_id]
        row = self.catalog.db.execute(
            "SELECT id, path, format, session_id, last_activity_at, byte_offset, size, mtime_ns, "
            "inode FROM sources WHERE id = ?",
            (source_id,),
        ).fetchone()
        src = _SourceRow(*row) if row is not None else None
        if src is not None:
            try:
                st = source_stat(src.format, src.path)
            except OSError:
                src.bad = True
            else:
                if st.inode != src.inode or st.size < src.byte_offset:
                    src.bad = True
                elif (st.size, st.mtime_ns) != (src.size, src.mtime_ns):
                    src.changed = True  # appended since indexing: rows still valid, queue it
        cache[source_id] = src
        return src

    def _message(self, src: _SourceRow, index: int) -> SourceMessage | None:
        if index in src.messages:
            return src.messages[index]
        span = spans.lookup(self.catalog.db, src.id, index)
        return None if span is None else self._load(src, index, span[0], span[1])

    def _load(self, src: _SourceRow, index: int, offset: int, length: int) -> SourceMessage | None:
        """One message read from its authoritative file (cached per search)."""
        if index not in src.messages:
            try:
                src.messages[index] = FORMATS[src.format].load(
                    Path(src.path), offset, length, index
                )
            except OSError:
                src.messages[index] = None
        return src.messages[index]

    def _hydrate(
        self,
        rowid: int,
        rank: float,
        terms: list[QueryTerm],
        sources: dict[int, _SourceRow | None],
        around: int,
    ) -> dict[str, Any] | None:
        source_id, index, part, kind = split_rowid(rowid)
        src = self._source(source_id, sources)
        if src is None or src.bad:
            return None
        message = self._message(src, index)
        doc = (
            None
            if message is None
            else next((d for d in message.documents if (d.part, d.kind) == (part, kind)), None)
        )
        span = None if doc is None else _first_match(doc, terms)
        if message is None or doc is None or span is None:
            src.bad = True  # the bytes no longer say what was indexed
            return None
        if src.info is None:
            src.info = FORMATS[src.format].info(Path(src.path))
        info = src.info
        # A file of many conversations (chat export) names each message's own.
        session_id = message.session_id or info.session_id or src.session_id
        hit: dict[str, Any] = {
            "sessionId": session_id,
            "sessionPath": src.path,
            "sourceFormat": src.format,
            "messageIndex": index,
            "partIndex": part,
            "kind": doc.kind,
            "role": message.role,
            "toolName": doc.tool_name,
            "snippet": window(doc.text, span[0], span[1], SNIPPET_RADIUS),
            "score": round(-rank, 6),
            "sessionTitle": message.title if message.session_id else info.title,
            "workspaceRoot": info.workspace_root,
            "lastActivityAt": src.last_activity_at,
            "open": session_id in self.runtime.open,
            "running": session_id in self.runtime.running,
            "current": session_id == self.runtime.current,
        }
        if around:
            hit["around"] = self._around(src, index, around, around)
        return hit

    def _around(self, src: _SourceRow, index: int, before: int, after: int) -> list[dict[str, Any]]:
        out = []
        for i, offset, length in spans.lookup_range(
            self.catalog.db, src.id, index - before, index + after
        ):
            message = self._load(src, i, offset, length)
            if message is None:
                continue
            out.append(
                {
                    "messageIndex": i,
                    "role": message.role,
                    "text": head(message.text(), CONTEXT_CHARS),
                    "hit": i == index,
                }
            )
        return out

    def around(
        self, session_path: str, message_index: int, before: int = 3, after: int = 3
    ) -> list[dict[str, Any]]:
        """The messages around one message of a session, read from its source."""
        if not (0 <= before <= config.MAX_AROUND and 0 <= after <= config.MAX_AROUND):
            raise QueryError(f"before and after must be between 0 and {config.MAX_AROUND}")
        row = self.catalog.db.execute(
            "SELECT id FROM sources WHERE path = ?", (os.fspath(session_path),)
        ).fetchone()
        if row is None:
            raise QueryError("unknown session")
        src = self._source(int(row[0]), {})
        if src is None or src.bad:
            return []
        return self._around(src, message_index, before, after)

    def _queue_changed(self, sources: dict[int, _SourceRow | None]) -> None:
        """Sources that changed since indexing go back in the queue (never in degraded mode)."""
        changed = [s.id for s in sources.values() if s is not None and (s.bad or s.changed)]
        if not changed or not self.catalog.writable:
            return
        try:
            with self.catalog.transaction() as db:
                db.executemany(
                    "UPDATE sources SET pending = 1, health = CASE WHEN health = 'ok' "
                    "THEN 'stale' ELSE health END WHERE id = ?",
                    [(i,) for i in changed],
                )
        except sqlite3.OperationalError:
            pass  # busy: the next scan notices the change anyway


def _first_match(doc: Document, terms: list[QueryTerm]) -> tuple[int, int] | None:
    """Span of the first token matching a query term, if the document has every term."""
    if doc.text.isascii() and all(t.isascii() for term in terms for t in term.tokens):
        return _first_ascii_match(doc.text, terms)
    return _first_token_match(doc.text, terms)


def _first_token_match(text: str, terms: list[QueryTerm]) -> tuple[int, int] | None:
    """The general path: walk the text's tokens (CJK bigrams, folded words)."""
    wanted: dict[str, int] = {}
    singles: list[tuple[int, str]] = []
    for n, term in enumerate(terms):
        if term.single_cjk:
            singles.append((n, term.tokens[0]))
        else:
            wanted.update((text, n) for text in term.tokens)
    found: set[int] = set()
    first: tuple[int, int] | None = None
    for tok in iter_tokens(text):
        hit: int | None = wanted.get(tok.text)
        if hit is None and tok.cjk:
            hit = next((n for n, ch in singles if ch in tok.text), None)
        if hit is None:
            continue
        found.add(hit)
        if first is None:
            first = (tok.start, tok.end)
    return first if len(found) == len(terms) else None


def _first_ascii_match(text: str, terms: list[QueryTerm]) -> tuple[int, int] | None:
    """The same answer for ASCII text and words, found by one regex instead of tokenizing."""
    term_of = {token: n for n, term in enumerate(terms) for token in term.tokens}
    found: set[int] = set()
    first: tuple[int, int] | None = None
    for match in _words_pattern(tuple(sorted(term_of))).finditer(text):
        found.add(term_of[match.group(0).lower()])
        if first is None:
            first = match.span()
        if len(found) == len(terms):
            break
    return first if len(found) == len(terms) else None


@functools.lru_cache(maxsize=256)
def _words_pattern(tokens: tuple[str, ...]) -> re.Pattern[str]:
    """Whole ASCII tokens (runs of letters, digits and ``_``) equal to one of ``tokens``."""
    alternatives = "|".join(re.escape(t) for t in sorted(tokens, key=len, reverse=True))
    return re.compile(rf"(?<![A-Za-z0-9_])(?:{alternatives})(?![A-Za-z0-9_])", re.IGNORECASE)
