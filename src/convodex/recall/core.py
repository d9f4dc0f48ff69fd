"""Which past moments a prompt recalls, and the block that names them (SPEC L18).

One function, ``recall``, from (prompt, working directory, session) to a block or
None, over any ``HistoryService``: the hook command calls it on a read-only catalog,
a warm service can call it on its own. It only reads.

Why these rules:
- the prompt's salient words (no stop words, at most ``MAX_WORDS``) are searched with
  OR, this project's sessions first, then everyone's;
- a moment counts only when it shares enough of those words (``needed``) *and* the
  words it shares are rare enough in the catalog (``salience``): a prompt made of
  everyday words ("fix the test in this file") shares them with half the history and
  must inject nothing;
- the current session and sub-agent sessions never appear; recent work and this
  project weigh more; one moment per session, the few best, within ``max_bytes``;
- everything shown is redacted (titles, snippets, paths) and home becomes ``~``.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Final

import msgspec

from convodex.models import Hit, RecallBlock, RecallItem
from convodex.text import recall_block
from convodex.text.redact import redact
from convodex.text.tokens import tokenize

if TYPE_CHECKING:
    from convodex.catalog.service import HistoryService

MAX_WORDS: Final = 10
MAX_ITEMS: Final = 3
CANDIDATES: Final = 16  # ranked hits looked at per scope (this project, then all)
CHECKED: Final = 6  # of those, read whole from their sources
SNIPPET_CHARS: Final = 160
TITLE_CHARS: Final = 80
# A moment's words together must weigh at least this many "rarest possible words"
# (bench/bench_recall.py: related moments score 3.4 and up, generic prompts 1.5 at most).
MIN_SALIENCE: Final = 1.8
PROJECT_BOOST: Final = 2.0
HALF_LIFE_DAYS: Final = 30.0
DAY_MS: Final = 86_400_000
KINDS: Final = ("user_text", "assistant_text", "tool_error")

HEADER: Final = "Past moments from this machine's agent history that may bear on this prompt"
HEADER_TAIL: Final = " (read one with `convodex show REF`):"

# Words that say nothing about what a prompt is about: English function words and
# the requests every prompt makes. Folded like the tokenizer folds.
STOP_WORDS: Final = frozenset(
    """
    a about above after again against all also am an and any are aren as at be because
    been before being below between both but by can cannot could couldn did didn do does
    doesn doing don down during each else even ever every few for from further get gets
    got had has have having he her here hers him his how however i if in into is isn it
    its itself just let lets like ll make makes me might more most much must my myself
    need needs no nor not now of off on once one only or other our ours out over own
    please re really same say see seem she should so some such than that the their them
    then there these they thing things this those though through to too try under until
    up upon us use used using ve very via want wants was wasn way we well were what when
    where which while who whom why will with within without won would yes yet you your
    yours yourself thanks thank ok okay hi hello hey sure go going look looks show tell
    help check add fix run work works working new old right now still again
    """.split()
)


class Prompt(msgspec.Struct, frozen=True, kw_only=True):
    """What the agent's hook says: the prompt, where it runs, which session it is."""

    text: str
    cwd: str | None = None
    session_id: str | None = None
    transcript_path: str | None = None
    now_ms: int | None = None


def keywords(text: str) -> list[str]:
    """The prompt's salient tokens, in order, distinct, at most ``MAX_WORDS``."""
    out: list[str] = []
    for token in tokenize(recall_block.strip(text)):
        if token in out or token in STOP_WORDS:
            continue
        if token.isascii() and (len(token) < 3 or (token.isdigit() and len(token) < 4)):
            continue
        out.append(token)
        if len(out) == MAX_WORDS:
            break
    return out


def needed(words: int) -> int:
    """How many of the prompt's words one moment must share: 60%, 2 to 4."""
    return min(4, max(2, math.ceil(words * 0.6)))


def recall(service: HistoryService, prompt: Prompt, max_bytes: int) -> RecallBlock | None:
    """The block for one prompt, or None when nothing in the history is relevant enough."""
    from convodex.catalog.plan import SearchRequest
    from convodex.recall.reads import message_count, strong_hits

    words = keywords(prompt.text)
    if len(words) < 2:
        return None
    messages = message_count(service)
    if messages == 0:
        return None
    # The most an IDF can be in this catalog: a word in one message (BM25's IDF).
    rarest = math.log((messages + 0.5) / 1.5) if messages > 1 else 1.0
    query = " OR ".join(words)
    now = prompt.now_ms if prompt.now_ms is not None else int(time.time() * 1000)
    here = prompt.cwd.rstrip("/") if prompt.cwd else None

    def strong(score: float) -> bool:
        return score / rarest >= MIN_SALIENCE

    # Cheap first: ranked hits, only the strong ones read (no neighbours).
    candidates: dict[str, Hit] = {}
    scopes: list[tuple[str, ...]] = [(here,)] if here else []
    scopes.append(())
    for projects in scopes:
        request = SearchRequest(
            query=query, kinds=KINDS, limit=CANDIDATES, projects=projects, group=False
        )
        for hit in strong_hits(service, request, strong, words):
            if _excluded(hit, prompt):
                continue
            best = candidates.get(hit.session_id)
            if best is None or hit.score > best.score:
                candidates[hit.session_id] = hit
        if len(candidates) >= CHECKED:
            break  # this project alone has enough to choose from
    # Then the few most promising are read whole from their sources (the costly part).
    first = sorted(candidates.values(), key=lambda h: -_weight(h, 1.0, here, now))[:CHECKED]
    found: list[tuple[float, Hit, str, str | None]] = []
    for hit in first:
        moment = _read_moment(service, hit)
        if moment is None:
            continue
        text, answer = moment
        shared = set(words) & set(tokenize(text))
        if len(shared) < needed(len(words)):
            continue
        found.append((_weight(hit, len(shared) / len(words), here, now), hit, text, answer))
    ranked = sorted(found, key=lambda entry: -entry[0])[:MAX_ITEMS]
    items = [_item(hit, score, text, answer, words) for score, hit, text, answer in ranked]
    return render(items, max_bytes)


def _excluded(hit: Hit, prompt: Prompt) -> bool:
    if prompt.session_id and hit.session_id == prompt.session_id:
        return True
    return bool(prompt.transcript_path) and hit.session_path == prompt.transcript_path


def _read_moment(service: HistoryService, hit: Hit) -> tuple[str, str | None] | None:
    """The hit's whole message and, when it was the user's question, the agent's next
    answer, read from the source (the hit's snippet is only a window)."""
    from convodex.errors import ConvodexError

    try:
        read = service.around(hit.message_index, path=hit.session_path, before=0, after=1)
    except ConvodexError:
        return None  # gone or unreadable since it was indexed: not worth recalling
    own = [m for m in read.messages if m.message_index == hit.message_index]
    if not own:
        return None
    later = [m for m in read.messages if m.message_index > hit.message_index]
    answer = None
    if hit.role == "user" and later and later[0].role == "assistant" and later[0].text.strip():
        answer = later[0].text
    return own[0].text, answer


def _weight(hit: Hit, coverage: float, here: str | None, now: int) -> float:
    at = hit.message_at if hit.message_at is not None else hit.last_activity_at
    age_days = max(0.0, (now - at) / DAY_MS) if at is not None else 365.0
    recency = 0.5 + 0.5 * math.pow(0.5, age_days / HALF_LIFE_DAYS)
    local = PROJECT_BOOST if here and _same_project(hit.project, here) else 1.0
    return coverage * recency * local * (1.0 + math.log1p(max(hit.score, 0.0)) / 10)


def _same_project(project: str | None, here: str) -> bool:
    if not project:
        return False
    project = project.rstrip("/")
    return here == project or here.startswith(project + "/") or project.startswith(here + "/")


def _item(hit: Hit, score: float, text: str, answer: str | None, words: list[str]) -> RecallItem:
    at = hit.message_at if hit.message_at is not None else hit.last_activity_at
    title = hit.session_title or hit.session_id
    # Redacted whole, before any cut: half a key matches no shape.
    snippet = _one_line(_window(redact(text), words), SNIPPET_CHARS * 2 // 3)
    if answer:
        snippet = f"{snippet} → {' '.join(redact(answer).split())}"
    return RecallItem(
        ref=hit.ref,
        title=_one_line(redact(title), TITLE_CHARS),
        agent=hit.agent.replace("_", "-"),
        date=_date(at),
        project=_home(redact(hit.project)) if hit.project else None,
        snippet=_one_line(snippet, SNIPPET_CHARS),
        score=round(score, 4),
    )


def _window(text: str, words: Iterable[str]) -> str:
    """The stretch of ``text`` around its first salient word, whitespace collapsed."""
    flat = " ".join(recall_block.strip(text).split())
    lowered = flat.lower()
    starts = [p for p in (lowered.find(w) for w in words) if p >= 0]
    if not starts:
        return flat
    start = max(0, min(starts) - SNIPPET_CHARS // 3)
    piece = flat[start:]
    return ("…" + piece.lstrip()) if start else piece


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _date(epoch_ms: int | None) -> str | None:
    if epoch_ms is None:
        return None
    return time.strftime("%Y-%m-%d", time.localtime(epoch_ms / 1000))


def _home(path: str) -> str:
    home = os.path.expanduser("~")
    if home and home != "/" and (path == home or path.startswith(home + os.sep)):
        return "~" + path[len(home) :]
    return path


def item_lines(number: int, item: RecallItem) -> str:
    where = f", {item.project}" if item.project else ""
    when = f", {item.date}" if item.date else ""
    return (
        f'{number}. "{item.title}" ({item.agent}{when}{where})\n   {item.snippet} [ref {item.ref}]'
    )


def render(items: list[RecallItem], max_bytes: int) -> RecallBlock | None:
    """The marked block of as many items as fit in ``max_bytes`` (UTF-8), else None."""
    kept: list[RecallItem] = []
    lines = [HEADER + HEADER_TAIL]
    for item in items:
        candidate = "\n".join([*lines, item_lines(len(kept) + 1, item)])
        if len(recall_block.wrap(candidate).encode("utf-8")) > max_bytes:
            # A long snippet may fit shortened; an item never goes in cut mid-ref.
            short = msgspec.structs.replace(item, snippet=_one_line(item.snippet, 60))
            candidate = "\n".join([*lines, item_lines(len(kept) + 1, short)])
            if len(recall_block.wrap(candidate).encode("utf-8")) > max_bytes:
                break
            item = short
        kept.append(item)
        lines.append(item_lines(len(kept), item))
    if not kept:
        return None
    text = recall_block.wrap("\n".join(lines))
    return RecallBlock(text=text, items=kept, bytes=len(text.encode("utf-8")))


def cwd_path(cwd: str | None) -> Path | None:
    return Path(cwd) if cwd else None
