"""What a prompt recalls (``convodex.recall.core``), on a real catalog (SPEC L18)."""

from __future__ import annotations

from pathlib import Path

from convodex.catalog.service import HistoryService
from convodex.models import RecallItem
from convodex.recall.core import Prompt, keywords, needed, recall, render
from convodex.text import recall_block
from helpers import write_claude_session

DAY = 86_400_000
NOW = 1_790_000_000_000


def test_keywords_drop_stop_words_short_tokens_and_repeats() -> None:
    words = keywords("Please can you fix the flaky Redis cache test? The redis test again! 42 x")
    assert words == ["flaky", "redis", "cache", "test"]
    assert keywords(f"{recall_block.wrap('zeppelin ballast')} rotor gearbox") == [
        "rotor",
        "gearbox",
    ]
    assert len(keywords(" ".join(f"word{n}" for n in range(30)))) == 10


def test_needed_is_most_of_the_words_two_to_four() -> None:
    assert [needed(n) for n in (2, 3, 4, 5, 8, 10)] == [2, 2, 3, 3, 4, 4]


def item(n: int, snippet: str = "a snippet") -> RecallItem:
    return RecallItem(
        ref=f"session-{n}#4", title=f"title {n}", agent="codex", snippet=snippet, score=1.0
    )


def test_render_keeps_whole_items_within_the_budget() -> None:
    items = [item(n, "é" * 150) for n in range(3)]
    for budget in (400, 600, 900, 2048):
        block = render(items, budget)
        assert block is not None and block.bytes <= budget
        assert block.bytes == len(block.text.encode("utf-8"))
        for kept in block.items:
            assert f"[ref {kept.ref}]" in block.text
    assert render(items, 120) is None
    assert render([], 2048) is None


def test_this_project_and_recent_work_come_first(root: Path, cache_dir: Path) -> None:
    here, elsewhere = "/home/dev/app", "/home/dev/other"
    text = "the grpc deadline exceeded error when the uploader streams large chunks"
    answer = "Raise the grpc deadline for streaming uploads and send smaller chunks."
    ages = [(elsewhere, 1), (here, 100), (here, 2), (elsewhere, 3), (here, 1)]
    for n, (cwd, age) in enumerate(ages):
        write_claude_session(
            root,
            f"00000000-0000-4000-8000-00000000000{n}",
            cwd,
            [("user", text, NOW - age * DAY), ("assistant", answer, NOW - age * DAY + 1)],
        )
    for n in range(40):
        write_claude_session(
            root,
            f"00000000-0000-4000-8000-0000000001{n:02}",
            elsewhere,
            [("user", f"unrelated chore number {n} about css", NOW - DAY)],
        )
    with HistoryService.open(cache_dir, [root.resolve()]) as service:
        service.index()
        prompt = Prompt(
            text="grpc deadline exceeded on large uploader chunks",
            cwd=here,
            session_id="00000000-0000-4000-8000-000000000004",
            now_ms=NOW,
        )
        block = recall(service, prompt, 2048)
    assert block is not None
    sessions = [i.ref.partition("#")[0][-1] for i in block.items]
    # This project first (recent before old), then the most recent elsewhere; the
    # current session (…04) never.
    assert sessions == ["2", "1", "0"]
    assert all(i.project in (here, elsewhere) for i in block.items)
