"""Search (SPEC L4, L7): ranking, kinds, paging, hydration from the source, progress."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from convodex.catalog.db import Catalog, open_catalog
from convodex.catalog.indexer import Indexer
from convodex.catalog.plan import SearchRequest, make_plan
from convodex.catalog.search import Searcher
from convodex.catalog.speed.settings import Accelerators
from convodex.catalog.speed.wing import Wing
from convodex.errors import QueryError
from convodex.models import to_builtins
from helpers import CliRun, as_json, search, speed, write_session

# Every behaviour here holds with no accelerator and with all of them (conftest).
pytestmark = pytest.mark.usefixtures("accelerators")

HIT_FIELDS = {
    "sessionId",
    "sessionPath",
    "sourceFormat",
    "messageIndex",
    "partIndex",
    "kind",
    "role",
    "toolName",
    "snippet",
    "score",
    "sessionTitle",
    "workspaceRoot",
    "lastActivityAt",
    "open",
    "running",
    "current",
    # L14: hits people can read
    "agent",
    "project",
    "messageAt",
    "ref",
    # L15: the command that reopens the session (null when its agent has none)
    "resumeCommand",
    # L19: grouped by session, how many more of it match
    "moreHits",
    # where the query matches the snippet: what a surface marks
    "highlights",
}

TOOL_SESSION = [
    {"role": "user", "content": "please deploy the kraken service", "createdAt": 1000},
    {
        "role": "assistant",
        "content": "Deploying.",
        "createdAt": 2000,
        "tool_calls": [
            {"id": "c1", "name": "bash", "arguments": '{"cmd": "kubectl rollout kraken"}'}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "name": "bash", "content": "kraken pods: 3 running"},
    {"role": "tool", "tool_call_id": "c1", "name": "bash", "content": "error: kraken crashed"},
]


def test_hit_carries_every_field(root: Path, catalog: Catalog) -> None:
    path = write_session(
        root, "s1", TOOL_SESSION, {"name": "Kraken deploy", "workspace_root": "/srv/k"}
    )
    Indexer(catalog, speed=speed()).run([root])
    result = search(catalog, "kraken")
    assert set(result) == {
        "hits",
        "nextCursor",
        "revision",
        "staleCursor",
        "subagentHits",
        "progress",
        "grouped",
        "relaxed",
        "mode",
        "modeNote",
    }
    assert result["mode"] == "lexical" and result["modeNote"] is None
    hit = result["hits"][0]
    assert set(hit) == HIT_FIELDS
    assert hit["sessionId"] == "s1" and hit["sessionPath"] == str(path)
    assert hit["sessionTitle"] == "Kraken deploy" and hit["workspaceRoot"] == "/srv/k"
    assert hit["sourceFormat"] == "session_log" and hit["lastActivityAt"] == 2000
    assert (hit["open"], hit["running"], hit["current"]) == (False, False, False)
    assert (hit["agent"], hit["project"]) == ("session-log", "/srv/k")
    assert hit["messageAt"] == 1000 and hit["ref"] == "s1#0"
    assert hit["resumeCommand"] is None  # convodex's own logs document no resume command
    assert [hit["snippet"][a:b] for a, b in hit["highlights"]] == ["kraken"]


def test_default_kinds_exclude_tool_output(root: Path, catalog: Catalog) -> None:
    write_session(root, "s1", TOOL_SESSION)
    Indexer(catalog, speed=speed()).run([root])
    found = {
        (h["messageIndex"], h["partIndex"], h["kind"], h["toolName"])
        for h in search(catalog, "kraken")["hits"]
    }
    assert found == {
        (0, 0, "user_text", None),
        (1, 1, "tool_input", "bash"),
        (3, 0, "tool_error", "bash"),
    }
    only_output = search(catalog, "kraken", kinds=["tool_output"])["hits"]
    assert [(h["messageIndex"], h["kind"]) for h in only_output] == [(2, "tool_output")]
    everything = search(
        catalog,
        "kraken",
        kinds=["user_text", "assistant_text", "tool_input", "tool_output", "tool_error"],
    )["hits"]
    assert len(everything) == 4


def test_bm25_ranking_and_tie_order(root: Path, catalog: Catalog) -> None:
    filler = " ".join(f"w{i}" for i in range(60))
    write_session(
        root,
        "a",
        [
            {"role": "user", "content": f"zebra {filler}"},
            {"role": "user", "content": "zebra zebra stripes"},
        ],
    )
    write_session(
        root,
        "b",
        [
            {"role": "user", "content": "same zebra words"},
            {"role": "user", "content": "same zebra words"},
        ],
    )
    Indexer(catalog, speed=speed()).run([root])
    hits = search(catalog, "zebra")["hits"]
    order = [(Path(h["sessionPath"]).stem, h["messageIndex"]) for h in hits]
    assert order[0] == ("a", 1)  # twice in a short message beats once in a long one
    assert order[-1] == ("a", 0)
    assert order[1:3] == [("b", 0), ("b", 1)]  # equal scores: message index order
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True)


def test_every_query_word_is_required_and_cjk_single_characters_match(
    root: Path, catalog: Catalog
) -> None:
    write_session(
        root,
        "s",
        [
            {"role": "user", "content": "数据库迁移失败"},
            {"role": "user", "content": "请迁移"},  # 移 ends the run
            {"role": "user", "content": "cache first"},
            {"role": "user", "content": "cache only"},
            {"role": "user", "content": "Café au lait"},
        ],
    )
    Indexer(catalog, speed=speed()).run([root])

    def idx(query: str) -> list[int]:
        return sorted(h["messageIndex"] for h in search(catalog, query)["hits"])

    assert idx("迁移") == [0, 1]
    assert idx("移") == [0, 1]
    assert idx("失") == [0]
    assert idx("数据库") == [0]
    assert idx("库数") == []  # a phrase, not a bag of bigrams
    assert idx("cache-first") == [2]
    assert idx("CAFE") == [4]
    assert idx("café") == [4]


def test_snippet_and_around_come_from_the_source(root: Path, catalog: Catalog) -> None:
    long_text = ("padding words " * 20) + "the   needle\n\nsits here " + ("trailing text " * 20)
    msgs = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"context {i}"}
        for i in range(10)
    ]
    msgs[5] = {"role": "assistant", "content": long_text}
    write_session(root, "s", msgs)
    Indexer(catalog, speed=speed()).run([root])
    hit = search(catalog, "needle", around=2)["hits"][0]
    assert hit["snippet"].startswith("…") and hit["snippet"].endswith("…")
    assert "the needle sits here" in hit["snippet"]
    assert [(c["messageIndex"], c["hit"]) for c in hit["around"]] == [
        (3, False),
        (4, False),
        (5, True),
        (6, False),
        (7, False),
    ]
    assert hit["around"][0]["text"] == "context 3"
    around = Searcher(catalog).around(hit["sessionPath"], 0, before=3, after=1)
    assert [c.message_index for c in around] == [0, 1]
    with pytest.raises(QueryError):
        search(catalog, "needle", around=11)


def test_limit_and_cursor_paging(root: Path, catalog: Catalog) -> None:
    write_session(root, "s", [{"role": "user", "content": f"topic number {i}"} for i in range(120)])
    Indexer(catalog, speed=speed()).run([root])
    assert len(search(catalog, "topic")["hits"]) == 50
    seen: list[int] = []
    cursor = None
    while True:
        page = search(catalog, "topic", limit=35, cursor=cursor)
        seen += [h["messageIndex"] for h in page["hits"]]
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert sorted(seen) == list(range(120)) and len(seen) == 120
    for bad in (0, 201, -1):
        with pytest.raises(QueryError, match="limit"):
            search(catalog, "topic", limit=bad)
    with pytest.raises(QueryError, match="invalid cursor"):
        search(catalog, "topic", cursor="not-a-cursor")
    first = search(catalog, "topic", limit=10)
    with pytest.raises(QueryError, match="different query"):
        search(catalog, "number", cursor=first["nextCursor"])


def test_cursor_from_another_revision_is_stale(root: Path, catalog: Catalog) -> None:
    write_session(root, "s", [{"role": "user", "content": f"topic {i}"} for i in range(20)])
    Indexer(catalog, speed=speed()).run([root])
    page = search(catalog, "topic", limit=5)
    write_session(root, "t", [{"role": "user", "content": "topic again"}])
    Indexer(catalog, speed=speed()).run([root])
    stale = search(catalog, "topic", limit=5, cursor=page["nextCursor"])
    assert stale["staleCursor"] is True and stale["hits"] == []
    assert stale["revision"] > page["revision"]


def test_a_source_failed_by_a_scan_stales_cursors(
    tmp_path: Path, root: Path, catalog: Catalog
) -> None:
    """A scan that fails a known source (here: replaced by a link out of the root)
    deletes its rows outside any commit of messages; that is a new catalog too."""
    write_session(root, "s", [{"role": "user", "content": f"topic {i}"} for i in range(20)])
    write_session(root, "t", [{"role": "user", "content": f"topic {i}"} for i in range(20)])
    Indexer(catalog, speed=speed()).run([root])
    page = search(catalog, "topic", limit=5)
    elsewhere = write_session(tmp_path / "elsewhere", "t", [{"role": "user", "content": "x"}])
    (root / "t.jsonl").unlink()
    (root / "t.jsonl").symlink_to(elsewhere)
    stats = Indexer(catalog, speed=speed()).run([root])
    assert stats.errors == {"SymlinkOutsideRoot": 1}
    stale = search(catalog, "topic", limit=5, cursor=page["nextCursor"])
    assert stale["staleCursor"] is True and stale["hits"] == []
    assert stale["revision"] > page["revision"]
    assert {h["sessionId"] for h in search(catalog, "topic", limit=50)["hits"]} == {"s"}


def test_changed_source_drops_its_hit_and_is_queued(root: Path, catalog: Catalog) -> None:
    path = write_session(
        root,
        "s",
        [
            {"role": "user", "content": "original wording"},
            {"role": "user", "content": "original again"},
        ],
    )
    Indexer(catalog, speed=speed()).run([root])
    path.write_text(json.dumps({"role": "user", "content": "different"}) + "\n")
    result = search(catalog, "original")
    assert result["hits"] == []
    assert result["progress"]["pending"] == 1 and result["progress"]["state"] == "indexing"
    assert catalog.db.execute("SELECT health, pending FROM sources").fetchone() == ("stale", 1)
    Indexer(catalog, speed=speed()).run([root])
    assert [h["messageIndex"] for h in search(catalog, "different")["hits"]] == [0]


def test_appended_source_keeps_its_hits_and_is_queued(root: Path, catalog: Catalog) -> None:
    path = write_session(root, "s", [{"role": "user", "content": "stable words"}])
    Indexer(catalog, speed=speed()).run([root])
    with open(path, "a") as handle:
        handle.write(json.dumps({"role": "user", "content": "later"}) + "\n")
    result = search(catalog, "stable")
    assert [h["messageIndex"] for h in result["hits"]] == [0]
    assert result["progress"]["pending"] == 1


def test_progress_states(root: Path, catalog: Catalog) -> None:
    assert search(catalog, "x")["progress"]["state"] == "empty"
    write_session(root, "s", [{"role": "user", "content": "x"}])
    indexer = Indexer(catalog, speed=speed())
    indexer.scan_root(root)
    assert search(catalog, "x")["progress"] == {
        "state": "indexing",
        "indexed": 0,
        "total": 1,
        "pending": 1,
        "failed": 0,
        "revision": catalog.revision(),
    }
    indexer.index_pending()
    assert search(catalog, "x")["progress"]["state"] == "complete"


def test_root_filter(tmp_path: Path, catalog: Catalog) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    write_session(one, "a", [{"role": "user", "content": "shared word"}])
    write_session(two, "b", [{"role": "user", "content": "shared word"}])
    Indexer(catalog, speed=speed()).run([one, two])
    assert len(search(catalog, "shared")["hits"]) == 2
    only = search(catalog, "shared", roots=[two])["hits"]
    assert [h["sessionId"] for h in only] == ["b"]


def test_a_scope_of_every_root_filters_nothing_until_another_root_comes(
    tmp_path: Path, catalog: Catalog
) -> None:
    """``serve --root`` scopes every search to the roots the catalog holds: no check
    per match then, and the same hits and cursors; a root outside the scope is left out."""
    one, two, three = tmp_path / "one", tmp_path / "two", tmp_path / "three"
    for folder, name in ((one, "a"), (two, "b"), (three, "c")):
        write_session(folder, name, [{"role": "user", "content": "shared word"}])
    Indexer(catalog, speed=speed()).run([one, two])
    scope = SearchRequest(query="shared", roots=[two, one])
    assert make_plan(catalog, scope).sources_sql is None
    first = search(catalog, "shared", roots=[one, two], limit=1)
    assert len(first["hits"]) == 1 and first["nextCursor"]
    rest = search(catalog, "shared", roots=[two, one], limit=1, cursor=first["nextCursor"])
    assert {h["sessionId"] for h in first["hits"] + rest["hits"]} == {"a", "b"}
    Indexer(catalog, speed=speed()).run([three])
    assert make_plan(catalog, scope).sources_sql is not None
    assert {h["sessionId"] for h in search(catalog, "shared", roots=[one, two])["hits"]} == {
        "a",
        "b",
    }
    assert len(search(catalog, "shared")["hits"]) == 3


def test_cli_search_json(root: Path, cli: CliRun) -> None:
    write_session(root, "s", TOOL_SESSION)
    empty = as_json(cli("search", "kraken", "--json"))
    assert empty["hits"] == [] and empty["progress"]["state"] == "empty"
    waited = as_json(cli("search", "kraken", "--wait", "--root", str(root), "--no-group", "--json"))
    assert len(waited["hits"]) == 3 and waited["progress"]["state"] == "complete"
    paged = as_json(cli("search", "kraken", "--limit", "2", "--no-group", "--json"))
    assert len(paged["hits"]) == 2 and paged["nextCursor"]
    rest = as_json(
        cli(
            "search",
            "kraken",
            "--limit",
            "2",
            "--cursor",
            paged["nextCursor"],
            "--no-group",
            "--json",
        )
    )
    assert len(rest["hits"]) == 1 and rest["nextCursor"] is None
    outputs = as_json(
        cli("search", "kraken", "--kind", "tool_output", "--around", "1", "--no-group", "--json")
    )
    assert [h["kind"] for h in outputs["hits"]] == ["tool_output"]
    assert [c["messageIndex"] for c in outputs["hits"][0]["around"]] == [1, 2, 3]


def test_a_warm_process_reads_a_title_once_and_again_when_its_file_changes(
    root: Path, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Titles of hits from sessions without a title of their own are their first user
    message: read from the file once per file state, not once per search (the kept
    titles, ``speed.caches``; with them off, read every time)."""
    from convodex.sources.registry import FORMATS

    first = {"role": "user", "content": "Why does the replica lag"}
    path = write_session(root, "lagging", [first, {"role": "assistant", "content": "walrus"}])
    Indexer(catalog, speed=speed()).run([root])
    native = FORMATS["session_log"]
    read: list[int] = []
    original = native.load

    def load(path: Path, offset: int, length: int, index: int) -> Any:
        read.append(index)
        return original(path, offset, length, index)

    monkeypatch.setattr(native, "load", load)
    kept = Wing(Accelerators(caches=True))
    for _ in range(3):
        hits = to_builtins(Searcher(catalog, speed=kept).search(SearchRequest(query="walrus")))
        assert [h["sessionTitle"] for h in hits["hits"]] == ["Why does the replica lag"]
    assert sorted(read) == [0, 1, 1, 1]  # the title once, the hit every time
    read.clear()
    for _ in range(2):
        assert search(catalog, "walrus")["hits"][0]["sessionTitle"] == "Why does the replica lag"
    assert sorted(read) == ([1, 1] if speed().settings.caches else [0, 0, 1, 1])
    first["content"] = "Why does the primary lag"
    write_session(root, "lagging", [first, {"role": "assistant", "content": "walrus"}])
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    Indexer(catalog, speed=speed()).run([root])
    assert [h["sessionTitle"] for h in search(catalog, "walrus")["hits"]] == [
        "Why does the primary lag"
    ]
    page = Searcher(catalog, speed=kept).search(SearchRequest(query="walrus"))
    assert [h.session_title for h in page.hits] == ["Why does the primary lag"]


def test_progress_follows_commits_of_another_connection(
    root: Path, cache_dir: Path, catalog: Catalog
) -> None:
    """Progress is kept per connection only until anything is committed: a commit by
    another process's connection shows in this one's next answer."""
    assert search(catalog, "x")["progress"]["state"] == "empty"
    assert search(catalog, "x")["progress"]["state"] == "empty"  # kept: nothing changed
    write_session(root, "s", [{"role": "user", "content": "x"}])
    with open_catalog(cache_dir) as other:
        indexer = Indexer(other, speed=speed())
        indexer.scan_root(root)
        assert search(catalog, "x")["progress"]["pending"] == 1
        indexer.index_pending()
    after = search(catalog, "x")
    assert after["progress"]["state"] == "complete" and len(after["hits"]) == 1
    assert after["progress"]["revision"] == catalog.revision()
