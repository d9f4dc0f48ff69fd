"""What every source reader produces: messages with byte locations and documents.

A reader never keeps message bodies beyond the message it is yielding, and never
writes, renames or locks the file it reads (SPEC L1).
"""

from __future__ import annotations

import abc
import errno
import functools
import os
import stat
from collections.abc import Callable, Hashable, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, Generic, TypeVar

import msgspec

from convodex import config
from convodex.errors import ConfigError, SessionReplayLimitError
from convodex.text.documents import Document
from convodex.text.recall_block import has_block, strip

T = TypeVar("T")

# The checkpoint offset of a source whose messages are not addressed by byte offsets
# (rows of a database, files of a tree): positive, so a rebuild wipes the rows it
# describes, and never above the source's stat size, so search never mistakes it for
# a truncated file.
LOCATOR_CHECKPOINT = 1


# Plain records are msgspec structs, not dataclasses: a dataclass costs about a
# millisecond to define (it compiles its methods), and every command that reads a
# source imports this module. Built positionally or by keyword, like a dataclass.


class FileStat(msgspec.Struct, frozen=True):
    """The identity of a source's bytes as far as a stat can tell."""

    size: int
    mtime_ns: int
    inode: int

    @classmethod
    def of(cls, path: str | os.PathLike[str]) -> FileStat:
        """The stat of a source file; anything but a regular file raises (see
        ``regular``), so nothing goes on to open a FIFO or a device."""
        return cls.of_result(regular(os.stat(path), path))

    @classmethod
    def of_result(cls, st: os.stat_result) -> FileStat:
        return cls(st.st_size, st.st_mtime_ns, st.st_ino)


class NotARegularFile(OSError):
    """A source path that holds a FIFO, a socket or a device: never opened for reading
    (a FIFO would block the reader forever, a device never ends)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(errno.EINVAL, "not a regular file", os.fspath(path))


def regular(st: os.stat_result, path: str | os.PathLike[str]) -> os.stat_result:
    """``st`` when it is a regular file's; a directory raises ``IsADirectoryError``, any
    other kind ``NotARegularFile``."""
    if stat.S_ISREG(st.st_mode):
        return st
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(path))
    raise NotARegularFile(path)


def open_source(path: str | os.PathLike[str]) -> BinaryIO:
    """Open a source file for reading, only if it is a regular file.

    The open itself never blocks (``O_NONBLOCK``: a FIFO would wait for a writer
    forever); the check is made on the opened descriptor, so a path swapped in
    between cannot slip through. On a regular file the flag changes nothing.
    """
    nonblocking = getattr(os, "O_NONBLOCK", 0)

    def opener(name: str, flags: int) -> int:
        return os.open(name, flags | nonblocking)

    handle = open(path, "rb", opener=opener)  # keeps ``name``: readers report it
    try:
        regular(os.fstat(handle.fileno()), path)
        if nonblocking:
            os.set_blocking(handle.fileno(), True)
    except BaseException:
        handle.close()
        raise
    return handle


class SourceMessage(msgspec.Struct):
    """One displayed message: its 0-based display index and where its record lives."""

    index: int
    offset: int
    length: int
    role: str
    created_at: int | None
    documents: list[Document]
    # Files holding many sessions (chat exports): the conversation this message belongs to.
    session_id: str | None = None
    title: str | None = None
    # Sub-agent work recorded inside its parent's file (Claude Code sidechains).
    subagent: bool = False

    def __post_init__(self) -> None:
        # Every reader builds its messages here: one place keeps recall's own blocks
        # out of user text (``text.recall_block``), whatever the format.
        for doc in self.documents:
            if doc.kind == "user_text" and has_block(doc.text):
                self.documents = _without_recall_blocks(self.documents)
                return

    def text(self) -> str:
        return "\n".join(d.text for d in self.documents)


def _without_recall_blocks(documents: list[Document]) -> list[Document]:
    """User text without recall blocks; a part that was nothing but a block is dropped."""
    out = []
    for doc in documents:
        if doc.kind == "user_text" and has_block(doc.text):
            text = strip(doc.text)
            if not text:
                continue
            doc = Document(doc.part, doc.kind, text, doc.tool_name)
        out.append(doc)
    return out


class SourceBranch(msgspec.Struct):
    """Turns the effective transcript left behind (a rewind, an edited prompt): never
    indexed, never in the tree, read only by callers that ask (``convodex sync``)."""

    #: the offset of the message it continues (on the effective branch or an earlier
    #: branch); ``None``: the session's start
    after: int | None
    messages: list[SourceMessage]


class LineError(msgspec.Struct):
    """A record that could not be used; counted per source, never fatal."""

    offset: int
    error_class: str


class ReadResult(msgspec.Struct):
    """The outcome of reading one range of a source."""

    end_offset: int
    next_index: int
    bytes_read: int = 0
    errors: list[LineError] = msgspec.field(default_factory=list)
    # Record and block types the reader did not know, by ``drift.key``: names only.
    unknown: dict[str, int] = msgspec.field(default_factory=dict)


class SessionInfo(msgspec.Struct):
    """Listing metadata of one source (from sidecars or the transcript itself)."""

    session_id: str
    title: str | None = None
    workspace_root: str | None = None
    parent_id: str | None = None
    subagent: bool = False
    archived: bool = False
    # Run without a person (``claude -p``, ``codex exec``): labelled, and filtered like
    # sub-agents (``subagent`` is set too).
    headless: bool = False
    created_at: int | None = None
    updated_at: int | None = None
    # Where the title is, for a reader that finds it in the source file alone (one
    # with ``title_at``): with ``title_located``, ``title_span`` (offset, length) is
    # the record the title comes from, or None when the file holds no title. The
    # catalog keeps the place, never the text (L3), so a hit reads one record.
    title_span: tuple[int, int] | None = None
    title_located: bool = False


RESOURCES = ("log", "record", "retained", "dag_meta")


class Budget(msgspec.Struct, frozen=True):
    """Replay budgets (SPEC L6), in encoded bytes; a value exactly at a limit passes.

    Fields left out take their value from the environment (``CONVODEX_REPLAY_MAX_*``),
    so ``Budget(max_record_bytes=1 << 20)`` tightens one budget and keeps the rest.
    """

    max_log_bytes: int = msgspec.field(default_factory=config.REPLAY_MAX_LOG_BYTES.value)
    max_record_bytes: int = msgspec.field(default_factory=config.REPLAY_MAX_RECORD_BYTES.value)
    max_retained_bytes: int = msgspec.field(default_factory=config.REPLAY_MAX_RETAINED_BYTES.value)
    max_dag_meta_bytes: int = msgspec.field(default_factory=config.REPLAY_MAX_DAG_META_BYTES.value)

    def __post_init__(self) -> None:
        for resource in RESOURCES:
            if self.limit(resource) <= 0:
                raise ConfigError(f"the {resource} budget must be a positive number of bytes")

    @classmethod
    def from_env(cls) -> Budget:
        return cls()

    def limit(self, resource: str) -> int:
        if resource == "log":
            return self.max_log_bytes
        if resource == "record":
            return self.max_record_bytes
        if resource == "retained":
            return self.max_retained_bytes
        if resource == "dag_meta":
            return self.max_dag_meta_bytes
        raise ValueError(f"unknown replay budget {resource!r}")

    def check(self, path: Path, resource: str, observed: int) -> None:
        """Raise ``SessionReplayLimitError`` when ``observed`` is over the limit."""
        limit = self.limit(resource)
        if observed > limit:
            raise SessionReplayLimitError(str(path), resource, observed, limit)

    def meter(self, path: Path, resource: str) -> BudgetMeter:
        """An accumulating counter for one source replay (retained payloads, DAG metadata)."""
        return BudgetMeter(self, path, resource)


class BudgetMeter(msgspec.Struct):
    """Aggregate accounting of one resource over one source replay.

    A reader calls ``add`` with the encoded bytes of each payload it keeps and
    ``release`` when it lets one go; going over the limit raises at once, before
    more is kept.
    """

    budget: Budget
    path: Path
    resource: str
    used: int = 0

    @property
    def limit(self) -> int:
        return self.budget.limit(self.resource)

    def add(self, nbytes: int) -> None:
        self.budget.check(self.path, self.resource, self.used + nbytes)
        self.used += nbytes

    def release(self, nbytes: int) -> None:
        self.used = max(0, self.used - nbytes)


class Support(msgspec.Struct, frozen=True):
    """What a reader supports, for the support table in docs/formats.md (generated
    from these by ``sources.support``; a test fails when the page drifts)."""

    agent: str  # the agent as people call it
    versions: str  # the versions whose files the tests read
    where: str  # default locations (per OS where they differ)
    branches: str  # how the effective branch is chosen (forks, rewinds)
    subagents: str  # how sub-agent work is kept apart
    gaps: str = "—"  # what is known not to be read


class SourceFormat(abc.ABC):
    """A transcript format: incremental read, single-message load, listing metadata.

    Every reader subclasses this. ``read``, ``load`` and ``info`` are its own; the
    other attributes and methods are optional hooks whose defaults here describe the
    common case (one append-only file a source, found by the generic scan), so
    callers use them directly and strict typing sees every one.
    """

    name: str
    # The agent's documented shell command that reopens a session: a template with
    # ``{id}`` (the session id) and ``{cwd}`` (its workspace) placeholders, or
    # ``None`` when the agent documents none (IDE extensions, exports).
    resume: str | None = None
    # How the agent starts interactively with a first prompt, a template with
    # ``{prompt}`` (the text), ``{file}`` (its path) and ``{cwd}``; ``None`` when it
    # documents none (``resume --in`` cannot start it).
    handoff: str | None = None
    # False when the effective transcript can change when bytes are appended (a DAG
    # selecting another head, a rewind, a rollback) or the source is not one file:
    # the indexer then rebuilds it on every change instead of appending, so its
    # ``read`` is always given a fresh ``ReadResult`` (offset 0, index 0).
    append_only: bool = True
    # File names it claims besides ``.json``/``.jsonl`` (databases, histories), and
    # directory names its sources sit under: outside its own roots a file is asked
    # about (``claims``) only when its name is in ``source_names`` or its path passes
    # through one of ``source_dirs``, so ordinary roots pay nothing for it.
    source_names: frozenset[str] = frozenset()
    source_dirs: frozenset[str] = frozenset()
    # The row of the support table (every reader has one).
    support: Support | None = None

    @abc.abstractmethod
    def read(self, path: Path, result: ReadResult, budget: Budget) -> Iterator[SourceMessage]:
        """Yield messages from ``result.end_offset`` on, advancing ``result`` as it goes.

        ``result`` starts at the checkpoint (offset and next display index); when the
        iterator is exhausted it holds the new checkpoint and the per-record errors.
        One file may hold many sessions: each message then names its own
        ``session_id`` and ``title`` (and ``subagent``), as chat exports do.
        """

    def read_with_branches(
        self, path: Path, result: ReadResult, budget: Budget
    ) -> tuple[list[SourceMessage], list[SourceBranch]]:
        """Every message of :meth:`read`, and the branches the effective transcript
        left behind (rewinds, edits), for a caller that asks (``convodex sync``). A
        format whose files keep no such turns has none."""
        return list(self.read(path, result, budget)), []

    @abc.abstractmethod
    def load(self, path: Path, offset: int, length: int, index: int) -> SourceMessage | None:
        """The message whose record sits at ``offset`` (for snippets and context)."""

    @abc.abstractmethod
    def info(self, path: Path) -> SessionInfo:
        """The source's listing metadata."""

    def stat(self, path: Path, known: os.stat_result | None = None) -> FileStat:
        """The fingerprint scans compare with the stored one to find changes: the
        file's stat (``known`` when the caller already took it). A source that is more
        than its file (an OpenCode session and its message and part files; a SQLite
        database and its ``-wal``) overrides it; such a format is rebuilt on change
        and may use ``(offset, length)`` as its own locator (a row id, a file's
        position) rather than a byte span, ending ``read`` with ``end_offset =
        LOCATOR_CHECKPOINT``."""
        return FileStat.of_result(regular(known, path)) if known else FileStat.of(path)

    def claims(self, path: Path, fixed: bool) -> bool | None:
        """Whether a file is one of its sources, by name and place (``fixed``: under a
        root of this format, else anywhere); ``None`` leaves it to the generic rules
        (under its own root: every ``.jsonl``; elsewhere: names and sniffing)."""
        return None

    def skip_dirs(self, names: frozenset[str], fixed: bool) -> frozenset[str]:
        """Subdirectories of a directory with these entry names that hold none of its
        sources, left out of scans."""
        return frozenset()

    def resume_id(self, session_id: str) -> str | None:
        """The id the agent's resume command takes for a session: itself, unless the
        session is a part of another (a sub-agent's run resumes as its parent) or
        cannot be resumed at all (``None``)."""
        return session_id

    def title_at(self, path: Path, offset: int, length: int) -> str | None:
        """The title the record at that place gives. A reader that overrides it sets
        ``SessionInfo.title_located`` and ``title_span`` when the file alone decides
        the title; the catalog keeps the place, and a hit in an unchanged source reads
        that one record (or, when the file holds no title, nothing) instead of
        scanning the file (``info``)."""
        return None


MessageLoader = Callable[[BinaryIO, int, int, int], SourceMessage | None]
"""Builds one message from the record(s) at (offset, length) of an open source file."""


def messages_at(
    handle: BinaryIO, spans: Iterable[tuple[int, int]], result: ReadResult, load: MessageLoader
) -> Iterator[SourceMessage]:
    """The effective transcript's messages, in order, loaded span by span.

    Shared by the formats that find their effective branch in a first pass; a span
    that no longer parses keeps its display index and is counted, never fatal.
    """
    for offset, length in spans:
        message = load(handle, offset, length, result.next_index)
        if message is None:
            result.errors.append(LineError(offset, "InvalidRecord"))
            message = SourceMessage(result.next_index, offset, length, "", None, [])
        result.next_index += 1
        yield message


def read_at(handle: BinaryIO, offset: int, length: int) -> bytes | None:
    """The bytes of one record of an open source, or ``None`` when the file no longer
    holds them all (it shrank since they were indexed)."""
    handle.seek(offset)
    raw = handle.read(length)
    return raw if len(raw) == length else None


def read_span(path: Path, offset: int, length: int) -> bytes | None:
    """The bytes of one record, or ``None`` when the file no longer holds them all."""
    with open_source(path) as handle:
        return read_at(handle, offset, length)


def load_message(
    path: Path, offset: int, length: int, index: int, load: MessageLoader
) -> SourceMessage | None:
    with open_source(path) as handle:
        return load(handle, offset, length, index)


def file_stamp(path: Path) -> Hashable:
    """What changes when a file's bytes may have: its inode, size and mtime."""
    st = os.stat(path)
    return (st.st_ino, st.st_size, st.st_mtime_ns)


class FileMemo(Generic[T]):
    """A value computed from a file, cached until the file changes (a few files at a time).

    Search loads one message at a time; what a message needs from the rest of its
    file (tool names by call id, the session a span belongs to) is found by one pass
    and kept while ``stamp`` says the file is the same.
    """

    def __init__(
        self,
        build: Callable[[Path], T],
        keep: int = 32,
        stamp: Callable[[Path], Hashable] = file_stamp,
    ) -> None:
        self._build = build
        self._keep = keep
        self._stamp = stamp
        self._cache: dict[str, tuple[Hashable, T]] = {}

    def of(self, path: Path) -> T:
        key = self._stamp(path)
        cached = self._cache.get(str(path))
        if cached is not None and cached[0] == key:
            return cached[1]
        value = self._build(path)
        if len(self._cache) >= self._keep:
            self._cache.pop(next(iter(self._cache)), None)
        self._cache[str(path)] = (key, value)
        return value


ToolNames = FileMemo[dict[str, str]]
"""Tool names by call id for source files whose results do not name their tool."""


def nested_text(value: Any, keys: tuple[str, ...], skip_types: frozenset[str]) -> str:
    """The text inside a provider content value, however it is nested.

    A string is itself; a list joins its items' text with newlines; a dict gives the
    text under the first of ``keys`` it has, unless its ``type`` is in ``skip_types``
    (thinking, images …), which counts as no text.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(t for t in (nested_text(v, keys, skip_types) for v in value) if t)
    if isinstance(value, dict):
        if value.get("type") in skip_types:
            return ""
        for key in keys:
            if key in value:
                return nested_text(value[key], keys, skip_types)
    return ""


class NamedResultsFormat(SourceFormat):
    """Shared by formats whose tool results name their tool only through the call's id.

    Subclasses set ``loader`` (a ``MessageLoader`` taking ``names=``) and ``call_names``
    (a light pass over a file for its call ids' tool names). While reading, a format
    fills the names as calls go by; a message loaded alone for a hit gets them here.
    """

    loader: Callable[..., SourceMessage | None]
    call_names: Callable[[Path], dict[str, str]]

    def __init__(self) -> None:
        self._names = ToolNames(type(self).call_names)

    def load(self, path: Path, offset: int, length: int, index: int) -> SourceMessage | None:
        names = LazyNames(lambda: self._names.of(path))
        loader = functools.partial(type(self).loader, names=names)
        return load_message(path, offset, length, index, loader)


class LazyNames(dict[str, str]):
    """Call ids → tool names that scan the file only when a tool result asks.

    Most hits are user or assistant text; they never pay for the scan.
    """

    def __init__(self, scan: Callable[[], dict[str, str]]) -> None:
        super().__init__()
        self._scan: Callable[[], dict[str, str]] | None = scan

    def get(self, key: str, default: str | None = None) -> str | None:  # type: ignore[override]
        if key not in self and self._scan is not None:
            scanned, self._scan = self._scan(), None
            for call_id, name in scanned.items():
                self.setdefault(call_id, name)
        return super().get(key, default)

    def __bool__(self) -> bool:
        return True
