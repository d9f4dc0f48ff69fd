"""Grouped search (SPEC L19): each session once by its best hit, relaxed when needed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from convodex.catalog.db import Catalog
from convodex.catalog.indexer import Indexer
from convodex.catalog.ranked import HEAD
from convodex.errors import QueryError
from helpers import CliRun, as_json, search, speed, write_session

# Every behaviour here holds with no accelerator and with all of them (conftest).
pytestmark = pytest.mark.usefixtures("accelerators")


def said(*texts: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text} for text in texts]


def many_sessions(root: Path) -> None:
    """A session that says ``heron`` in every message, and others that say it once,
    with more or fewer other words around it (so BM25 orders them)."""
    write_session(root, "loud", said(*(f"heron heron step {i}" for i in range(30))))
    for i in range(12):
        filler = " ".join(f"w{n}" for n in range(i * 3))
        write_session(root, f"s{i:02}", said(f"heron {filler}", "nothing else here"))


def find(catalog: Catalog, query: str, **options: Any) -> dict[str, Any]:
    """A search page, grouped unless told (the library's default; ``helpers.search``
    looks at documents)."""
    return search(catalog, query, **{"group": True, **options})


def sessions(page: dict[str, Any]) -> list[str]:
    return [hit["sessionId"] for hit in page["hits"]]


def test_each_session_once_by_its_best_hit(root: Path, catalog: Catalog) -> None:
    many_sessions(root)
    Indexer(catalog, speed=speed()).run([root])
    grouped = find(catalog, "heron", limit=50)
    ungrouped = find(catalog, "heron", limit=50, group=False)
    # One hit per session, in the order of each session's first hit ungrouped.
    firsts = list(dict.fromkeys(h["sessionId"] for h in ungrouped["hits"]))
    assert sessions(grouped) == firsts and len(firsts) == 13
    by_ref = {h["ref"]: h for h in ungrouped["hits"]}
    for hit in grouped["hits"]:
        assert hit["ref"] in by_ref and hit["score"] == by_ref[hit["ref"]]["score"]
        assert hit["moreHits"] == (29 if hit["sessionId"] == "loud" else 0)
        # Its best moments: the session's next hits in the ungrouped order.
        nexts = [h for h in ungrouped["hits"] if h["sessionId"] == hit["sessionId"]][1:3]
        assert [m["ref"] for m in hit["moments"]] == [h["ref"] for h in nexts]
        assert [m["snippet"] for m in hit["moments"]] == [h["snippet"] for h in nexts]
    loud = next(h for h in grouped["hits"] if h["sessionId"] == "loud")
    assert len(loud["moments"]) == 2 and all("heron" in m["snippet"] for m in loud["moments"])
    assert len(ungrouped["hits"]) == 42 and all(h["moreHits"] == 0 for h in ungrouped["hits"])
    assert all("moments" not in h for h in ungrouped["hits"])
    assert grouped["grouped"] is True and ungrouped["grouped"] is False
    assert grouped["relaxed"] is False and grouped["nextCursor"] is None
    # Deterministic: the same answer again.
    assert find(catalog, "heron", limit=50) == grouped


def test_grouped_pages_show_every_session_once(root: Path, catalog: Catalog) -> None:
    many_sessions(root)
    Indexer(catalog, speed=speed()).run([root])
    whole = sessions(find(catalog, "heron", limit=50))
    walked: list[str] = []
    cursor = None
    while True:
        page = find(catalog, "heron", limit=4, cursor=cursor)
        walked += sessions(page)
        cursor = page["nextCursor"]
        if cursor is None:
            break
        assert len(page["hits"]) == 4
    assert walked == whole
    numbered = [sessions(find(catalog, "heron", limit=4, page=n)) for n in range(1, 6)]
    assert [s for page in numbered for s in page] == whole and numbered[-1] == []
    # A grouped cursor is no cursor for the ungrouped search.
    first = find(catalog, "heron", limit=4)
    with pytest.raises(QueryError, match="different query"):
        find(catalog, "heron", limit=4, group=False, cursor=first["nextCursor"])


def test_a_session_past_the_first_candidates_is_reached(root: Path, catalog: Catalog) -> None:
    """More than ``HEAD`` hits of one session before the next session's first."""
    write_session(root, "a-loud", said(*(f"ibis ibis {i}" for i in range(HEAD + 20))))
    write_session(root, "b-quiet", said("ibis " + " ".join(f"w{n}" for n in range(40))))
    Indexer(catalog, speed=speed()).run([root])
    page = find(catalog, "ibis", limit=1)
    assert sessions(page) == ["a-loud"] and page["hits"][0]["moreHits"] == HEAD + 19
    assert sessions(find(catalog, "ibis", limit=1, cursor=page["nextCursor"])) == ["b-quiet"]
    assert sessions(find(catalog, "ibis", limit=5)) == ["a-loud", "b-quiet"]


def test_all_the_words_finding_nothing_relaxes(root: Path, catalog: Catalog) -> None:
    write_session(root, "retry", said("we set up the retry with exponential backoff"))
    write_session(root, "lock", said("the deploy failed on a lock timeout"))
    write_session(root, "other", said("nothing about it"))
    Indexer(catalog, speed=speed()).run([root])
    strict = find(catalog, "deploy lock")
    assert sessions(strict) == ["lock"] and strict["relaxed"] is False
    loose = find(catalog, "the time the deploy failed because of a retry")
    assert loose["relaxed"] is True
    assert set(sessions(loose)) == {"retry", "lock"}
    assert sessions(loose)[0] == "lock"  # two of the words, against one
    # Negative terms still exclude; one word that finds nothing is just no hits.
    assert sessions(find(catalog, "deploy backoff -lock")) == ["retry"]
    assert find(catalog, "deploy backoff -lock")["relaxed"] is True
    nothing = find(catalog, "pelican")
    assert nothing["hits"] == [] and nothing["relaxed"] is False
    # Ungrouped, a search is the exact per-document answer, as before.
    assert find(catalog, "deploy backoff", group=False)["hits"] == []


def test_cli_groups_and_says_so(cli: CliRun, root: Path) -> None:
    many_sessions(root)
    as_json(cli("index", "--root", str(root), "--json"))
    text = cli("search", "heron", "--limit", "2").output.splitlines()
    # The loud session once: its best hit, its two next best moments, then the rest.
    at = text.index("  +27 more hits in this session")
    assert all(line.startswith("  #") and "heron heron step" in line for line in text[at - 3 : at])
    assert text[-1].startswith("31 hits in 2 sessions")
    grouped = as_json(cli("search", "heron", "--json"))
    assert grouped["grouped"] is True
    assert len({h["sessionId"] for h in grouped["hits"]}) == len(grouped["hits"]) == 13
    flat = as_json(cli("search", "heron", "--no-group", "--json"))
    assert flat["grouped"] is False and len(flat["hits"]) == 42
    assert [h["sessionId"] for h in flat["hits"]].count("loud") > 1
    relaxed = cli("search", "heron", "pelican")
    assert "no message has all the words: these have some of them" in relaxed.output
