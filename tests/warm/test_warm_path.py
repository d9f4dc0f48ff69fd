"""Short commands through a running service answer exactly as in-process (SPEC L20);
a service that must not be trusted or used is never asked, and the command still runs."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from convodex.catalog.plan import SearchRequest
from convodex.catalog.service import HistoryService
from convodex.cli.warm import host
from convodex.models import SearchPage, encode
from convodex.warm import address, client
from convodex.warm.server import AlreadyServing, WarmServer
from warm.conftest import convodex

REQUESTS = [
    ["search", "keys"],
    ["search", "the", "--sort", "newest", "--limit", "3"],
    ["search", "the", "--sort", "oldest", "--role", "assistant"],
    ["search", '"signing keys"', "--kind", "user_text"],
    ["search", "迁移", "--around", "1"],
    ["search", "the", "--project", "/work/p1", "--agent", "session_log"],
    ["search", "nothing-like-this-anywhere"],
    ["search", "??"],  # an error: the same one line, the same status
]


def both(cache_dir: Path, *args: str) -> tuple[tuple[int, str, str], tuple[int, str, str]]:
    """(warm, in-process) of one command line; the in-process run sees no service."""
    argv = [*args, "--cache-dir", str(cache_dir)]
    warm = convodex(*argv)
    cold = convodex(*argv, env=dict(os.environ, XDG_RUNTIME_DIR=str(cache_dir / "nowhere")))
    return (warm.returncode, warm.stdout, warm.stderr), (cold.returncode, cold.stdout, cold.stderr)


@pytest.mark.parametrize("args", REQUESTS, ids=lambda a: " ".join(a))
@pytest.mark.parametrize("output", [["--json"], ["--color", "always"], []])
def test_a_search_through_the_service_is_the_same_as_in_process(
    warm: WarmServer, cache_dir: Path, args: list[str], output: list[str]
) -> None:
    served = warm.served
    through, local = both(cache_dir, *args, *output)
    assert through == local
    assert warm.served == served + 1  # it was the service that answered


def test_the_next_page_by_cursor_is_the_same(warm: WarmServer, cache_dir: Path) -> None:
    first = convodex("search", "the", "--limit", "2", "--json", "--cache-dir", str(cache_dir))
    cursor = json.loads(first.stdout)["nextCursor"]
    assert cursor
    through, local = both(cache_dir, "search", "the", "--limit", "2", "--cursor", cursor, "--json")
    assert through == local and through[0] == 0
    assert json.loads(through[1])["hits"]


def test_show_through_the_service_is_the_same(warm: WarmServer, cache_dir: Path) -> None:
    served = warm.served
    for ref in ("alpha-session-0001", "beta-s", "gamma-session-0003#1", "no-such-session"):
        for fmt in ("text", "json", "markdown"):
            through, local = both(cache_dir, "show", ref, "--format", fmt)
            assert through == local
    assert warm.served == served + 12


def test_recent_through_the_service_is_the_same(warm: WarmServer, cache_dir: Path) -> None:
    served = warm.served
    cases = [
        ["recent"],
        ["recent", "--json"],
        ["recent", "--limit", "2", "--color", "always"],
        ["recent", "agent:session_log", "--json"],
        ["recent", "--project", "/work/p2"],
        ["recent", "--here", "--json"],
        ["recent", "--page", "2", "--limit", "1"],
    ]
    for args in cases:
        through, local = both(cache_dir, *args)
        assert through == local and through[0] == 0
    assert warm.served == served + len(cases)


def test_the_library_call_returns_the_same_model(
    warm: WarmServer, history: HistoryService, cache_dir: Path
) -> None:
    request = SearchRequest(query="the", sort="newest", limit=2, roles=("user",))
    page = client.call(cache_dir, "search", request, SearchPage)
    assert page is not None and page.hits
    assert encode(page) == encode(history.search(request))
    assert page.next_cursor
    later = SearchRequest(
        query="the", sort="newest", limit=2, roles=("user",), cursor=page.next_cursor
    )
    assert encode(client.call(cache_dir, "search", later, SearchPage)) == encode(
        history.search(later)
    )


def test_a_command_the_service_cannot_answer_alike_runs_in_process(
    warm: WarmServer, cache_dir: Path, root: Path
) -> None:
    """Roots of its own, --wait, a relative path: the client runs the command itself."""
    served = warm.served
    for args in (
        ["search", "keys", "--root", str(root), "--json"],
        ["search", "keys", "--wait", "--json"],
    ):
        through, local = both(cache_dir, *args)
        assert through == local and through[0] == 0
    assert warm.served == served + 2  # asked, and answered "run it yourself"


def test_a_service_of_another_version_is_never_used(
    history: HistoryService, cache_dir: Path
) -> None:
    server = WarmServer(history, host(), version="0.0.0+another-build")
    try:
        through, local = both(cache_dir, "search", "keys", "--json")
        assert through == local and through[0] == 0
        assert server.served == 0
    finally:
        server.close()


def test_a_service_of_another_catalog_is_never_used(
    warm: WarmServer, cache_dir: Path, tmp_path: Path
) -> None:
    """Even at the other catalog's address, it answers only for its own."""
    other = tmp_path / "other-cache"
    convodex("search", "keys", "--cache-dir", str(other))  # creates the other catalog
    target = address.socket_path(address.catalog_file(str(other)))
    os.rename(warm.path, target)
    answer = convodex("search", "keys", "--json", "--cache-dir", str(other))
    assert answer.returncode == 0 and json.loads(answer.stdout)["hits"] == []
    assert warm.served == 0


def test_a_client_with_another_environment_is_never_answered(
    warm: WarmServer, cache_dir: Path
) -> None:
    """Another config home or time zone could change the answer: the client runs it."""
    env = dict(os.environ, TZ="Pacific/Kiritimati")
    answer = convodex("search", "keys", "--cache-dir", str(cache_dir), env=env)
    assert answer.returncode == 0 and "keys" in answer.stdout
    assert warm.served == 0


def test_a_service_that_answers_another_user_is_refused(
    history: HistoryService, cache_dir: Path
) -> None:
    """The service checks its peer's user (SO_PEERCRED): one that serves someone else
    says nothing to this user, whose command then runs in-process."""
    server = WarmServer(history, host(), uid=os.getuid() + 1)
    try:
        assert client.call(cache_dir, "search", SearchRequest(query="keys"), SearchPage) is None
        through, local = both(cache_dir, "search", "keys", "--json")
        assert through == local and server.served == 0
    finally:
        server.close()


def test_a_socket_others_can_reach_is_not_trusted(warm: WarmServer, cache_dir: Path) -> None:
    folder = os.path.dirname(warm.path)
    os.chmod(folder, 0o755)
    try:
        assert client.call(cache_dir, "search", SearchRequest(query="keys"), SearchPage) is None
    finally:
        os.chmod(folder, 0o700)
    assert client.call(cache_dir, "search", SearchRequest(query="keys"), SearchPage) is not None


def test_a_stale_socket_is_replaced_and_a_live_one_kept(
    history: HistoryService, cache_dir: Path
) -> None:
    catalog = address.catalog_file(str(cache_dir))
    path = address.socket_path(catalog)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(path)
    dead.close()  # its file stays; nobody listens
    assert client.call(cache_dir, "search", SearchRequest(query="keys"), SearchPage) is None
    server = WarmServer(history, host())
    try:
        assert client.call(cache_dir, "search", SearchRequest(query="keys"), SearchPage)
        with pytest.raises(AlreadyServing):
            WarmServer(history, host())
        assert client.call(cache_dir, "search", SearchRequest(query="keys"), SearchPage)
    finally:
        server.close()
    assert not os.path.lexists(path)
