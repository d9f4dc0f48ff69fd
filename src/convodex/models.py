"""The typed results every surface returns, encoded in one place.

Each result is a ``msgspec.Struct`` whose fields are snake_case in Python and
camelCase on the wire (SPEC L4: all JSON convodex emits uses camelCase keys). CLI
``--json``, HTTP and MCP all encode through :func:`encode`, so a field is named once.
Fields that are present only when asked for default to ``UNSET`` and are left out.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

__all__ = [
    "UNSET",
    "AroundResult",
    "CatalogReport",
    "CompactHit",
    "CompactPage",
    "ContextMessage",
    "Event",
    "FailedSource",
    "Hit",
    "IndexReport",
    "IndexStats",
    "Model",
    "Progress",
    "QuarantinedFile",
    "Refresh",
    "RecentPage",
    "RecentSession",
    "RecallBlock",
    "RecallItem",
    "RecallReceipt",
    "ReindexReport",
    "SearchPage",
    "ProgressState",
    "SessionDocument",
    "SessionEntry",
    "SessionMessage",
    "SessionPart",
    "SessionView",
    "SessionWindow",
    "Tree",
    "TreeRow",
    "UnsetType",
    "encode",
    "to_builtins",
]

ProgressState = Literal["empty", "indexing", "complete", "degraded"]
DemoShare = Literal["only", "mixed"]


class Model(msgspec.Struct, rename="camel", kw_only=True):
    """Base of every result model: camelCase JSON, keyword construction."""


# -- local history (L) ------------------------------------------------------------


class Progress(Model):
    """How far indexing has come (L7): ``state`` and counts of sources."""

    state: ProgressState
    indexed: int
    total: int
    pending: int
    failed: int
    revision: int
    # The bundled demo corpus is in the answers: all of them (``only``: its own catalog)
    # or among the user's (``mixed``: an older version indexed it there); every surface
    # says so (``catalog.demo``). Left out otherwise.
    demo: DemoShare | UnsetType = UNSET


class ContextMessage(Model):
    """One message around a hit, read from its source (L4 ``around``)."""

    message_index: int
    role: str
    text: str
    hit: bool
    # Where the query's positive terms match ``text`` ([start, end) in code points),
    # when the request named a query: what a surface marks.
    highlights: list[tuple[int, int]] | UnsetType = UNSET


class Moment(Model):
    """Another matching part of a grouped hit's session (L19), in rank order: where it
    is and what matched there."""

    ref: str
    message_index: int
    part_index: int
    kind: str
    role: str
    tool_name: str | None
    snippet: str
    score: float
    message_at: int | None


class Hit(Model):
    """One search hit (L4, L14): where it is, what matched, and the session's facts."""

    session_id: str
    session_path: str
    source_format: str
    # The agent that wrote the session (the ``agent`` filter's names).
    agent: str
    message_index: int
    part_index: int
    kind: str
    role: str
    tool_name: str | None
    snippet: str
    score: float
    # The format's own title, else the first user message (≤ 80 characters), else the
    # bare session id (L14: never null).
    session_title: str
    workspace_root: str | None
    # The session's workspace path (the ``project`` filter matches it).
    project: str | None
    # The message's own time (epoch ms) where its format records one.
    message_at: int | None
    last_activity_at: int | None
    # ``<sessionId>#<messageIndex>``: what ``show``, ``export`` and ``resume`` accept.
    ref: str
    open: bool = False
    running: bool = False
    current: bool = False
    # The shell command that reopens the session in its agent, in its workspace
    # (``cd … && claude --resume …``); null when the agent documents none (L15).
    resume_command: str | None = None
    # Grouped by session (the default, L19): how many more of the session's documents
    # match, besides this, its best hit (its best moments among them).
    more_hits: int = 0
    # Grouped: the session's next best matching parts after this one (at most
    # ``MOMENTS``), in rank order; absent ungrouped.
    moments: list[Moment] | UnsetType = UNSET
    around: list[ContextMessage] | UnsetType = UNSET
    # Where the query's positive terms match ``snippet`` ([start, end) in code points,
    # from the library's highlighter): what a surface marks, with no tokenizer of its own.
    highlights: list[tuple[int, int]] = msgspec.field(default_factory=list)


class RecentSession(Model):
    """One session in a listing without words (L17 ``recent``), newest first."""

    session_id: str
    # The format's own title, else the first user message, else the bare id (L14).
    session_title: str
    agent: str
    project: str | None
    first_activity_at: int | None
    last_activity_at: int | None
    message_count: int
    subagent: bool
    # What ``show``, ``export`` and ``resume`` accept (the session id).
    ref: str
    session_path: str
    # Its first message in its transcript (a run of an Aider history starts inside it).
    opening_index: int = 0
    resume_command: str | None = None


class SimilarSession(RecentSession):
    """A session like another (L19 ``similar``): cosine by meaning, BM25 by words."""

    similarity: float = 0.0


class SimilarPage(Model):
    """The sessions most like ``ref``, most alike first, and the mode that chose them."""

    ref: str
    sessions: list[SimilarSession]
    mode: str = "lexical"
    mode_note: str | None = None


class RecentPage(Model):
    """One page of sessions, newest first, with the cursor for the next."""

    sessions: list[RecentSession]
    next_cursor: str | None
    progress: Progress


class SearchPage(Model):
    """One page of hits with the cursor for the next and the index's progress."""

    hits: list[Hit]
    next_cursor: str | None
    revision: int
    stale_cursor: bool
    # With sub-agent sessions left out (the default): whether they hold a match.
    subagent_hits: bool
    progress: Progress
    # Each session once by its best hit, with its best moments (L19, the default);
    # false: one hit per document.
    grouped: bool = False
    # All the words together found nothing: these hits have any of them (L19).
    relaxed: bool = False
    # A query of qualifiers only (or none) browses: its sessions, newest first, and
    # no hits (L17: the same list as ``recent``).
    sessions: list[RecentSession] | UnsetType = UNSET
    # The mode that ran (L19): lexical, or hybrid (BM25 fused with embeddings).
    mode: str = "lexical"
    # Why hybrid was asked for and lexical ran (one line), else None.
    mode_note: str | None = None


class CompactMoment(Model, kw_only=True, omit_defaults=True):
    """Another matching part of a compact hit's session (L19)."""

    ref: str
    kind: str
    snippet: str


class CompactHit(Model, kw_only=True, omit_defaults=True):
    """A hit for an agent's context (L14): no null or false fields, ISO 8601 time."""

    ref: str
    session_title: str | None = None
    agent: str
    project: str | None = None
    kind: str
    role: str
    tool_name: str | None = None
    snippet: str
    # The message's time, else its session's last activity (ISO 8601, UTC).
    at: str | None = None
    session_path: str
    message_index: int
    # Grouped by session: how many more of the session's documents match.
    more_hits: int = 0
    # Grouped: the session's best other matching parts, in rank order.
    moments: list[CompactMoment] | None = None


class CompactPage(Model, kw_only=True, omit_defaults=True):
    """A page of compact hits; ``progress`` only while the index is incomplete."""

    hits: list[CompactHit]
    # Each session once by its best hit (L19, the default).
    grouped: bool = False
    # All the words together found nothing: these hits have any of them (L19).
    relaxed: bool = False
    next_cursor: str | None = None
    stale_cursor: bool = False
    subagent_hits: bool = False
    progress: Progress | None = None
    # The mode that ran (L19): lexical or hybrid; and why not hybrid when asked.
    mode: str = "lexical"
    mode_note: str | None = None


class AroundResult(Model):
    """The messages around one message of a session."""

    session_id: str
    session_path: str
    messages: list[ContextMessage]


class SessionMessage(Model):
    message_index: int
    role: str
    text: str
    # As on ``ContextMessage``: the query's matches in ``text`` when a query was named.
    highlights: list[tuple[int, int]] | UnsetType = UNSET


class SessionView(Model):
    """A whole session as its reader replays it (the effective branch)."""

    session_id: str
    session_path: str
    title: str | None
    workspace_root: str | None
    messages: list[SessionMessage]
    agent: str | None = None
    # As on hits: the shell command that reopens it, or null (L15).
    resume_command: str | None = None


class SessionPart(Model):
    """One part of a message as its agent showed it: text, a tool call or its result."""

    kind: str
    text: str
    tool_name: str | None = None


class SessionEntry(Model):
    """One message of a session's effective branch, every part in order."""

    message_index: int
    role: str
    created_at: int | None
    parts: list[SessionPart]


class SessionBranch(Model):
    """Turns a rewind or an edited prompt left off the effective branch (Claude Code's
    message tree): read only when asked (``convodex sync``), never searched or listed."""

    #: the ``message_index`` of the message it continues (on the effective branch or
    #: an earlier branch); ``None``: the session's start
    after: int | None
    messages: list[SessionEntry]


class SessionDocument(Model):
    """One session's effective branch with its facts: ``show``, ``export --format json``,
    the hand-off brief and the ``history_session`` tool all start from it (L15)."""

    session_id: str
    session_path: str
    agent: str
    title: str | None
    project: str | None
    # The first and last message times (epoch ms) where the format records them.
    started_at: int | None
    ended_at: int | None
    message_count: int
    resume_command: str | None
    messages: list[SessionEntry]
    # True when likely secrets were replaced by ``[redacted]``.
    redacted: bool = False


class SessionWindow(Model, kw_only=True, omit_defaults=True):
    """A bounded page of a session for an agent's context (``history_session``)."""

    session_id: str
    session_path: str
    agent: str
    title: str | None = None
    project: str | None = None
    message_count: int
    messages: list[SessionEntry]
    # The ``start`` of the next page, when more messages follow.
    next_start: int | None = None
    # Parts cut to fit the page's size; ask for fewer messages to read more of each.
    clipped: bool = False


class TreeRow(Model):
    """One session in the tree (L10); summary fields are null until known."""

    session_id: str
    session_path: str
    source_format: str
    title: str | None
    workspace_root: str | None
    message_count: int | None
    first_activity_at: int | None
    last_activity_at: int | None
    subagent: bool
    parent_id: str | None
    health: str
    open: bool
    running: bool
    current: bool


class Tree(Model):
    """The session tree with the listing's own progress (L10)."""

    rows: list[TreeRow]
    listing_state: Literal["scanning", "partial", "complete"]
    listing_revision: int
    counts_complete: bool
    pending_metadata: int
    failed_metadata: int


class Event(Model):
    """A progress notification from the scheduler: counts only, never content."""

    revision: int
    indexed: int
    total: int
    pending: int
    failed: int
    reason: str


class IndexStats(Model):
    """What indexing did; counts only, never content (safe to print)."""

    roots: int = 0
    sources: int = 0
    indexed: int = 0
    appended: int = 0
    rebuilt: int = 0
    failed: int = 0
    missing: int = 0
    removed: int = 0
    messages: int = 0
    documents: int = 0
    line_errors: int = 0
    bytes_read: int = 0
    seconds: float = 0.0
    errors: dict[str, int] = msgspec.field(default_factory=dict)

    def add(self, other: IndexStats) -> None:
        for name in self.__struct_fields__:
            if name == "errors":
                for error_class, count in other.errors.items():
                    self.errors[error_class] = self.errors.get(error_class, 0) + count
            else:
                setattr(self, name, getattr(self, name) + getattr(other, name))

    def count_failure(self, error_class: str) -> None:
        self.failed += 1
        self.errors[error_class] = self.errors.get(error_class, 0) + 1


class Refresh(Model):
    """What a search's freshness check found and brought in (L17); counts only."""

    # Known sources stat'ed.
    checked: int = 0
    # Sources changed, vanished or new since the last index.
    stale: int = 0
    brought_in: int = 0
    # Stale sources not brought in: the search may be missing their sessions.
    missing: int = 0
    # False when the budget ran out before the check itself was done.
    complete: bool = True
    # Why nothing could be brought in (the catalog is read-only, locked, the disk full).
    reason: str | None = None
    seconds: float = 0.0


class IndexReport(Model):
    """``convodex index --json``."""

    stats: IndexStats
    progress: Progress
    roots: list[str]
    # Every source of these roots that is failed now (this run's and earlier ones).
    failed: list[FailedSource] = msgspec.field(default_factory=list)


class FailedSource(Model):
    """A transcript that could not be indexed: its path, agent and why (no content)."""

    path: str
    agent: str
    error_class: str | None
    reason: str


class QuarantinedFile(Model):
    path: str
    size_bytes: int
    quarantined_at: int | None


class UnknownShape(Model):
    """A record or content-block type a reader met and does not know (format drift):
    its name, how often, in how many sources, and one of them; never content."""

    format: str
    kind: str  # "record" or "block"
    name: str
    count: int
    sources: int
    example: str


class CatalogReport(Model):
    """``convodex doctor catalogs``: one catalog's state; names and counts only (L11)."""

    name: str
    path: str
    exists: bool
    mode: str
    schema: int | None
    supported_schema: int
    integrity: str | None
    size_bytes: int
    sources: dict[str, int]
    pending: int
    line_errors: int
    # The error classes of failed sources (line errors in healthy ones are not here).
    error_classes: dict[str, int]
    revision: int | None
    quarantined: list[QuarantinedFile]
    note: str | None
    # Every failed source, by path (``doctor --failed`` prints them).
    failed: list[FailedSource] = msgspec.field(default_factory=list)
    # Healthy sources, not empty files, in which their reader found no message, by
    # format: a shape the reader does not know (format drift) shows here, not as a
    # missing search hit.
    empty_by_format: dict[str, int] = msgspec.field(default_factory=dict)
    # Embeddings (L19): how many vectors the catalog holds, of which model, and how
    # many indexed sources still wait for theirs.
    vectors: int = 0
    embedding_model: str | None = None
    embedding_pending: int = 0
    # Record and block types readers met and do not know, by format then count: the
    # next new shape shows here (its blocks' text is still indexed).
    unknown_shapes: list[UnknownShape] = msgspec.field(default_factory=list)


class ReindexReport(Model):
    """``convodex catalogs reindex history``."""

    name: str
    path: str
    replaced: bool
    roots: list[str]
    stats: IndexStats
    progress: Progress
    failed: list[FailedSource] = msgspec.field(default_factory=list)


# -- memory for agents (L18) ------------------------------------------------------


class RecallItem(Model, kw_only=True, omit_defaults=True):
    """One past moment a recall block names: enough to judge it and open it."""

    ref: str
    title: str
    agent: str
    date: str | None = None
    project: str | None = None
    snippet: str
    score: float


class RecallBlock(Model):
    """What one hook run injects: the marked text and the moments in it."""

    text: str
    items: list[RecallItem]
    bytes: int


class RecallReceipt(Model, kw_only=True, omit_defaults=True):
    """One hook run, recorded locally: never the prompt, never a snippet."""

    at: str
    agent: str
    event: str
    session_id: str | None = None
    outcome: Literal["injected", "nothing", "off", "error", "timeout"]
    refs: list[str] = msgspec.field(default_factory=list)
    bytes: int = 0
    millis: int = 0
    error: str | None = None


# -- encoding -------------------------------------------------------------------------


_encoder = msgspec.json.Encoder()


def encode(value: Any) -> bytes:
    """JSON bytes of a model (or of plain data holding models)."""
    return _encoder.encode(value)


def to_builtins(value: Any) -> Any:
    """Plain dicts and lists with the wire's camelCase keys (for shaping and tests)."""
    return msgspec.to_builtins(value)
