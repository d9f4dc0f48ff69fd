"""An Aider history is one file of many runs (SPEC L14, issue 24 item 13): each run is a
session of its own, dated by its own messages, and every surface lists the same ones.

Before, search found one session a run while ``recent`` and the web page's tree showed
the whole file as one session, and every run's hits carried the file's last date.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from convodex.sources.roots import resolve_root
from helpers import CliRun, as_json, service
from live_server import serving, wait_for

FIXTURE = Path(__file__).parent / "fixtures" / "aider" / "aider-chat-history-excerpt.md"


def aider_project(tmp_path: Path) -> str:
    """The public excerpt where Aider writes it: the project's own history file."""
    project = tmp_path / "project"
    project.mkdir()
    shutil.copyfile(FIXTURE, project / ".aider.chat.history.md")
    return f"{project}:aider"


def searched(cli: CliRun, root: str) -> dict[str, Any]:
    """Every session search groups a common word's hits under, with its date."""
    page = as_json(cli("search", "the", "--root", root, "--limit", "200", "--json"))
    return {hit["sessionId"]: hit["lastActivityAt"] for hit in page["hits"]}


def test_each_aider_run_is_a_session_of_its_own_in_every_surface(
    tmp_path: Path, cache_dir: Path, cli: CliRun
) -> None:
    root = aider_project(tmp_path)
    assert cli("index", "--root", root).exit_code == 0
    by_search = searched(cli, root)
    recent = as_json(cli("recent", "--root", root, "--limit", "100", "--json"))["sessions"]
    by_recent = {s["sessionId"]: s["lastActivityAt"] for s in recent}
    assert len(by_recent) == 10  # the excerpt's runs that hold messages
    assert all(key.startswith("aider-2024") for key in by_recent)
    # Each run is dated by its own messages, newest first.
    dates = [s["lastActivityAt"] for s in recent]
    assert len(set(dates)) == len(dates) and dates == sorted(dates, reverse=True)
    assert set(by_search) <= set(by_recent) and len(by_search) >= 8
    assert all(by_search[key] == by_recent[key] for key in by_search)
    # Each run is titled by its own first request, not the file's first.
    titles = {s["sessionTitle"] for s in recent}
    assert len(titles) == len(recent) and "hi" in titles

    with serving(service(cache_dir, [resolve_root(root)])) as client:
        wait_for(lambda: client.get("/status").json()["state"] == "complete")
        rows = client.get("/tree").json()["rows"]
        assert {row["sessionId"]: row["lastActivityAt"] for row in rows} == by_recent
        hello = next(row for row in rows if row["title"] == "hi")
        assert hello["messageCount"] == 4
        # Opening a run's row opens that run, not the whole file.
        opened = client.get(
            f"/sessions/{hello['sessionId']}", params={"path": hello["sessionPath"]}
        ).json()
        assert [m["role"] for m in opened["messages"]] == ["tool", "user", "assistant", "tool"]


def test_a_run_appended_to_the_history_is_listed_first_with_its_own_date(
    tmp_path: Path, cache_dir: Path, cli: CliRun
) -> None:
    root = aider_project(tmp_path)
    history = tmp_path / "project" / ".aider.chat.history.md"
    assert cli("index", "--root", root).exit_code == 0
    before = as_json(cli("recent", "--root", root, "--json"))["sessions"]
    with history.open("a", encoding="utf-8") as out:
        out.write("\n# aider chat started at 2024-08-07 09:30:00\n\n#### add a changelog entry\n\n")
        out.write("Added one line to CHANGELOG.md.\n")
    assert cli("index", "--root", root).exit_code == 0
    after = as_json(cli("recent", "--root", root, "--json"))["sessions"]
    assert after[0]["sessionTitle"] == "add a changelog entry"
    assert after[0]["lastActivityAt"] > before[0]["lastActivityAt"]
    assert after[1:] == before  # the earlier runs keep their dates and titles
