"""One session's effective branch as a :class:`SessionDocument` (SPEC L15).

The reader of the session's format replays the file (only the effective branch: a
rewound or abandoned branch is yielded only to a caller that asks for the branches);
messages that belong to another session of the same file are left out, and so are
messages with nothing to show.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from convodex.catalog.refs import SessionRef
from convodex.errors import NotFound, QueryError, SourceError
from convodex.models import (
    SessionBranch,
    SessionDocument,
    SessionEntry,
    SessionMessage,
    SessionPart,
)
from convodex.text.agents import agent_label
from convodex.text.matches import highlights
from convodex.text.query import Query, parse
from convodex.text.redact import redact, redact_paths
from convodex.text.titles import first_message_title, has_user_text, own_title

if TYPE_CHECKING:
    from convodex.sources.base import SourceBranch, SourceMessage


def read_document(
    target: SessionRef,
    *,
    redact: bool = False,
    strict: bool = True,
    branches: list[SessionBranch] | None = None,
) -> SessionDocument:
    """The session's document; ``strict``: a broken config file's resume templates are
    an error (``show``, ``export``), else the agents' own commands (the page's view).
    ``branches`` receives the turns the effective branch left behind (from the same
    read of the file), when the format keeps any."""
    from convodex.catalog.commands import resume_command as strict_resume
    from convodex.catalog.commands import shown_resume_command, usable_templates
    from convodex.sources.base import Budget, ReadResult
    from convodex.sources.discover import FORMATS

    fmt = FORMATS.get(target.agent)
    if fmt is None:
        raise NotFound(f"{target.session_path}: no reader for the {target.agent} format")
    path = Path(target.session_path)
    try:
        info = fmt.info(path)
        found: list[SourceBranch] = []
        if branches is None:
            messages = list(fmt.read(path, ReadResult(0, 0), Budget.from_env()))
        else:
            messages, found = fmt.read_with_branches(path, ReadResult(0, 0), Budget.from_env())
    except FileNotFoundError as exc:
        raise NotFound(f"{path}: the transcript is gone") from exc
    except OSError as exc:
        raise SourceError(str(path), f"cannot be read ({exc.strerror})") from exc
    own = target.session_id == target.file_session
    title = own_title(info.title) if own else None
    entries: list[SessionEntry] = []
    fallback: str | None = None  # the first message with user text (not sub-agent work)
    kept: dict[int, int | None] = {}  # offset -> the last entry (index) at or before it
    for message in messages:
        session = message.session_id or target.file_session
        if session != target.session_id or not message.documents:
            if session == target.session_id:
                kept[message.offset] = entries[-1].message_index if entries else None
            continue
        if title is None and message.title:
            title = own_title(message.title)
        if fallback is None and not message.subagent and has_user_text(message.documents):
            fallback = first_message_title(message.documents)
        entries.append(_entry(message))
        kept[message.offset] = message.index
    if branches is not None:
        branches.extend(_branches(found, target, kept))
    title = title or fallback
    times = [e.created_at for e in entries if e.created_at is not None]
    workspace = target.workspace or info.workspace_root
    document = SessionDocument(
        session_id=target.session_id,
        session_path=target.session_path,
        agent=agent_label(target.agent),
        title=title,
        project=workspace,
        started_at=min(times) if times else info.created_at,
        ended_at=max(times) if times else info.updated_at,
        message_count=len(entries),
        resume_command=(
            strict_resume(target.agent, target.session_id, workspace)
            if strict
            else shown_resume_command(
                target.agent, target.session_id, workspace, usable_templates()
            )
        ),
        messages=entries,
    )
    return redact_document(document) if redact else document


def _branches(
    found: list[SourceBranch], target: SessionRef, kept: dict[int, int | None]
) -> Iterator[SessionBranch]:
    """The format's branches as the document's: each continues the last message shown
    at or before the one it names; messages of another session or with nothing to
    show are left out (a branch left empty goes)."""
    for branch in found:
        if branch.after is not None and branch.after not in kept:
            continue  # it continues a message of another session
        last = None if branch.after is None else kept[branch.after]
        after, entries = last, []
        for message in branch.messages:
            session = message.session_id or target.file_session
            if session == target.session_id and message.documents:
                entries.append(_entry(message))
                last = message.index
            kept[message.offset] = last
        if entries:
            yield SessionBranch(after=after, messages=entries)


def _entry(message: SourceMessage) -> SessionEntry:
    return SessionEntry(
        message_index=message.index,
        role=message.role,
        created_at=message.created_at,
        parts=[
            SessionPart(kind=d.kind, text=d.text, tool_name=d.tool_name) for d in message.documents
        ],
    )


def redact_branches(branches: list[SessionBranch]) -> list[SessionBranch]:
    """The branches with their text redacted as :func:`redact_document` redacts a
    document's messages."""
    clean = _cleaner()
    return [
        msgspec.structs.replace(branch, messages=[_clean_entry(e, clean) for e in branch.messages])
        for branch in branches
    ]


def _cleaner() -> Callable[[str], str]:
    home, user = _home_and_user()
    return lambda text: redact_paths(redact(text), home, user)


def _clean_entry(entry: SessionEntry, clean: Callable[[str], str]) -> SessionEntry:
    return msgspec.structs.replace(
        entry, parts=[msgspec.structs.replace(p, text=clean(p.text)) for p in entry.parts]
    )


def redact_document(document: SessionDocument) -> SessionDocument:
    """The same document with likely secrets masked in its title and every part, and
    the home directory (``~``) and the user name (``[user]``) out of every path: its
    transcript's, its project's, its resume command's and those in its text (X11)."""
    home, user = _home_and_user()

    def clean(text: str) -> str:
        return redact_paths(redact(text), home, user)

    def clean_path(path: str | None) -> str | None:
        return None if path is None else redact_paths(path, home, user)

    messages = [
        msgspec.structs.replace(
            entry,
            parts=[msgspec.structs.replace(p, text=clean(p.text)) for p in entry.parts],
        )
        for entry in document.messages
    ]
    return msgspec.structs.replace(
        document,
        title=None if document.title is None else clean(document.title),
        session_path=redact_paths(document.session_path, home, user),
        project=clean_path(document.project),
        resume_command=clean_path(document.resume_command),
        messages=messages,
        redacted=True,
    )


def _home_and_user() -> tuple[str, str]:
    """This user's home directory and login name ("" where they cannot be known)."""
    import getpass

    try:
        home = str(Path.home())
    except (RuntimeError, KeyError):
        home = ""
    try:
        user = getpass.getuser()
    except (OSError, KeyError, ImportError):
        user = ""
    return home, user


def marks_of(query: str | None) -> Query | None:
    """The parsed query whose matches a read marks, or None: none named, or one with no
    words to mark (qualifiers only, or malformed: its search said why already)."""
    if not query or not query.strip():
        return None
    try:
        return parse(query)
    except QueryError:
        return None


def marked(message: SessionMessage, query: Query | None) -> SessionMessage:
    if query is not None:
        message.highlights = highlights(query, message.text)
    return message
