"""One behaviour for a search's page size (SPEC L4; issue 23): local history refuses a
limit out of 1 … 200 with the same line everywhere (library, CLI, HTTP), never a
silently shorter page; the team server keeps its S3 contract with the same numbers
(``tests/server/test_server_http.py::test_search_limits``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from convodex import config
from convodex.catalog.plan import SearchRequest
from convodex.errors import QueryError
from helpers import CliRun, service, write_session
from live_server import serving

REFUSED = f"limit must be between 1 and {config.MAX_SEARCH_LIMIT}"


def test_the_rule() -> None:
    assert config.search_limit(None) == config.DEFAULT_SEARCH_LIMIT
    assert config.search_limit(None, config.AGENT_SEARCH_LIMIT) == config.AGENT_SEARCH_LIMIT
    assert config.search_limit(config.MAX_SEARCH_LIMIT) == config.MAX_SEARCH_LIMIT
    for bad in (0, -1, config.MAX_SEARCH_LIMIT + 1):
        with pytest.raises(QueryError, match=REFUSED):
            config.search_limit(bad)
    with pytest.raises(QueryError, match="limit must be an integer"):
        config.search_limit(True)
    assert [config.server_search_limit(n) for n in (-3, 0, 7, 999)] == [0, 0, 7, 200]


@pytest.mark.parametrize("limit", [0, config.MAX_SEARCH_LIMIT + 1])
def test_every_local_surface_refuses_the_same_limit(
    root: Path, cache_dir: Path, cli: CliRun, limit: int
) -> None:
    write_session(root, "s1", [{"role": "user", "content": "walrus talk"}])
    assert cli("index", "--root", str(root)).exit_code == 0
    for command in ("search", "recent"):
        words = ["walrus"] if command == "search" else []
        out = cli(command, *words, "--limit", str(limit))
        assert out.exit_code == 1 and out.stderr.strip().endswith(REFUSED), out.output
        assert "Traceback" not in out.output
    with service(cache_dir, [root]) as history:
        with pytest.raises(QueryError, match=REFUSED):
            history.search(SearchRequest(query="walrus", limit=limit))
        with pytest.raises(QueryError, match=REFUSED):
            history.recent(SearchRequest(query="", limit=limit))
    with serving(service(cache_dir, [root])) as client:
        answer = client.get("/search", params={"q": "walrus", "limit": limit})
        assert answer.status_code == 400 and REFUSED in answer.json()["error"]
        within = client.get("/search", params={"q": "walrus", "limit": 1})
        assert within.status_code == 200 and len(within.json()["hits"]) == 1
