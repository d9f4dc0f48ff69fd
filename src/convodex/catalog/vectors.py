"""Embeddings in the catalog (SPEC L19): derived data, computed after lexical indexing.

One int8 vector per user or assistant text part (tool calls and output are left to
BM25: their words are what people search them by), keyed by the part's document
address, so a source's vectors go with its rows (``commits.delete_source_rows``) and
a rewritten session gets new ones. ``embed_pending`` runs after an indexing run (the
scheduler's thread, or ``index`` once its lexical work is committed): lexical results
never wait for it. It reads each message again from its source by its stored span, as
hydration does; the catalog still holds no text. A different model's vectors are
dropped whole (``catalog_meta.embedding_model``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import msgspec

from convodex import semantic
from convodex.catalog import spans
from convodex.catalog.db import Catalog
from convodex.catalog.rowids import ADDRESSES, document_address, first_part
from convodex.errors import SourceError
from convodex.sources.base import Budget, ReadResult
from convodex.sqlite import marks, sqlite3, transaction

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from convodex.models import Event
    from convodex.semantic.static import StaticModel
    from convodex.sources.base import SourceFormat, SourceMessage

EMBEDDED_KINDS = ("user_text", "assistant_text")
# Parts shorter than this say too little to place by meaning ("ok", "yes, do it"):
# 32 keeps 77% of the parts of 24 (the vectors of the 64 MB benchmark: 5.0% → 3.9% of
# the corpus) and the same bench_quality figures (overall hit@1 / hit@5 0.79 / 0.88).
MIN_CHARS = 32
# Texts embedded at once, and sources committed in one transaction.
EMBED_BATCH = 256
COMMIT_SOURCES = 32


class EmbedStats(msgspec.Struct):
    """What one embedding pass did."""

    sources: int = 0
    vectors: int = 0
    bytes_embedded: int = 0
    seconds: float = 0.0


def quantize(vectors: npt.NDArray[np.float32]) -> list[bytes]:
    """Each unit vector as int8 bytes, scaled to its largest component: a quarter of
    float32's size. Only the direction matters for a cosine, so no scale is kept: the
    codes are normalised again when read (``matrix``)."""
    import numpy as np

    peaks = np.maximum(np.abs(vectors).max(axis=1), 1e-12)
    codes = np.clip(np.rint(vectors * (127.0 / peaks[:, None])), -127, 127).astype(np.int8)
    return [c.tobytes() for c in codes]


def _check_model(db: sqlite3.Connection, name: str) -> None:
    """Another model's vectors cannot be compared with this one's: dropped whole."""
    row = db.execute("SELECT value FROM catalog_meta WHERE key = 'embedding_model'").fetchone()
    if row is not None and row[0] == name:
        return
    with transaction(db):
        db.execute("DELETE FROM vectors")
        db.execute("DELETE FROM embedded")
        db.execute(
            "INSERT INTO catalog_meta(key, value) VALUES ('embedding_model', ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (name,),
        )


class Pending(NamedTuple):
    """An indexed source with messages not yet embedded (``pending_sources``)."""

    id: int
    path: str
    format: str
    byte_offset: int  # as read: a source moved since keeps no vectors of this pass
    done: int  # messages embedded
    indexed: int  # messages indexed


def pending_sources(db: sqlite3.Connection) -> list[Pending]:
    """Indexed sources with messages not yet embedded, most recent first."""
    return [
        Pending(int(a), str(b), str(c), int(d), int(e), int(f))
        for a, b, c, d, e, f in db.execute(
            "SELECT s.id, s.path, s.format, s.byte_offset, coalesce(e.messages, 0), "
            "s.message_count FROM sources AS s LEFT JOIN embedded AS e ON e.source_id = s.id "
            "WHERE s.pending = 0 AND s.health IN ('ok', 'stale') "
            "AND s.message_count > coalesce(e.messages, 0) "
            "ORDER BY s.last_activity_at DESC, s.id"
        )
    ]


def _unit_bases(db: sqlite3.Connection, source_id: int, low: int) -> dict[tuple[int, int], int]:
    """(message, first part) → unit base of the source's messages from ``low`` on."""
    return {
        (int(message), int(first)): int(base)
        for base, message, first in db.execute(
            "SELECT m.base, m.message, m.first_part FROM messages AS m "
            f"JOIN slots AS s ON s.slot = {ADDRESSES.slot_sql('m.base')} "
            "WHERE s.source_id = ? AND m.message >= ?",
            (source_id, low),
        )
    }


def _texts(db: sqlite3.Connection, source: Pending) -> list[tuple[int, str]] | None:
    """(address, text) of the parts to embed in the source's new messages; None when
    the file no longer says what was indexed (the indexer will see to it)."""
    from convodex.sources.registry import FORMATS

    source_id, fmt, done, count = source.id, source.format, source.done, source.indexed
    bases = _unit_bases(db, source_id, done)
    reader = FORMATS.get(fmt)
    if reader is None:
        return None
    try:
        messages = list(_messages(db, reader, source))
    except (OSError, ValueError, SourceError):
        return None
    if len(messages) < count - done:
        return None  # shorter than what was indexed: changed since
    out: list[tuple[int, str]] = []
    for message in messages:
        index = message.index
        for doc in message.documents:
            if doc.kind not in EMBEDDED_KINDS or len(doc.text.strip()) < MIN_CHARS:
                continue
            base = bases.get((index, first_part(doc.part // 4)))
            if base is not None:
                out.append((document_address(base, doc.part, doc.kind), doc.text))
    return out


def _messages(
    db: sqlite3.Connection, reader: SourceFormat, source: Pending
) -> Iterator[SourceMessage]:
    """The source's messages from the first not embedded: a new source read through
    once (the reader's pace, as indexing), a grown one by its new records' spans."""
    source_id, path, done, count = source.id, source.path, source.done, source.indexed
    if done == 0:
        for message in reader.read(Path(path), ReadResult(0, 0), Budget.from_env()):
            if message.index >= count:
                return
            yield message
        return
    for index, offset, length in spans.lookup_range(db, source_id, done, count - 1):
        loaded = reader.load(Path(path), offset, length, index)
        if loaded is None:
            raise SourceError(path, "a record moved since it was indexed")
        yield loaded


def embed_pending(
    catalog: Catalog,
    model: StaticModel,
    *,
    should_stop: Callable[[], bool] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> EmbedStats:
    """Embed every indexed message that has no vector yet; stops between sources when
    ``should_stop`` says so (the next pass goes on from there). ``progress``: (bytes
    of the sources done, of all to do) after each commit."""
    started = time.perf_counter()
    stats = EmbedStats()
    db = catalog.db
    _check_model(db, model.name)
    todo = pending_sources(db)
    total_bytes = sum(s.byte_offset for s in todo)
    for at in range(0, len(todo), COMMIT_SOURCES):
        if should_stop is not None and should_stop():
            break
        group = todo[at : at + COMMIT_SOURCES]
        found = [(source, _texts(db, source)) for source in group]
        texts = [text for _, parts in found if parts for _, text in parts]
        vectors = []
        for start in range(0, len(texts), EMBED_BATCH):
            vectors.extend(quantize(model.embed(texts[start : start + EMBED_BATCH])))
        rows: list[tuple[int, int, bytes]] = []  # (source, address, code)
        done: list[tuple[int, int]] = []
        position = 0
        for source, parts in found:
            # A source read short of what was indexed gets no vectors until it is
            # indexed again (which drops this mark): not retried by every pass.
            for address, text in parts or ():
                rows.append((source.id, address, vectors[position]))
                position += 1
                stats.bytes_embedded += len(text.encode("utf-8", "replace"))
            done.append((source.id, source.indexed))
        with transaction(db, wait_seconds=5.0):
            # Only sources still as read: another writer may have moved one meanwhile.
            read = {(s.id, s.byte_offset, s.indexed) for s in group}
            kept = {
                int(r[0])
                for r in db.execute(
                    "SELECT id, byte_offset, message_count FROM sources WHERE pending = 0 "
                    f"AND id IN ({marks(group)})",
                    [s.id for s in group],
                )
                if (int(r[0]), int(r[1]), int(r[2])) in read
            }
            db.executemany(
                "INSERT OR REPLACE INTO vectors(address, vec) VALUES (?, ?)",
                [r[1:] for r in rows if r[0] in kept],
            )
            db.executemany(
                "INSERT INTO embedded(source_id, messages) VALUES (?, ?) "
                "ON CONFLICT(source_id) DO UPDATE SET messages = excluded.messages",
                [d for d in done if d[0] in kept],
            )
            _bump(db)
        stats.sources += len([d for d in done if d[0] in kept])
        stats.vectors += sum(r[0] in kept for r in rows)
        if progress is not None:  # in the sources' bytes, as indexing reports
            progress(sum(s.byte_offset for s in todo[: at + COMMIT_SOURCES]), total_bytes)
    stats.seconds = time.perf_counter() - started
    return stats


def _bump(db: sqlite3.Connection) -> None:
    """A new generation of vectors: kept matrices are read again (``matrix``)."""
    db.execute(
        "INSERT INTO catalog_meta(key, value) VALUES ('vectors_generation', '1') "
        "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
    )


def has_vectors(db: sqlite3.Connection) -> bool:
    return db.execute("SELECT 1 FROM vectors LIMIT 1").fetchone() is not None


def vector_count(db: sqlite3.Connection) -> int:
    return int(db.execute("SELECT count(*) FROM vectors").fetchone()[0])


class Matrix(msgspec.Struct):
    """Every vector of a catalog in memory: addresses and float32 unit rows."""

    addresses: Any  # npt.NDArray[np.int64]
    rows: Any  # npt.NDArray[np.float32]


# One kept matrix per catalog file a process searches (a few at most: the history,
# a demo); the oldest goes past ``KEPT_MATRICES``.
_matrices: dict[str, tuple[tuple[int, int, str], Matrix]] = {}
KEPT_MATRICES = 4
_matrices_lock = threading.Lock()


def matrix(catalog: Catalog) -> Matrix:
    """The catalog's vectors, kept per process until its vectors or rows change."""
    import numpy as np

    db = catalog.db
    meta = dict(
        db.execute(
            "SELECT key, value FROM catalog_meta WHERE key IN "
            "('vectors_generation', 'revision', 'embedding_model')"
        ).fetchall()
    )
    stamp = (
        int(meta.get("vectors_generation") or 0),
        int(meta.get("revision") or 0),
        str(meta.get("embedding_model") or ""),
    )
    where = str(catalog.path or id(db))
    with _matrices_lock:
        kept = _matrices.get(where)
        if kept is not None and kept[0] == stamp:
            return kept[1]
    rows = db.execute("SELECT address, vec FROM vectors ORDER BY address").fetchall()
    if rows:
        addresses = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        codes = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.int8)
        values = codes.reshape(len(rows), codes.size // len(rows)).astype(np.float32)
        values /= np.maximum(np.linalg.norm(values, axis=1, keepdims=True), 1e-12)
    else:
        addresses = np.zeros(0, dtype=np.int64)
        values = np.zeros((0, 1), dtype=np.float32)
    found = Matrix(addresses=addresses, rows=values)
    with _matrices_lock:
        _matrices.pop(where, None)
        _matrices[where] = (stamp, found)
        while len(_matrices) > KEPT_MATRICES:
            del _matrices[next(iter(_matrices))]
    return found


def nearest(found: Matrix, query: npt.NDArray[np.float32], count: int) -> list[tuple[int, float]]:
    """The ``count`` addresses most like ``query``, best first: (address, cosine)."""
    import numpy as np

    if not len(found.addresses) or found.rows.shape[1] != query.shape[0]:
        return []
    scores = found.rows @ query
    count = min(count, len(scores))
    top = np.argpartition(-scores, count - 1)[:count]
    top = top[np.lexsort((found.addresses[top], -scores[top]))]
    return [(int(found.addresses[i]), float(scores[i])) for i in top]


def addresses_of_sources(db: sqlite3.Connection, source_ids: Sequence[int]) -> list[int]:
    """Every vector address of these sources (a session's vectors: ``similar``)."""
    out: list[int] = []
    for source_id in source_ids:
        slots = [
            r[0] for r in db.execute("SELECT slot FROM slots WHERE source_id = ?", (source_id,))
        ]
        for low, high in ADDRESSES.ranges(slots):
            out.extend(
                int(r[0])
                for r in db.execute(
                    "SELECT address FROM vectors WHERE address BETWEEN ? AND ?", (low, high)
                )
            )
    return out


def embed_if_enabled(
    catalog: Catalog,
    should_stop: Callable[[], bool] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> EmbedStats | None:
    """The embedding pass after indexing, when semantic search is installed and on;
    None when it is not, or the model cannot load (logged once by its class)."""
    if catalog.mode == "degraded" or not semantic.wanted():
        return None
    try:
        if not pending_sources(catalog.db):
            return EmbedStats()
    except sqlite3.OperationalError:
        return None
    from convodex.semantic.static import SemanticUnavailable, load

    try:
        model = load()
    except SemanticUnavailable:
        _warn_once("the embedding model cannot be loaded; search stays lexical (see doctor)")
        return None
    return embed_pending(catalog, model, should_stop=should_stop, progress=progress)


def after_indexing(catalog: Catalog, stopping: Callable[[], bool]) -> Callable[[Event], None]:
    """The scheduler's listener: embedding is background work too, after a scan or a
    hint has committed (on the scheduler's thread, ending when it stops)."""

    def embed(event: Event) -> None:
        if event.reason in ("complete", "removed", "hint"):
            embed_if_enabled(catalog, stopping)

    return embed


_warned: set[str] = set()  # the few fixed lines said once a process


def _warn_once(message: str) -> None:
    import logging

    if message not in _warned:
        _warned.add(message)
        logging.getLogger("convodex").warning(message)
