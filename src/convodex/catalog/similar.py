"""More like this (SPEC L19 ``similar``): the sessions most like one session.

By meaning when the catalog holds the session's vectors: the mean of its parts'
vectors (its centroid) against every part of the other sessions, each session
scored by its nearest part. By words otherwise: the session's most telling words
(term frequency in it times inverse document frequency in the catalog, FTS5's own
counts through an ``fts5vocab`` table) searched as alternatives, each session once.
A session is a source here (a chat export's conversations share theirs); sub-agent
sessions are left out, and so is the session itself.
"""

from __future__ import annotations

import math
from collections import Counter

import msgspec

from convodex import config
from convodex.catalog import vectors
from convodex.catalog.db import Catalog
from convodex.catalog.hits import RuntimeState
from convodex.catalog.plan import SearchRequest
from convodex.catalog.recent import listed_sessions
from convodex.catalog.refs import SessionRef
from convodex.catalog.rowids import ADDRESSES
from convodex.catalog.search import Searcher
from convodex.errors import NotFound
from convodex.models import SessionDocument, SimilarPage, SimilarSession
from convodex.sqlite import bound_runs, marks
from convodex.text.tokens import tokenize

# The words a lexical "more like this" searches for.
TELLING_WORDS = 12
# A session's text read for its words: its first parts say what it is about.
WORDS_FROM_CHARS = 200_000
# Nearest parts to a session's centroid looked at (the other sessions' best parts).
NEAREST = 4000


def similar(
    catalog: Catalog,
    ref: SessionRef,
    document: SessionDocument,
    limit: int | None,
    mode: str,
    runtime: RuntimeState,
) -> SimilarPage:
    """The page for ``ref`` (``document``: its effective branch, replayed): semantic
    when ``mode`` allows and vectors exist, else lexical."""
    from convodex.catalog import hybrid

    row = catalog.db.execute(
        "SELECT id FROM sources WHERE path = ?", (ref.session_path,)
    ).fetchone()
    if row is None:
        raise NotFound(f"no indexed session for {ref.session_id}")
    source_id = int(row[0])
    texts = [
        part.text
        for entry in document.messages
        for part in entry.parts
        if part.kind in ("user_text", "assistant_text")
    ]
    count = config.search_limit(limit, 10)
    fusion, note = hybrid.prepare(catalog, mode, True)
    scored: list[tuple[int, float]] = []
    used = "lexical"
    if fusion is not None:
        scored = _by_meaning(catalog, source_id, count)
        used = "hybrid" if scored else "lexical"
    if not scored:
        scored = _by_words(catalog, texts, source_id, count, runtime)
    listed = listed_sessions(catalog, [s for s, _ in scored], runtime)
    sessions = [
        SimilarSession(**msgspec.structs.asdict(listed[sid]), similarity=round(score, 6))
        for sid, score in scored
        if sid in listed
    ]
    return SimilarPage(ref=ref.session_id, sessions=sessions, mode=used, mode_note=note)


def _by_meaning(catalog: Catalog, source_id: int, count: int) -> list[tuple[int, float]]:
    import numpy as np

    found = vectors.matrix(catalog)
    own = vectors.addresses_of_sources(catalog.db, [source_id])
    if not own or not len(found.addresses):
        return []
    wanted = np.asarray(own, dtype=np.int64)
    places = np.searchsorted(found.addresses, wanted)
    inside = places < len(found.addresses)
    places = places[inside][found.addresses[places[inside]] == wanted[inside]]
    if not len(places):  # not in the kept matrix (written since): nothing to compare
        return []
    centroid = found.rows[places].mean(0)
    norm = float(np.linalg.norm(centroid))
    if norm == 0.0:
        return []
    best: dict[int, float] = {}
    nearest = vectors.nearest(found, centroid / norm, NEAREST)
    sources = _sources_of(catalog, [a for a, _ in nearest])
    for address, score in nearest:
        sid = sources.get(address)
        if sid is None or sid == source_id:
            continue
        if score > best.get(sid, -2.0):
            best[sid] = score
    return sorted(best.items(), key=lambda item: (-item[1], item[0]))[:count]


def _sources_of(catalog: Catalog, addresses: list[int]) -> dict[int, int]:
    """The source of each address, sub-agent sessions left out."""
    slots = {a: ADDRESSES.slot(a) for a in addresses}
    wanted = sorted(set(slots.values()))
    owner: dict[int, int] = {}
    for chunk in bound_runs(wanted):
        owner.update(
            (int(slot), int(sid))
            for slot, sid in catalog.db.execute(
                "SELECT s.slot, s.source_id FROM slots AS s JOIN sources AS src "
                f"ON src.id = s.source_id WHERE src.subagent = 0 AND s.slot IN ({marks(chunk)})",
                chunk,
            )
        )
    return {a: owner[s] for a, s in slots.items() if s in owner}


def _by_words(
    catalog: Catalog, texts: list[str], source_id: int, count: int, runtime: RuntimeState
) -> list[tuple[int, float]]:
    words = telling_words(catalog, texts)
    if not words:
        return []
    query = " OR ".join(f'"{w}"' for w in words)
    page = Searcher(catalog, runtime).search(
        SearchRequest(query=query, limit=min(config.MAX_SEARCH_LIMIT, count + 1), mode="lexical")
    )
    shown = sorted({h.session_path for h in page.hits})
    paths = {
        str(p): int(i)
        for i, p in catalog.db.execute(
            f"SELECT id, path FROM sources WHERE path IN ({marks(shown)})", shown
        )
    }
    out: list[tuple[int, float]] = []
    for hit in page.hits:
        sid = paths.get(hit.session_path)
        if sid is not None and sid != source_id and sid not in {s for s, _ in out}:
            out.append((sid, hit.score))
    return out[:count]


def telling_words(catalog: Catalog, texts: list[str]) -> list[str]:
    """The session's words by tf·idf, rarest-but-shared first: words no other part
    holds find nothing else, so a word must occur in more documents than its own."""
    counts: Counter[str] = Counter()
    read = 0
    for text in texts:
        if read > WORDS_FROM_CHARS:
            break
        read += len(text)
        counts.update(t for t in tokenize(text) if len(t) > 2 and not t.isdigit())
    if not counts:
        return []
    db = catalog.db
    db.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.term_counts USING fts5vocab(main, documents, row)"
    )
    candidates = [w for w, _ in counts.most_common(400)]
    frequency = dict(
        db.execute(
            f"SELECT term, doc FROM temp.term_counts WHERE term IN ({marks(candidates)})",
            candidates,
        ).fetchall()
    )
    total = max(1, int(db.execute("SELECT count(*) FROM messages").fetchone()[0]))
    scored = []
    for word in candidates:
        df = int(frequency.get(word, 0))
        if df < 2 or df > total / 4:
            continue  # its own only, or everyone's
        scored.append((counts[word] * math.log(total / df), word))
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [w for _, w in scored[:TELLING_WORDS]]
