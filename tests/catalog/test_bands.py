"""Impact bands (``catalog.speed.bands``): a frequent word's first page from a few hundred
documents is FTS5's page, hit for hit and score for score, and stays so as sessions
grow, shrink and change."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import corpus
from convodex.catalog.batches import projection_text
from convodex.catalog.db import Catalog, open_catalog
from convodex.catalog.indexer import Indexer
from convodex.catalog.plan import SearchRequest, make_plan
from convodex.catalog.search import Searcher
from convodex.catalog.speed import bands
from convodex.catalog.speed.settings import Accelerators
from convodex.catalog.speed.wing import Wing
from convodex.models import Hit
from convodex.sqlite import sqlite3
from helpers import append_lines, write_session

LIMITS = (1, 20, 50, 100, 200)


# Bands alone (every other accelerator off), and for the small history: bands of the
# words in at least 300 documents, four at most.
BANDS = Wing(Accelerators(bands=True))
SMALL = Wing(Accelerators(bands=True, band_least_matches=300, band_most=4))


def page(catalog: Catalog, query: str, *, use_bands: bool, **options: Any) -> tuple[Any, ...]:
    """One page as (hits, next cursor), with or without bands."""
    speed = BANDS if use_bands else Wing()
    result = Searcher(catalog, speed=speed).search(SearchRequest(query=query, **options))
    return result.hits, result.next_cursor


def answered(catalog: Catalog, query: str, count: int = 51, **options: Any) -> bool:
    """Whether a current band answers this search's first page."""
    plan = make_plan(catalog, SearchRequest(query=query, **options))
    return bands.first(catalog, plan, count) is not None


def same_pages(catalog: Catalog, term: str) -> None:
    """Every first page of ``term``, and the page after it, is FTS5's."""
    for limit in LIMITS:
        with_bands = page(catalog, term, use_bands=True, limit=limit)
        assert with_bands == page(catalog, term, use_bands=False, limit=limit), (term, limit)
        hits, cursor = with_bands
        if cursor is not None:
            after = page(catalog, term, use_bands=True, limit=limit, cursor=cursor)
            assert after == page(catalog, term, use_bands=False, limit=limit, cursor=cursor)


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Catalog]:
    cache = tmp_path_factory.mktemp("bands")
    with open_catalog(cache) as catalog:
        Indexer(catalog).run([Path(corpus.cached("native", 6, 12).out)])
        assert bands.refresh(catalog, least=1000, most=6, budget=4.0) == 6
        yield catalog


def test_a_band_gives_fts5s_first_pages_from_a_few_hundred_documents(history: Catalog) -> None:
    stored = bands.stored(history.db)
    assert len(stored) == 6 and "the" in stored
    for term, band in stored.items():
        # A real cut: the band holds a fraction of the word's documents.
        assert bands.DEPTH <= len(band.members) < band.hits / 3, term
        assert answered(history, term, count=bands.DEPTH)
        same_pages(history, term)
    hits, _ = page(history, "The", use_bands=True, limit=50)
    assert len(hits) == 50 and all(isinstance(h, Hit) for h in hits)


@pytest.mark.parametrize(
    "query, options",
    [
        ("the project:atlas", {}),
        ("the kind:tool_output", {}),
        ("the", {"sort": "newest"}),
        ("the", {"include_subagents": True}),
        ("the", {"since": "2020-01-01"}),
        ("the", {"agents": ["codex"]}),
        ("the*", {}),
        ("the error", {}),
        ('"the error"', {}),
        ("the OR error", {}),
        ("the tool:bash", {}),
    ],
)
def test_searches_a_band_cannot_answer_are_ranked_by_fts5(
    history: Catalog, query: str, options: dict[str, Any]
) -> None:
    assert not answered(history, query, **options)
    assert page(history, query, use_bands=True, **options) == page(
        history, query, use_bands=False, **options
    )


def test_a_page_beyond_the_band_is_ranked_by_fts5(history: Catalog) -> None:
    assert not answered(history, "the", count=bands.DEPTH + 1)


# -- keeping bands current -----------------------------------------------------------


def note(text: str, index: int) -> dict[str, Any]:
    return {"role": "user" if index % 2 else "assistant", "content": text}


def filler(words: int, index: int, times: int = 1) -> str:
    """A message with ``alpha`` ``times`` times among ``words`` other words."""
    return "alpha " * times + " ".join(f"w{index}x{i}" for i in range(words))


@pytest.fixture
def small(tmp_path: Path) -> Iterator[tuple[Catalog, Path]]:
    """A history of 60 sessions where ``alpha`` is in 720 messages, once to four times
    in messages of 5 to 44 other words (so which rank first depends on the average
    length), with its band (``SMALL``: refresh chooses words in at least 300 documents)."""
    root = tmp_path / "sessions"
    for s in range(60):
        messages = [
            note(filler(5 + (s * 7 + i * 3) % 40, i, 1 + (s * 5 + i) % 4), i) for i in range(12)
        ]
        write_session(root, f"s{s:02d}", messages)
    with open_catalog(tmp_path / "cache") as catalog:
        Indexer(catalog, speed=SMALL).run([root])
        assert "alpha" in bands.stored(catalog.db)
        assert answered(catalog, "alpha")
        yield catalog, root


def index_without_refresh(catalog: Catalog, root: Path) -> None:
    """Scan and index what changed, as a hint or a watcher does (no ``refresh``)."""
    indexer = Indexer(catalog, speed=SMALL)
    indexer.scan_root(root)
    indexer.index_pending()


def rebuilt(catalog: Catalog, term: str) -> bands.Band:
    with catalog.transaction():
        band = bands.build(catalog, term)
    assert band is not None
    return band


def test_appended_documents_join_the_band_in_the_commit_that_adds_them(
    small: tuple[Catalog, Path],
) -> None:
    catalog, root = small
    append_lines(root / "s07.jsonl", [note("alpha alpha alpha", 11), note("nothing here", 12)])
    index_without_refresh(catalog, root)
    assert answered(catalog, "alpha")  # followed: current without a rebuild
    band = bands.stored(catalog.db)["alpha"]
    fresh = rebuilt(catalog, "alpha")
    assert (band.hits, band.revision, band.totals) == (fresh.hits, fresh.revision, fresh.totals)
    assert {m[0] for m in fresh.members} <= {m[0] for m in band.members}
    assert {m for m in band.members if m[0] in {f[0] for f in fresh.members}} == set(fresh.members)
    hits, _ = page(catalog, "alpha", use_bands=True, limit=5)
    assert (Path(hits[0].session_path).name, hits[0].message_index) == ("s07.jsonl", 12)
    same_pages(catalog, "alpha")


def test_a_deleted_member_leaves_the_band_to_refresh(small: tuple[Catalog, Path]) -> None:
    catalog, root = small
    hits, _ = page(catalog, "alpha", use_bands=True, limit=1)
    top = Path(hits[0].session_path)
    write_session(root, top.stem, [note("a new start without that word", 0)])
    index_without_refresh(catalog, root)
    assert not answered(catalog, "alpha")
    same_pages(catalog, "alpha")
    assert SMALL.after_run(catalog) >= 1
    assert answered(catalog, "alpha")
    same_pages(catalog, "alpha")


def first_page(catalog: Catalog, count: int) -> set[int]:
    return {
        int(rowid)
        for (rowid,) in catalog.db.execute(
            "SELECT rowid FROM documents WHERE documents MATCH 'alpha' "
            "ORDER BY rank, rowid LIMIT ?",
            (count,),
        )
    }


def test_a_band_answers_while_the_average_length_stays_in_its_range(
    small: tuple[Catalog, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pages of 100 (this history's first 101 move with the average), from a band
    built for them: the band holds what the first 101 become as sessions grow."""
    catalog, root = small
    monkeypatch.setattr(bands, "DEPTH", 101)
    catalog.db.execute("DELETE FROM bands")
    catalog.db.execute("DELETE FROM catalog_meta WHERE key = 'bands_chosen'")
    assert SMALL.after_run(catalog) >= 1
    before, first_before = bands.stored(catalog.db)["alpha"], first_page(catalog, 101)
    write_session(root, "longer", [note(" ".join(f"n{i}" for i in range(60)), 0)] * 90)
    index_without_refresh(catalog, root)
    _, avgdl = bands._average(bands.stamp(catalog.db)[1] or b"")
    assert 1.08 < avgdl / before.avgdl < 1 + bands.SPREAD
    assert first_page(catalog, 101) != first_before
    assert answered(catalog, "alpha", count=101)
    same_pages(catalog, "alpha")


def test_a_band_is_not_used_once_the_average_length_drifts(
    small: tuple[Catalog, Path],
) -> None:
    catalog, root = small
    long = " ".join(f"long{i}" for i in range(2000))
    write_session(root, "long", [note(long, i) for i in range(12)])
    index_without_refresh(catalog, root)
    band = bands.stored(catalog.db)["alpha"]
    assert (band.revision, band.totals) == bands.stamp(catalog.db)  # followed ...
    assert not answered(catalog, "alpha")  # ... but the average moved out of its range
    same_pages(catalog, "alpha")
    SMALL.after_run(catalog)
    assert answered(catalog, "alpha")
    same_pages(catalog, "alpha")


@pytest.mark.parametrize("bound", ["FOLLOW_MAX_DOCUMENTS", "FOLLOW_MAX_CHARACTERS"])
def test_a_large_commit_leaves_the_bands_to_refresh(
    small: tuple[Catalog, Path], monkeypatch: pytest.MonkeyPatch, bound: str
) -> None:
    catalog, root = small
    monkeypatch.setattr(bands, bound, 5)
    write_session(root, "more", [note(filler(8, i), i) for i in range(10)])
    index_without_refresh(catalog, root)
    assert not answered(catalog, "alpha")
    same_pages(catalog, "alpha")
    Indexer(catalog, speed=SMALL).run([root])  # a run ends with a refresh
    assert answered(catalog, "alpha")
    same_pages(catalog, "alpha")


def test_a_rewritten_catalog_drops_its_bands(small: tuple[Catalog, Path]) -> None:
    catalog, root = small
    catalog.db.execute("UPDATE catalog_meta SET value = '0' WHERE key = 'projection_version'")
    from convodex.catalog.db import migrate

    migrate(catalog.db)
    assert bands.stored(catalog.db) == {}
    assert not answered(catalog, "alpha")


# -- counting as FTS5 does -------------------------------------------------------------

WORDS = st.sampled_from(["alpha", "Alpha", "ALPHA", "beta_x", "x1", "迁移", "é", "a-b", "c.d"])


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(st.lists(WORDS, max_size=12).map(" ".join), min_size=1, max_size=6))
def test_new_documents_are_counted_as_fts5_counts_them(texts: list[str]) -> None:
    """tf and length of a new document, counted here, are FTS5's (its docsize and its
    instances), for ASCII and other text, case and separators."""
    db = sqlite3.connect(":memory:")
    db.execute(
        "CREATE VIRTUAL TABLE documents USING fts5(tokens, content='', "
        "contentless_delete=1, detail=full, tokenize=\"ascii tokenchars '_'\")"
    )
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(documents, instance)")
    rows = [(i + 1, projection_text(text)) for i, text in enumerate(texts)]
    db.executemany("INSERT INTO documents(rowid, tokens) VALUES (?, ?)", rows)
    terms = {"alpha", "beta_x", "x1", "é", "a", "c"}
    counted = bands._count_terms(rows, terms)
    for term in terms:
        expected = {
            (int(doc), int(n))
            for doc, n in db.execute(
                "SELECT doc, count(*) FROM v WHERE term = ? GROUP BY doc", (term,)
            )
        }
        assert {(rowid, tf) for rowid, tf, _ in counted[term]} == expected, term
        for rowid, _, size in counted[term]:
            (blob,) = db.execute(
                "SELECT sz FROM documents_docsize WHERE id = ?", (rowid,)
            ).fetchone()
            assert size == next(bands._varints(bytes(blob)))


def test_another_writer_postpones_a_refresh_without_failing_the_run(
    small: tuple[Catalog, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bands are the catalog's optional part: a run whose refresh meets another
    process's write ends with what it indexed, and the next run builds them."""
    from convodex.catalog import db as catalog_db

    catalog, root = small
    write_session(root, "more", [note(filler(8, i), i) for i in range(3)])
    catalog.db.execute("DELETE FROM bands")
    catalog.db.execute("DELETE FROM catalog_meta WHERE key = 'bands_chosen'")
    monkeypatch.setattr(catalog_db, "WRITE_WAIT_SECONDS", 0.05)
    catalog.db.execute("PRAGMA busy_timeout = 10")
    other = sqlite3.connect(str(catalog.path), isolation_level=None)
    indexer = Indexer(catalog, speed=SMALL)
    indexer.scan_root(root)
    indexer.index_pending()
    other.execute("BEGIN IMMEDIATE")
    try:
        assert indexer.refresh_bands() == 0
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert not answered(catalog, "alpha")
    assert page(catalog, "alpha", use_bands=True, limit=3)[0]  # found all the same
    assert indexer.refresh_bands() >= 1
    assert answered(catalog, "alpha")


DIE_BEFORE_FOLLOWING = """
import os, sys
from pathlib import Path
from convodex.catalog.speed import bands
from convodex.catalog.db import open_catalog
from convodex.catalog.indexer import Indexer
from convodex.catalog.speed.settings import Accelerators
from convodex.catalog.speed.wing import Wing

def die(*args, **kwargs):
    os._exit(9)  # the commit is done; its band upkeep never runs

bands.follow = die
indexer = Indexer(open_catalog(Path(sys.argv[1])), speed=Wing(Accelerators(bands=True)))
indexer.scan_root(Path(sys.argv[2]))
indexer.index_pending()
"""


def test_an_indexer_dying_between_its_commit_and_the_bands_leaves_them_unused(
    small: tuple[Catalog, Path],
) -> None:
    """A band is current only with the catalog's own stamp: a process that commits new
    sessions and dies before it follows them leaves the band unused, never wrong."""
    import subprocess
    import sys

    catalog, root = small
    assert catalog.path is not None
    append_lines(root / "s03.jsonl", [note("alpha alpha alpha alpha", 12)])
    died = subprocess.run(
        [sys.executable, "-c", DIE_BEFORE_FOLLOWING, str(catalog.path.parent.parent), str(root)],
        capture_output=True,
        text=True,
    )
    assert died.returncode == 9, died.stderr
    assert not answered(catalog, "alpha")
    hits, _ = page(catalog, "alpha", use_bands=True, limit=1)
    assert (Path(hits[0].session_path).name, hits[0].message_index) == ("s03.jsonl", 12)
    same_pages(catalog, "alpha")
    assert SMALL.after_run(catalog) == 1
    assert answered(catalog, "alpha")
    same_pages(catalog, "alpha")
