"""What every source reader produces: messages with byte locations and documents.

A reader never keeps message bodies beyond the message it is yielding, and never
writes, renames or locks the file it reads (SPEC L1).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from convodex import config
from convodex.errors import SessionReplayLimitError
from convodex.text.documents import Document


@dataclass(slots=True)
class SourceMessage:
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

    def text(self) -> str:
        return "\n".join(d.text for d in self.documents)


@dataclass(slots=True)
class LineError:
    """A record that could not be used; counted per source, never fatal."""

    offset: int
    error_class: str


@dataclass(slots=True)
class ReadResult:
    """The outcome of reading one range of a source."""

    end_offset: int
    next_index: int
    bytes_read: int = 0
    errors: list[LineError] = field(default_factory=list)


@dataclass(slots=True)
class SessionInfo:
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


@dataclass(frozen=True, slots=True)
class Budget:
    """Replay budgets (SPEC L6), in encoded bytes. Defaults come from the environment."""

    max_log_bytes: int
    max_record_bytes: int
    max_retained_bytes: int
    max_dag_meta_bytes: int

    @classmethod
    def from_env(cls) -> Budget:
        return cls(
            config.REPLAY_MAX_LOG_BYTES.value(),
            config.REPLAY_MAX_RECORD_BYTES.value(),
            config.REPLAY_MAX_RETAINED_BYTES.value(),
            config.REPLAY_MAX_DAG_META_BYTES.value(),
        )

    def check(self, path: Path, resource: str, observed: int) -> None:
        limit = {
            "log": self.max_log_bytes,
            "record": self.max_record_bytes,
            "retained": self.max_retained_bytes,
            "dag_meta": self.max_dag_meta_bytes,
        }[resource]
        if observed > limit:
            raise SessionReplayLimitError(str(path), resource, observed, limit)


class SourceFormat(Protocol):
    """A transcript format: incremental read, single-message load, listing metadata.

    A format whose effective transcript can change when bytes are appended (a DAG
    selecting another head, a rewind, a rollback) sets a class attribute
    ``append_only = False``: the indexer then rebuilds it instead of appending.
    """

    name: str

    def read(self, path: Path, result: ReadResult, budget: Budget) -> Iterator[SourceMessage]:
        """Yield messages from ``result.end_offset`` on, advancing ``result`` as it goes.

        ``result`` starts at the checkpoint (offset and next display index); when the
        iterator is exhausted it holds the new checkpoint and the per-record errors.
        """
        ...

    def load(self, path: Path, offset: int, length: int, index: int) -> SourceMessage | None:
        """The message whose record sits at ``offset`` (for snippets and context)."""
        ...

    def info(self, path: Path) -> SessionInfo: ...


def append_only(fmt: SourceFormat) -> bool:
    """Whether appended bytes only add messages (formats without the attribute do)."""
    return bool(getattr(fmt, "append_only", True))
