"""Roots and the transcripts inside them.

A root is scanned recursively; every file a known format claims becomes a source.
The format comes from ``--root PATH:format`` when given, else from where the root
is (``~/.claude/projects`` holds Claude Code, ``~/.codex`` Codex rollouts,
``~/.gemini`` Gemini chats, ``~/.qwen/projects`` Qwen Code chats,
``~/.local/share/opencode`` OpenCode …; see ``roots.agent_roots``), else per file: by name
and place (a format's ``claims`` hook: ``opencode.db``, ``store.db`` under ``chats/``,
``.aider.chat.history.md`` …), by name (``rollout-*.jsonl``, ``conversations.json``,
``*.messages.json``, ``api_conversation_history.json``), then by sniffing the first
record of ``.jsonl`` and the first 64 KiB of ``.json`` files (remembered per path and
inode by a ``Sniffed`` its scanner keeps, so a rescan of unchanged files opens
nothing). ``.ndjson`` and ``.log`` files are sources only when the first line of
their first 64 KiB is a Droid stream-json event (``droid exec`` output saved under
another name). Only those suffixes and the exact names formats list in
``source_names`` are looked at. Under an agent's
root only the files that agent writes are sources, and folders that cannot hold any
(VS Code's other extensions' storage, checkpoint repositories, what a format's
``skip_dirs`` hook rules out) are not walked. A source's fingerprint is its format's
``stat`` hook, else its file's stat (``source_stat``).

A file that cannot be read safely is still a source, failed by name before anything
opens it: a symbolic link out of its root (unless links are followed), a FIFO, socket
or device, a file whose first record breaks detection (``discover_file``).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from convodex.sources import (
    aider,
    amp,
    antigravity,
    chat_export,
    claude_code,
    cline,
    codex,
    copilot_cli,
    copilot_vscode,
    cursor,
    dag,
    droid,
    forks,
    gemini,
    hermes,
    jsonspan,
    kimi,
    kiro,
    pi,
    qwen,
    session_log,
)
from convodex.sources.base import FileStat as FileStat  # re-exported: the catalog's import
from convodex.sources.base import (
    NotARegularFile,
    SessionInfo,
    open_source,
)
from convodex.sources.registry import FORMATS as FORMATS  # re-exported: one table
from convodex.sources.registry import source_stat as source_stat
from convodex.sources.roots import Root, declared, resolve_root, root_format

# Never walked under an agent's root: repositories and dependency trees, not transcripts.
UNWALKED_DIRS = frozenset({".git", "node_modules", "checkpoints"})
# Files whose sniffed format a ``Sniffed`` remembers (by path and inode): a rescan of an
# unchanged history opens none of them; beyond this many the oldest are sniffed again.
SNIFF_CACHE_FILES = 1 << 16
# The formats a catalog holds for its sources, by (path, inode): see ``sniff``.
Known = Mapping[tuple[str, int], str]
SNIFF_BYTES = 64 * 1024
SIDECAR_SUFFIXES = (".meta.json", ".jsonl.meta")
# Where ``droid exec --output-format stream-json`` output is often redirected: such a
# file is a source only when its first record is a stream-json event (``droid``).
STREAM_LOG_SUFFIXES = droid.STREAM_LOG_SUFFIXES
# The file names a scan looks at (besides the exact names formats list).
SCANNED_SUFFIXES = (".jsonl", ".json", *STREAM_LOG_SUFFIXES)
CLAUDE_LINE_TYPES = frozenset(
    {"user", "assistant", "summary", "system", "file-history-snapshot", "queue-operation"}
)
CODEX_LINE_TYPES = frozenset(
    {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
)
_JSON_HINTS = (
    (re.compile(rb'"(?:mapping|chat_messages)"\s*:'), chat_export.NAME),
    (re.compile(rb'"session_start"\s*:'), hermes.NAME),  # a Hermes session snapshot
    (re.compile(rb'"workspacePath"\s*:'), kiro.IDE),  # before Gemini's: both have a history
    (re.compile(rb'"(?:projectHash|history)"\s*:'), gemini.NAME),
    (re.compile(rb'"requests"\s*:\s*\['), copilot_vscode.NAME),
    (re.compile(rb'"messageId"\s*:\s*\d'), amp.NAME),  # Amp numbers its messages
)
COPILOT_EVENT_KINDS = frozenset({"session", "user", "assistant", "tool", "hook", "subagent"})
# The error class of a source that is a symbolic link out of its root (not followed).
SYMLINK_OUTSIDE_ROOT = "SymlinkOutsideRoot"


class _Sniff(msgspec.Struct):
    type: str | None = None
    role: str | None = None
    uuid: str | None = None
    parentUuid: str | None = None
    sessionId: str | None = None
    projectHash: str | None = None
    msgs: Any = None
    head: str | None = None
    record_type: str | None = None
    instructions: Any = None
    created_at: Any = None
    message: Any = None
    # Newer agents' keys; any JSON value is accepted (raw bytes are never decoded).
    systemPayload: msgspec.Raw = msgspec.Raw()
    data: msgspec.Raw = msgspec.Raw()  # Copilot CLI events
    session_id: Any = None  # Droid stream-json
    version: Any = None  # Pi's session header
    id: Any = None
    cwd: Any = None
    timestamp: Any = None
    kind: Any = None  # VS Code's operation log
    v: msgspec.Raw = msgspec.Raw()
    payload: Any = None  # a Codex session_meta's: a fork names its provider (TRAE)
    protocol_version: Any = None  # Kimi Code's wire header
    step_index: Any = None  # Antigravity's steps


@dataclass(frozen=True, slots=True)
class Discovered:
    path: Path
    format: str
    stat: FileStat
    # The error class that fails this source before it is read (see ``discover_file``).
    error: str | None = None
    # Its format is its root's (declared, or an agent's root), not guessed per file:
    # it wins over a format an earlier scan guessed.
    declared: bool = False


def workspace_roots(workspaces: Iterable[str | os.PathLike[str]]) -> list[Root]:
    """Aider histories in the workspace directories other agents' sessions name.

    For the catalog: given the workspace paths it knows, returns each directory that
    holds a ``.aider.chat.history.md`` as an ``aider`` root scanned without
    descending (a workspace may be a whole home directory). Scan them like any root.
    """
    found: list[Root] = []
    for workspace in workspaces:
        directory = Path(workspace).expanduser()
        if not (directory / aider.HISTORY).is_file():
            continue
        root = declared(resolve_root(directory), aider.NAME, shallow=True)
        if root not in found:
            found.append(root)
    return found


def format_of(name: str) -> str | None:
    """Which format claims a file, by its name alone."""
    if name.startswith("rollout-") and name.endswith(".jsonl"):
        return codex.NAME
    if name == "conversations.json":
        return chat_export.NAME
    if name.endswith(cline.MESSAGES_SUFFIX) or name == cline.TASK_FILE:
        return cline.NAME
    if session_log.is_transcript_name(name):
        return session_log.NAME
    return None


def claims(fmt: str, path: Path) -> bool:
    """Whether a file under a root of format ``fmt`` is a transcript of it."""
    name = path.name
    if name.endswith(SIDECAR_SUFFIXES) or name.endswith(session_log.EXCLUDED_SUFFIXES):
        return False
    claimed = FORMATS[fmt].claims(path, True)
    return name.endswith(".jsonl") if claimed is None else claimed


def walks(fmt: str | None, root: Path, folder: Path) -> bool:
    """Whether a scan of a root of format ``fmt`` goes into ``folder``.

    VS Code's ``workspaceStorage`` holds every extension's data: only its
    ``chatSessions`` folders are walked.
    """
    if fmt is None or fmt not in (copilot_vscode.NAME, *cline.FORMATS):
        return True
    if folder.name in UNWALKED_DIRS:
        return False
    if fmt == copilot_vscode.NAME and root.name == "workspaceStorage":
        return folder.parent == root or folder.name in copilot_vscode.SESSION_DIRS
    return True


def extension_of(path: Path) -> str:
    """The Cline-family agent whose extension storage holds a task file."""
    parts = set(path.parts)
    found = next((name for name, ext in cline.EXTENSIONS.items() if ext in parts), None)
    if found is None and (path.parent / cline.HISTORY_ITEM).is_file():
        return "roo_code"  # only Roo Code keeps a history item in the task's folder
    return found or cline.NAME


def _source_names() -> frozenset[str]:
    """File names some format claims besides ``.json``/``.jsonl`` (databases, histories)."""
    return frozenset[str]().union(*(fmt.source_names for fmt in FORMATS.values()))


def _layout_markers() -> tuple[str, ...]:
    """``/<dir>/`` for every directory name formats' sources sit under (``source_dirs``)."""
    dirs = frozenset[str]().union(*(fmt.source_dirs for fmt in FORMATS.values()))
    return tuple(f"{os.sep}{d}{os.sep}" for d in sorted(dirs))


SOURCE_NAMES = _source_names()
_LAYOUT_MARKERS = _layout_markers()
_LAYOUT_FORMATS = tuple(FORMATS)


class Sniffed:
    """The formats files were sniffed to, by path and inode, the oldest forgotten beyond
    ``keep``: a value whoever scans again holds (an indexer: its rescans open none of
    the unchanged files no catalog row describes, such as ``.json`` files of no
    format), never process-wide state; a one-off scan needs none."""

    def __init__(self, keep: int = SNIFF_CACHE_FILES) -> None:
        self._keep = keep
        self._formats: dict[tuple[str, int], str | None] = {}

    def __len__(self) -> int:
        return len(self._formats)

    def format(self, path: Path, inode: int) -> str | None:
        key = (str(path), inode)
        if key in self._formats:
            return self._formats[key]
        fmt = _sniff(path)
        if len(self._formats) >= self._keep:
            del self._formats[next(iter(self._formats))]
        self._formats[key] = fmt
        return fmt


def sniff(
    path: Path, inode: int, known: Known | None = None, sniffed: Sniffed | None = None
) -> str | None:
    """The format of a file by its first record.

    ``known``: the formats a catalog already holds for its sources (by path and inode):
    a scan then reads nothing of them, only their stat (a no-op ``index`` lists and
    stats); ``sniffed``: what earlier scans sniffed (none: the file is read)."""
    if known is not None and (fmt := known.get((str(path), inode))) is not None:
        return fmt
    return sniffed.format(path, inode) if sniffed is not None else _sniff(path)


def _sniff(path: Path) -> str | None:
    try:
        with open_source(path) as handle:
            if path.name.endswith(STREAM_LOG_SUFFIXES):
                # Any log may be this big and binary: one bounded read, its first line.
                head = handle.read(droid.STREAM_SNIFF_BYTES)
                return droid.NAME if droid.opens_stream(head) else None
            if path.name.endswith(".json"):
                head = handle.read(SNIFF_BYTES)
                return next((fmt for rx, fmt in _JSON_HINTS if rx.search(head)), None)
            first = b""
            while not first.strip():
                first = handle.readline(SNIFF_BYTES)
                if not first:
                    return None
    except OSError:
        return None
    try:
        rec = _decode_sniff(first)  # nearly every first line is one record
    except msgspec.ValidationError:
        return None
    except msgspec.DecodeError:  # more after it: records written without a newline
        try:
            rec = _decode_sniff(_first_object(first))
        except msgspec.DecodeError:  # a ValidationError too
            return None
    if rec.type in dag.KNOWN_TYPES and (rec.msgs is not None or rec.head is not None):
        return dag.NAME
    if rec.type in CODEX_LINE_TYPES or rec.record_type is not None or rec.instructions:
        provider = rec.payload.get("model_provider") if isinstance(rec.payload, dict) else None
        return forks.TRAE if provider == forks.TRAE else codex.NAME
    if rec.projectHash is not None:
        return gemini.NAME
    return _sniff_agent(rec)


_decode_sniff = msgspec.json.Decoder(_Sniff).decode


def _first_object(line: bytes) -> bytes:
    """A line's first JSON value: records written without a newline between them
    (a writer fault some agents have) still tell their format by the first one."""
    start = jsonspan.skip_space(line, 0)
    try:
        return line[start : jsonspan.value_end(line, start)]
    except (jsonspan.SpanError, IndexError):
        return line


def _sniff_agent(rec: _Sniff) -> str | None:
    """The remaining formats, by the keys their first record always has."""
    parts = isinstance(rec.message, dict) and "parts" in rec.message
    qwen_keys = parts or len(rec.systemPayload) > 0 or rec.type == "tool_result"
    if rec.uuid and rec.sessionId and qwen_keys:
        return qwen.NAME  # Gemini-style parts in a Claude-like tree
    if isinstance(rec.sessionId, str) and rec.sessionId.startswith(forks.IFLOW_PREFIX):
        return forks.IFLOW if rec.uuid else None  # Claude Code's records, iFlow's ids
    if rec.uuid or rec.parentUuid:
        return claude_code.NAME
    if rec.version == "v1" and rec.kind in kiro.KINDS and len(rec.data):
        return kiro.NAME  # a Kiro CLI log: versioned kinds of message
    if rec.step_index is not None and rec.type:
        return antigravity.NAME  # an Antigravity step log: numbered steps
    if rec.type == "metadata" and rec.protocol_version is not None:
        return kimi.NAME  # a Kimi Code wire log opens with its protocol
    if rec.type in droid.STREAM_TYPES and (rec.session_id or rec.sessionId):
        return droid.NAME  # `droid exec` stream-json: keyed by session, no tree
    if rec.type == "session" and (
        isinstance(rec.version, int) or (isinstance(rec.id, str) and (rec.cwd or rec.timestamp))
    ):
        return pi.NAME  # a Pi header; before version 3 it had no ``version``
    if rec.type and rec.type.split(".", 1)[0] in COPILOT_EVENT_KINDS and "." in rec.type:
        return copilot_cli.NAME if len(rec.data) else None
    if rec.type == "session_start" or (rec.type == "message" and isinstance(rec.message, dict)):
        return droid.NAME
    if rec.kind == 0 and len(rec.v):
        return copilot_vscode.NAME
    if rec.sessionId or rec.type in CLAUDE_LINE_TYPES:
        return claude_code.NAME
    if isinstance(rec.created_at, str) and rec.role and rec.message is not None:
        return codex.NAME
    if rec.role and isinstance(rec.message, dict):
        return cursor.NAME  # a Cursor agent transcript line: {role, message: {content}}
    if rec.role:
        return session_log.NAME
    return None


def detect(
    path: Path,
    inode: int,
    fixed: str | None,
    known: Known | None = None,
    sniffed: Sniffed | None = None,
) -> str | None:
    """The format of one file found under a root (``fixed``: the root's format)."""
    name = path.name
    if fixed is not None:
        return fixed if claims(fixed, path) else None
    if name.endswith(SIDECAR_SUFFIXES) or name.endswith(session_log.EXCLUDED_SUFFIXES):
        return None
    if name in SOURCE_NAMES or any(m in str(path) for m in _LAYOUT_MARKERS):
        for fmt in _LAYOUT_FORMATS:  # known by name and place: databases, trees, histories
            if FORMATS[fmt].claims(path, False):
                return fmt
    if name.endswith(STREAM_LOG_SUFFIXES):
        return sniff(path, inode, known, sniffed)
    by_name = format_of(name)
    if by_name == cline.NAME:
        return extension_of(path) if name == cline.TASK_FILE else by_name
    if by_name == codex.NAME:  # a fork writes the same rollouts; its first record tells
        return forks.TRAE if sniff(path, inode, known, sniffed) == forks.TRAE else by_name
    if by_name is not None and by_name != session_log.NAME:
        return by_name
    if name.endswith((".jsonl", ".json")):
        # Unrecognised .jsonl stays a native log: its malformed lines are then counted.
        return sniff(path, inode, known, sniffed) or by_name
    return None


def skipped_dirs(fixed: str | None, names: frozenset[str]) -> frozenset[str]:
    """Subdirectories of a directory with entries ``names`` that hold no source.

    A root of a known format asks only that format; any other root asks every format
    (which then prunes only on unmistakable layouts, such as OpenCode's storage tree).
    """
    formats = [FORMATS[fixed]] if fixed is not None else list(FORMATS.values())
    return frozenset[str]().union(*(fmt.skip_dirs(names, fixed is not None) for fmt in formats))


def leaves_root(path: Path, root: Path) -> bool:
    """Whether ``path`` resolves (through symbolic links) to a place outside ``root``."""
    return not Path(os.path.realpath(path)).is_relative_to(os.path.realpath(root))


def named_format(path: Path, fixed: str | None) -> str | None:
    """The format a file has by its name and root alone, nothing opened: what a source
    that must not be read is registered as. Unrecognised ``.json`` files have none."""
    if fixed is not None:
        return fixed if claims(fixed, path) else None
    name = path.name
    if name.endswith(SIDECAR_SUFFIXES) or name.endswith(session_log.EXCLUDED_SUFFIXES):
        return None
    by_name = format_of(name)
    return extension_of(path) if by_name == cline.NAME and name == cline.TASK_FILE else by_name


def discover_file(
    path: Path,
    root: Path,
    fixed: str | None,
    follow_symlinks: bool = False,
    *,
    linked: bool = True,
    known: Known | None = None,
    sniffed: Sniffed | None = None,
) -> Discovered | None:
    """One file under ``root`` (of format ``fixed``): its format and fingerprint.

    ``None`` when it is no transcript. A source that must not or cannot be read comes
    with the error class that fails it, found before anything opens it: a link out of
    the root (``SymlinkOutsideRoot``, unless ``follow_symlinks``), a FIFO, socket or
    device (``NotARegularFile``: opening a FIFO blocks), a file that breaks detection
    (its first record nested too deeply: ``RecursionError`` …). ``linked=False`` says
    the path is known not to be a link. Raises ``OSError`` when it vanished.
    """
    if linked and not follow_symlinks and leaves_root(path, root):
        return _unreadable(path, fixed, FileStat.of_result(os.lstat(path)), SYMLINK_OUTSIDE_ROOT)
    st = os.stat(path)
    if stat.S_ISDIR(st.st_mode):
        return None
    if not stat.S_ISREG(st.st_mode):
        return _unreadable(path, fixed, FileStat.of_result(st), NotARegularFile.__name__)
    try:
        fmt = detect(path, st.st_ino, fixed, known, sniffed)
        if fmt is None:
            return None
        return Discovered(path, fmt, FORMATS[fmt].stat(path, st), declared=fixed is not None)
    except OSError:
        raise
    except Exception as exc:  # one file that breaks detection fails alone, never the scan
        return _unreadable(path, fixed, FileStat.of_result(st), type(exc).__name__)


def describe(fmt: str, path: Path, read: bool = True) -> tuple[SessionInfo, str | None]:
    """A source's listing metadata, and the error class if its reader's ``info`` failed.

    Never raises: a stand-in named after the file answers for a source whose
    description fails (a first record nested too deeply …) or, ``read=False``, that
    must not be opened at all.
    """
    stand_in = SessionInfo(session_id=path.name.rsplit(".", 1)[0])
    if not read:
        return stand_in, None
    try:
        return FORMATS[fmt].info(path), None
    except Exception as exc:  # describing one source never stops the others
        return stand_in, type(exc).__name__


def _unreadable(path: Path, fixed: str | None, st: FileStat, error: str) -> Discovered | None:
    fmt = named_format(path, fixed)
    return None if fmt is None else Discovered(path, fmt, st, error)


def scan(
    root: Path,
    follow_symlinks: bool = False,
    known: Known | None = None,
    sniffed: Sniffed | None = None,
) -> Iterator[Discovered]:
    """Every transcript under ``root``, depth first; unreadable dirs are skipped.

    Linked directories are not walked; a linked file out of the root is a failed
    source unless ``follow_symlinks`` (see ``discover_file``).
    """
    return scan_dirs(root, [root], follow_symlinks, known=known, sniffed=sniffed)


def scan_dirs(
    root: Path,
    start: list[Path],
    follow_symlinks: bool = False,
    listed: frozenset[Path] | None = None,
    known: Known | None = None,
    sniffed: Sniffed | None = None,
) -> Iterator[Discovered]:
    """The transcripts in ``start`` (directories under ``root``) and below them, by
    the rules of a scan of ``root``. With ``listed``, a subdirectory in that set is
    not walked (it is in ``start`` already, or it is not to be walked): the freshness
    check lists the directories it knows and walks only the ones that are new."""
    fixed = root_format(root)
    shallow = isinstance(root, Root) and root.shallow
    stack = list(reversed(start))
    while stack:
        current = stack.pop()
        try:
            entries = list(os.scandir(current))
        except OSError:
            continue
        entries.sort(key=lambda e: e.name)
        skip = skipped_dirs(fixed, frozenset(e.name for e in entries))
        subdirs = []
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if (
                        walks(fixed, root, Path(entry.path))
                        and not shallow
                        and (entry.name not in skip)
                        and (listed is None or Path(entry.path) not in listed)
                    ):
                        subdirs.append(Path(entry.path))
                    continue
                if not entry.name.endswith(SCANNED_SUFFIXES) and entry.name not in SOURCE_NAMES:
                    continue
                found = discover_file(
                    Path(entry.path),
                    root,
                    fixed,
                    follow_symlinks,
                    linked=entry.is_symlink(),
                    known=known,
                    sniffed=sniffed,
                )
            except OSError:
                continue
            if found is not None:
                yield found
        stack.extend(reversed(subdirs))
