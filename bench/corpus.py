#!/usr/bin/env python3
"""The project's own corpus generator: realistic agent history in every format convodex reads.

Benchmarks and tests need large, varied, reproducible history without anyone's real
conversations. Sessions are built once in a neutral model (``Session`` → ``Message`` →
``ToolCall``) and then written by one writer per on-disk format, registered in
``WRITERS``; a new agent format needs only a new writer.

What every corpus holds, so a benchmark can check recall and a test can check readers:
- each main session says ``needle<n>`` exactly once, in a user message; each sub-agent
  session says ``sidequest<n>`` once; words only on a rewound branch are
  ``rewound<n>`` and must never be found (formats without branches leave them out);
- common English (``the`` in every session's first prompt) from the standard library's
  docstrings, source chunks as tool output, CJK prose (``迁移`` in some sessions);
- tool calls with arguments, outputs, errors (``error: …``, flagged where the format can),
  outputs over 8 KiB now and then, per-message timestamps spread over nine months,
  several workspaces (nested, one with spaces), sub-agents and rewound branches.

Layout under OUT (one subtree per format, as in a home directory: with OUT as ``$HOME``
and ``$CONVODEX_HOME`` every format but ``dag`` is in a default root; on macOS the editors'
``.config`` is ``Library/Application Support``):
  native          sessions/<id>.jsonl (+ .jsonl.meta; subagents/<ref>.jsonl + .meta.json)
  claude-code     .claude/projects/<slug>/<uuid>.jsonl (+ <uuid>/subagents/agent-*.jsonl)
  codex           .codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl
  gemini          .gemini/tmp/<sha256 of cwd>/chats/session-*.json (.jsonl when rewound)
  chatgpt         exports/chatgpt-NNN/conversations.json (200 conversations each)
  dag             legacy/<uuid>.jsonl (the legacy 1.x DAG event log)
  qwen            .qwen/projects/<slug>/chats/<uuid>.jsonl (sub-agents: chats of sidechains)
  copilot-cli     .copilot/session-state/<uuid>/events.jsonl (+ workspace.yaml)
  copilot-vscode  .config/Code/User/workspaceStorage/<md5>/chatSessions/<uuid>.json[l]
  droid           .factory/sessions/<slug>/<uuid>.jsonl
  pi              .pi/agent/sessions/--<cwd>--/<time>_<uuid>.jsonl
  cline           .cline/data/sessions/<id>/<id>.messages.json (+ manifest <id>.json)
  cline-vscode    .config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks/<ms>/
                  api_conversation_history.json (+ state/taskHistory.json)
  roo-code        … globalStorage/rooveterinaryinc.roo-cline/tasks/<uuid>/ (the same file)
  kilo-code       … globalStorage/kilocode.kilo-code/tasks/<uuid>/ (the same file)
  opencode        .local/share/opencode/storage/{session,message,part}/… (a file each)
  opencode-db     .local/share/opencode/opencode.db (every session; SQLite)
  cursor          .cursor/projects/<slug>/agent-transcripts/<uuid>/<uuid>.jsonl
  cursor-store    .cursor/chats/<md5 of cwd>/<uuid>/store.db (SQLite)
  cursor-ide      .config/Cursor/User/globalStorage/state.vscdb (every composer; SQLite)
  aider           projects/<workspace>/.aider.chat.history.md (+ .aider.input.history;
                  .config/convodex/config.toml names ``~/projects`` an aider root)
With several formats the sessions are dealt out in turn, and ``--mb`` is the total size.
Output is deterministic for a seed and a Python version (the text comes from its stdlib).

Usage: corpus.py OUT [--mb 200] [--seed 1] [--format native|claude-code|…|all|a,b]
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import random
import shutil
import sqlite3
import sys
import sysconfig
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

# Bump when the output changes, so cached corpora are regenerated.
VERSION = 2
HERE = Path(__file__).resolve().parent
CACHE_DIR = HERE / ".corpus"
START_MS = 1_748_736_000_000  # 2025-06-01T00:00:00Z
SPAN_MS = 270 * 86_400_000  # sessions start anywhere in nine months
SUBAGENT_EVERY = 11  # one main session in 11 hands work to a sub-agent
REWIND_EVERY = 13  # one in 13 has a rewound branch
CJK_EVERY = 7  # one in 7 says something in CJK; every other one of those says 迁移
ERROR_SHARE = 0.08
BIG_OUTPUT_SHARE = 0.05

_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

# ---------------------------------------------------------------------------------------
# The neutral conversation model


@dataclass(frozen=True, slots=True)
class Workspace:
    name: str
    cwd: str
    package: str


@dataclass(slots=True)
class ToolCall:
    """One call and its result. ``tool`` is neutral: shell, read, edit, search, list, task."""

    id: str
    tool: str
    args: dict[str, str]
    output: str
    error: bool
    at: int
    subagent: Session | None = None


@dataclass(slots=True)
class Message:
    role: str  # "user" or "assistant"
    text: str
    at: int
    calls: list[ToolCall] = field(default_factory=list)
    thinking: str = ""


@dataclass(slots=True)
class Rewind:
    """Turns that were said, then rewound: they branched off before ``messages[at]``."""

    at: int
    messages: list[Message]
    marker: str


@dataclass(slots=True)
class Session:
    number: int
    id: str
    workspace: Workspace
    title: str
    created: int
    messages: list[Message]
    marker: str  # needle<n> or sidequest<n>: said exactly once, in a user message
    rewind: Rewind | None = None
    parent_id: str | None = None
    cjk_migration: bool = False  # says 迁移 on its effective branch

    @property
    def updated(self) -> int:
        return self.messages[-1].at

    def subagents(self) -> list[Session]:
        return [c.subagent for m in self.messages for c in m.calls if c.subagent is not None]


WORKSPACES = (
    Workspace("atlas", "/home/dev/src/atlas", "atlas"),
    Workspace("billing-api", "/home/dev/code/acme/billing-api", "billing"),
    Workspace("web-frontend", "/home/dev/code/acme/web-frontend", "web"),
    Workspace("infra", "/home/dev/code/acme/infra", "deploy"),
    Workspace("convodex", "/home/dev/src/convodex", "convodex"),
    Workspace("ml-notebooks", "/home/dev/research/ml-notebooks", "experiments"),
    Workspace("notes app", "/home/dev/My Projects/notes app", "notes"),
    Workspace("rust-cli", "/home/dev/src/rust-cli", "cli"),
    Workspace("dotfiles", "/home/dev/dotfiles", "config"),
    Workspace("blog", "/home/dev/sites/blog", "site"),
)
WORKSPACE_WEIGHTS = tuple(1 / (rank + 1) for rank in range(len(WORKSPACES)))
TOOLS = ("shell", "read", "edit", "search", "list")
TOOL_WEIGHTS = (35, 25, 15, 15, 10)
OPENERS = (
    "Can you look at the {m} module and tell me why the tests fail?",
    "Please refactor the {m} code so the error handling is easier to follow.",
    "Why does the {m} parser reject this input?",
    "Add a test for the edge case in {m} that the docs describe.",
    "Help me understand what the {m} module does and where it is used.",
    "The CI job fails in {m}; find the cause and fix it.",
    "Review the changes to {m} before I open the pull request.",
    "Speed up the {m} path, it is the slowest part of the build.",
)
FOLLOW_UPS = (
    "That works. Now",
    "Good, but",
    "Thanks. Next,",
    "Hmm, the output looks wrong:",
    "Also,",
    "One more thing:",
    "Not quite.",
    "OK.",
)
STEP_TEXTS = (
    "Let me check the file first.",
    "I'll run the tests to see the failure.",
    "Searching for the call sites.",
    "Now I'll make the change.",
    "Let me look at the directory layout.",
    "Running it again to confirm.",
)
ERRORS = (
    "error: command exited with status 1",
    "error: FileNotFoundError: [Errno 2] No such file or directory: '{p}'",
    "error: test failed: tests/test_{m}.py::test_roundtrip - AssertionError",
    "error: permission denied while opening {p}",
    "error: SyntaxError: invalid syntax ({m}.py, line 42)",
    "error: timed out after 120 seconds",
)
# (text, says 迁移)
CJK_SENTENCES = (
    ("数据库迁移失败了，请检查索引是否已经重建完成。", True),
    ("迁移脚本在生产环境运行之前需要先备份数据。", True),
    ("全文搜索的分词器配置需要更新，中文要按双字切分。", False),
    ("会话历史记录需要在后台增量更新，不要阻塞用户的查询请求。", False),
    ("这个函数的返回值类型不对，请帮我修复一下。", False),
    ("データベースの移行が失敗しました。検索インデックスを再構築してください。", False),
    ("このテストが失敗する理由を説明してください。", False),
    ("設定ファイルの読み込みに時間がかかっています。", False),
    ("세션 기록을 검색할 수 있도록 인덱스를 다시 만드세요.", False),
    ("데이터베이스 마이그레이션이 실패했습니다. 로그를 확인해 주세요.", False),
    ("이 함수의 성능을 개선해 주세요.", False),
)

# ---------------------------------------------------------------------------------------
# Text from the standard library: docstrings are prose, source chunks are tool output


@dataclass(frozen=True, slots=True)
class TextPool:
    prose: tuple[str, ...]
    code: tuple[tuple[str, str], ...]  # (module name, 80 lines of its source)


@lru_cache(maxsize=1)
def text_pool() -> TextPool:
    """Docstrings and source of the top-level stdlib modules, in a stable order."""
    root = Path(sysconfig.get_paths()["stdlib"])
    prose: list[str] = []
    code: list[tuple[str, str]] = []
    for path in sorted(root.glob("*.py")):
        try:
            src = path.read_text(encoding="utf-8")
            tree = ast.parse(src)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.ClassDef | ast.Module):
                doc = ast.get_docstring(node)
                if doc and len(doc) > 40:
                    prose.append(" ".join(doc.split()))
        if path.stem.startswith("_"):
            continue  # private modules make odd file names in tool calls
        lines = src.splitlines()
        for i in range(0, len(lines), 80):
            code.append((path.stem, "\n".join(lines[i : i + 80])))
    if not prose or not code:
        raise RuntimeError(f"no standard library sources under {root}")
    return TextPool(tuple(prose), tuple(code))


# ---------------------------------------------------------------------------------------
# Building sessions


class _Builder:
    """Draws one session after another from one seeded random stream."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.pool = text_pool()

    def sessions(self) -> Iterator[Session]:
        n = 0
        while True:
            yield self.session(n)
            n += 1

    def session(self, n: int) -> Session:
        rng = self.rng
        workspace = rng.choices(WORKSPACES, WORKSPACE_WEIGHTS)[0]
        created = START_MS + rng.randrange(SPAN_MS)
        return self._session(n, f"needle{n}", workspace, created, rng.randrange(4, 30), None)

    def _session(
        self,
        n: int,
        marker: str,
        workspace: Workspace,
        created: int,
        turns: int,
        parent: str | None,
    ) -> Session:
        """Features follow the session number (``generate`` deals sessions so that every
        writer gets its share of each, even in a small corpus); text follows the stream."""
        rng = self.rng
        main = parent is None
        sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        clock = [created]
        module = rng.choice(self.pool.code)[0]
        title = rng.choice(OPENERS).format(m=module)
        # A sub-agent's first prompt is its parent's task call: the marker comes later.
        marker_turn = rng.randrange(turns) if main else rng.randrange(1, turns)
        cjk: list[tuple[str, bool]] = []
        if main and n % CJK_EVERY == 2:
            cjk = [s for s in CJK_SENTENCES if not s[1] and rng.random() < 0.3]
            if (n // CJK_EVERY) % 2 == 0:
                cjk.insert(0, rng.choice([s for s in CJK_SENTENCES if s[1]]))
            cjk = cjk or [CJK_SENTENCES[-1]]
        cjk_turn = rng.randrange(turns)
        subagent_turn = rng.randrange(turns) if main and n % SUBAGENT_EVERY == 4 else -1
        rewind_turn = rng.randrange(1, turns) if main and n % REWIND_EVERY == 7 else -1
        messages: list[Message] = []
        rewind: Rewind | None = None
        for turn in range(turns):
            if turn == rewind_turn:
                abandoned: list[Message] = []
                for k in range(rng.randrange(1, 3)):
                    extra = f" rewound{n}" if k == 0 else ""
                    abandoned += self._turn(workspace, module, clock, extra)
                rewind = Rewind(len(messages), abandoned, f"rewound{n}")
            extra = f" {marker}" if turn == marker_turn else ""
            if turn == cjk_turn and cjk:
                extra += " " + "".join(s for s, _ in cjk)
            lead = f"{title} " if turn == 0 else None
            task = (n, sid) if turn == subagent_turn else None
            messages += self._turn(workspace, module, clock, extra, lead, task)
        return Session(
            number=n,
            id=sid,
            workspace=workspace,
            title=title,
            created=created,
            messages=messages,
            marker=marker,
            rewind=rewind,
            parent_id=parent,
            cjk_migration=any(migration for _, migration in cjk),
        )

    def _tick(self, clock: list[int]) -> int:
        rng = self.rng
        if rng.random() < 0.02:  # picked up again hours or days later
            clock[0] += rng.randrange(3_600_000, 4 * 86_400_000)
        clock[0] += rng.randrange(2_000, 120_000)
        return clock[0]

    def _turn(
        self,
        workspace: Workspace,
        module: str,
        clock: list[int],
        extra: str,
        lead: str | None = None,
        task: tuple[int, str] | None = None,
    ) -> list[Message]:
        """A user message, the agent's steps with tool calls (one may hand work to a
        sub-agent: ``task`` is (session number, parent id)), then its answer."""
        rng = self.rng
        prose = self.pool.prose
        lead = lead if lead is not None else rng.choice(FOLLOW_UPS) + " "
        out = [Message("user", f"{lead}{rng.choice(prose)}{extra}", self._tick(clock))]
        for _ in range(rng.randrange(0, 4)):
            at = self._tick(clock)
            text = rng.choice(STEP_TEXTS) if rng.random() < 0.7 else ""
            calls = [self._call(workspace, module, at) for _ in range(1 + (rng.random() < 0.15))]
            thinking = rng.choice(prose)[:300] if rng.random() < 0.3 else ""
            out.append(Message("assistant", text, at, calls, thinking))
        if task is not None:
            call = self._task(task[0], workspace, clock, task[1])
            out.append(Message("assistant", "I'll hand this to a sub-agent.", call.at, [call]))
        answer = " ".join(rng.choice(prose) for _ in range(rng.randrange(1, 4)))
        out.append(Message("assistant", answer, self._tick(clock)))
        return out

    def _call(self, workspace: Workspace, module: str, at: int) -> ToolCall:
        rng = self.rng
        tool = rng.choices(TOOLS, TOOL_WEIGHTS)[0]
        name, chunk = rng.choice(self.pool.code)
        path = f"src/{workspace.package}/{name}.py"
        args: dict[str, str]
        if tool == "shell":
            args = {"command": rng.choice(("pytest -q tests/", "make lint", "git diff --stat"))}
            output = chunk if rng.random() < 0.5 else "\n".join(chunk.splitlines()[:30])
        elif tool == "read":
            args = {"path": f"{workspace.cwd}/{path}"}
            output = chunk
            if rng.random() < BIG_OUTPUT_SHARE:  # a whole file: over the 8 KiB clip
                output = "\n".join(rng.choice(self.pool.code)[1] for _ in range(6))
        elif tool == "edit":
            lines = chunk.splitlines() or [""]
            old = rng.choice(lines)
            args = {"path": f"{workspace.cwd}/{path}", "old": old, "new": old.replace(" ", "  ")}
            output = f"The file {path} has been updated."
        elif tool == "search":
            word = rng.choice(rng.choice(self.pool.prose).split()[:8] or ["def"])
            args = {"pattern": word.strip(".,:;()'\""), "path": f"src/{workspace.package}"}
            output = "\n".join(
                f"{path}:{i + 1}:{line}" for i, line in enumerate(chunk.splitlines()[:12])
            )
        else:
            args = {"path": f"src/{workspace.package}"}
            output = "\n".join(f"{rng.choice(self.pool.code)[0]}.py" for _ in range(12))
        error = rng.random() < ERROR_SHARE
        if error:
            output = rng.choice(ERRORS).format(p=path, m=module or name)
        return ToolCall(f"{rng.getrandbits(96):024x}", tool, args, output, error, at)

    def _task(self, n: int, workspace: Workspace, clock: list[int], parent: str) -> ToolCall:
        """A call that hands work to a sub-agent, whose own session it carries."""
        at = self._tick(clock)
        sub = self._session(n, f"sidequest{n}", workspace, at, self.rng.randrange(2, 4), parent)
        clock[0] = max(clock[0], sub.updated)
        prompt = sub.messages[0].text
        args = {"description": sub.title[:60], "prompt": prompt}
        call_id = f"{self.rng.getrandbits(96):024x}"
        return ToolCall(call_id, "task", args, sub.messages[-1].text, False, at, sub)


def sessions(seed: int) -> Iterator[Session]:
    """An endless, deterministic stream of main sessions (sub-agents ride on their calls)."""
    return _Builder(seed).sessions()


# ---------------------------------------------------------------------------------------
# Writers: one per on-disk format


@dataclass(slots=True)
class Planted:
    """What a written session holds, as the format's reader should report it."""

    format: str
    session_id: str
    path: str  # relative to the corpus directory
    marker: str
    subagent: bool
    workspace: str
    rewound: str | None  # a word on a rewound branch, present in the file, never found
    cjk_migration: bool
    bytes: int


class Writer(ABC):
    """Writes sessions in one format under ``out``; ``add`` returns what it planted.

    A new format: subclass, set ``name`` (the ``--format`` value) and ``subdir`` (where
    its sessions go under ``out``, as under a home directory), write ``add``, and
    decorate the class ``@register``.
    """

    name = ""
    agent = ""  # the reader's format name (what ``--agent`` and ``PATH:format`` take)
    subdir = ""
    # Whether ``subdir`` is where convodex looks by default when ``out`` is the home
    # directory (and ``$CONVODEX_HOME`` for convodex's own sessions and exports).
    home_layout = True

    def __init__(self, out: Path) -> None:
        self.out = out
        self.root = out / self.subdir

    @abstractmethod
    def add(self, session: Session) -> list[Planted]:
        """Write one main session (and its sub-agents, where the format has them)."""

    def close(self) -> None:  # noqa: B027 - most formats buffer nothing
        """Flush anything buffered (formats that hold many sessions in one file)."""

    def absorb(self, fmt: str, session: Session) -> None:  # noqa: B027 - most take nothing
        """Take in a session another writer of this corpus wrote in format ``fmt``, as an
        agent migrating its older layout would (nothing planted: it is the same session)."""

    def _write(self, path: Path, text: str) -> int:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = text.encode("utf-8")
        path.write_bytes(data)
        return len(data)

    def _planted(self, session: Session, sid: str, path: Path, size: int, rewound: bool) -> Planted:
        return Planted(
            format=self.name,
            session_id=sid,
            path=str(path.relative_to(self.out)),
            marker=session.marker,
            subagent=session.parent_id is not None,
            workspace=session.workspace.cwd,
            rewound=session.rewind.marker if rewound and session.rewind else None,
            cjk_migration=session.cjk_migration,
            bytes=size,
        )


# Format name → writer class (called with the corpus directory).
WRITERS: dict[str, type[Writer]] = {}


def register(cls: type[Writer]) -> type[Writer]:
    """Add a writer class to ``WRITERS`` under its ``name``."""
    WRITERS[cls.name] = cls
    return cls


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")[:-6] + "Z"


def _lines(records: Sequence[object]) -> str:
    return "".join(_encode(r) + "\n" for r in records)


def _branches(session: Session) -> list[tuple[str, list[Message]]]:
    """("kept" / "rewound", messages) in the order they were said."""
    if session.rewind is None:
        return [("kept", session.messages)]
    at = session.rewind.at
    return [
        ("kept", session.messages[:at]),
        ("rewound", session.rewind.messages),
        ("kept", session.messages[at:]),
    ]


def _turns(messages: Sequence[Message]) -> list[list[Message]]:
    """A user message and the agent's messages after it, turn by turn."""
    turns: list[list[Message]] = []
    for m in messages:
        if m.role == "user" or not turns:
            turns.append([m])
        else:
            turns[-1].append(m)
    return turns


# A record for a body, linked to its parent: (its id, the record).
Link = Callable[[str | None, dict[str, Any]], tuple[str, dict[str, Any]]]


def _chained(
    session: Session,
    bodies: Callable[[Message], Iterator[dict[str, Any]]],
    link: Link,
    root: str | None = None,
    back: Callable[[list[Message]], dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """The records of a tree kept in one file, each linked to the one before it on its
    branch: a rewound branch hangs off the same parent as the turns that replaced it and
    is written before them. ``back`` is the record an agent writes on going back (Qwen
    Code's rewind, Pi's branch summary), linked to that parent and continued from."""
    out: list[dict[str, Any]] = []
    kept = root  # the last record of the kept branch so far
    abandoned: list[Message] | None = None
    for branch, messages in _branches(session):
        parent = kept
        if abandoned is not None and back is not None:
            parent, record = link(kept, back(abandoned))
            out.append(record)
        for m in messages:
            for body in bodies(m):
                parent, record = link(parent, body)
                out.append(record)
        if branch == "kept":
            kept, abandoned = parent, None
        else:
            abandoned = messages
    return out


@dataclass(frozen=True, slots=True)
class ToolNames:
    """How one agent names the neutral tools and their arguments."""

    tools: dict[str, str]
    keys: dict[str, str] = field(default_factory=dict)  # "arg" or "tool.arg" → its key

    def name(self, call: ToolCall) -> str:
        return self.tools[call.tool]

    def args(self, call: ToolCall) -> dict[str, str]:
        keys = self.keys
        return {keys.get(f"{call.tool}.{k}", keys.get(k, k)): v for k, v in call.args.items()}


NATIVE_TOOLS = {
    "shell": "bash",
    "read": "read_file",
    "edit": "edit_file",
    "search": "grep",
    "list": "list_dir",
    "task": "task",
}


def _native_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Provider messages: user, assistant with ``tool_calls``, one ``tool`` per result."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "user":
            out.append({"role": "user", "origin": "user", "content": m.text, "createdAt": m.at})
            continue
        record: dict[str, Any] = {"role": "assistant", "content": m.text, "createdAt": m.at}
        if m.calls:
            record["tool_calls"] = [
                {"id": f"call_{c.id}", "name": NATIVE_TOOLS[c.tool], "arguments": _encode(c.args)}
                for c in m.calls
            ]
        out.append(record)
        for c in m.calls:
            result: dict[str, Any] = {
                "role": "tool",
                "tool_call_id": f"call_{c.id}",
                "name": NATIVE_TOOLS[c.tool],
                "content": c.output,
                "createdAt": c.at + 1,
            }
            if c.error:
                result["is_error"] = True
            out.append(result)
    return out


SYSTEM_PROMPT = "You are a coding agent working in the user's repository."


@register
class NativeWriter(Writer):
    """The native session log: the effective branch (a rewind rewrites the log)."""

    name = "native"
    agent = "session_log"
    subdir = "sessions"

    def add(self, session: Session) -> list[Planted]:
        records = [
            {"role": "system", "content": SYSTEM_PROMPT},
            *_native_messages(session.messages),
        ]
        body = _lines(records)
        path = self.root / f"{session.id}.jsonl"
        size = self._write(path, body)
        meta = {
            "id": session.id,
            "name": session.title[:60],
            "workspace_root": session.workspace.cwd,
            "revision": len(records),
            "content_digest": hashlib.sha256(body.encode("utf-8")).hexdigest(),
            "created_at": session.created,
            "updated_at": session.updated,
        }
        self._write(path.with_name(path.name + ".meta"), json.dumps(meta, ensure_ascii=False))
        planted = [self._planted(session, session.id, path, size, False)]
        for sub in session.subagents():
            sub_path = self.root / "subagents" / f"{sub.id}.jsonl"
            sub_size = self._write(sub_path, _lines(_native_messages(sub.messages)))
            sidecar = {"ref": sub.id, "parentSession": session.id, "name": sub.title[:60]}
            self._write(sub_path.with_name(f"{sub.id}.meta.json"), json.dumps(sidecar))
            planted.append(self._planted(sub, sub.id, sub_path, sub_size, False))
        return planted


def _record_ids(sid: str) -> Iterator[str]:
    """UUID-shaped ids unique within a session, derived from its id."""
    head = sid[:24]
    n = 0
    while True:
        n += 1
        yield f"{head}{n:012x}"


CLAUDE_TOOLS = {
    "shell": "Bash",
    "read": "Read",
    "edit": "Edit",
    "search": "Grep",
    "list": "Glob",
    "task": "Task",
}


def _claude_input(call: ToolCall) -> dict[str, str]:
    a = call.args
    if call.tool == "shell":
        return {"command": a["command"], "description": f"Run {a['command'].split()[0]}"}
    if call.tool == "read":
        return {"file_path": a["path"]}
    if call.tool == "edit":
        return {"file_path": a["path"], "old_string": a["old"], "new_string": a["new"]}
    if call.tool == "search":
        return {"pattern": a["pattern"], "path": a["path"], "output_mode": "content"}
    if call.tool == "list":
        return {"pattern": f"{a['path']}/**/*.py"}
    return {
        "description": a["description"],
        "prompt": a["prompt"],
        "subagent_type": "general-purpose",
    }


def _claude_slug(cwd: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in cwd)


@register
class ClaudeCodeWriter(Writer):
    """Claude Code: a uuid/parentUuid tree; the rewound branch hangs off the same parent
    as the kept one, written before it; sub-agents in ``<uuid>/subagents/``."""

    name = "claude-code"
    agent = "claude_code"
    subdir = ".claude/projects"

    def add(self, session: Session) -> list[Planted]:
        folder = self.root / _claude_slug(session.workspace.cwd)
        path = folder / f"{session.id}.jsonl"
        agents = {c.id: f"a{c.id[:16]}" for m in session.messages for c in m.calls if c.subagent}
        records = self._records(session, session.id, agents, None)
        if session.number % 3 == 0:  # some sessions carry a summary line (their title)
            leaf = records[-1]["uuid"]
            records.insert(0, {"type": "summary", "summary": session.title, "leafUuid": leaf})
        size = self._write(path, _lines(records))
        planted = [self._planted(session, session.id, path, size, session.rewind is not None)]
        for call in (c for m in session.messages for c in m.calls if c.subagent):
            sub = call.subagent
            assert sub is not None
            agent = agents[call.id]
            sub_path = folder / session.id / "subagents" / f"agent-{agent}.jsonl"
            sub_size = self._write(sub_path, _lines(self._records(sub, session.id, {}, agent)))
            meta = {"agentType": "general-purpose", "description": call.args["description"]}
            self._write(sub_path.with_name(f"agent-{agent}.meta.json"), _encode(meta))
            planted.append(self._planted(sub, sub_path.stem, sub_path, sub_size, False))
        return planted

    def _records(
        self, session: Session, sid: str, agents: dict[str, str], agent: str | None
    ) -> list[dict[str, Any]]:
        base: dict[str, Any] = {
            "isSidechain": agent is not None,
            "userType": "external",
            "cwd": session.workspace.cwd,
            "sessionId": sid,
            "version": "2.0.14",
            "gitBranch": "main",
        }
        if agent is not None:
            base["agentId"] = agent
        ids = _record_ids(session.id)

        def link(parent: str | None, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
            uid = next(ids)
            return uid, {"parentUuid": parent, **base, **body, "uuid": uid}

        return _chained(session, lambda m: self._bodies(m, agents, ids), link)

    def _bodies(
        self, m: Message, agents: dict[str, str], ids: Iterator[str]
    ) -> Iterator[dict[str, Any]]:
        stamp = iso(m.at)
        if m.role == "user":
            yield {
                "type": "user",
                "message": {"role": "user", "content": m.text},
                "timestamp": stamp,
            }
            return
        blocks: list[dict[str, Any]] = []
        if m.thinking:
            blocks.append({"type": "thinking", "thinking": m.thinking, "signature": "sig"})
        if m.text:
            blocks.append({"type": "text", "text": m.text})
        for c in m.calls:
            tool_input = _claude_input(c)
            blocks.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_{c.id}",
                    "name": CLAUDE_TOOLS[c.tool],
                    "input": tool_input,
                }
            )
        message_id = f"msg_01{next(ids)[-6:]}{m.at:x}"
        for block in blocks:  # streamed: one line per content block, one message id
            yield {
                "type": "assistant",
                "requestId": f"req_{message_id[4:]}",
                "message": {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet-4-5-20250929",
                    "content": [block],
                    "stop_reason": "tool_use" if m.calls else "end_turn",
                    "usage": {"input_tokens": 4, "output_tokens": 120},
                },
                "timestamp": stamp,
            }
        for c in m.calls:
            content: Any = c.output
            if c.subagent is not None:
                content = [
                    {"type": "text", "text": c.output},
                    {"type": "text", "text": f"agentId: {agents[c.id]}"},
                ]
            body: dict[str, Any] = {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [
                        {
                            "tool_use_id": f"toolu_{c.id}",
                            "type": "tool_result",
                            "content": content,
                            "is_error": c.error,
                        }
                    ],
                },
                "timestamp": iso(c.at + 1),
            }
            if c.tool == "shell" and not c.error:
                body["toolUseResult"] = {"stdout": c.output, "stderr": "", "interrupted": False}
            yield body


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _codex_call(call: ToolCall, cwd: str) -> dict[str, Any]:
    a = call.args
    if call.tool == "edit":
        patch = (
            f"*** Begin Patch\n*** Update File: {a['path']}\n@@\n-{a['old']}\n+{a['new']}\n"
            "*** End Patch\n"
        )
        return {
            "type": "custom_tool_call",
            "status": "completed",
            "call_id": f"call_{call.id}",
            "name": "apply_patch",
            "input": patch,
        }
    if call.tool == "task":
        arguments = _encode({"message": a["prompt"], "agent_type": "explorer"})
        return {
            "type": "function_call",
            "name": "spawn_agent",
            "arguments": arguments,
            "call_id": f"call_{call.id}",
        }
    command = {
        "shell": a.get("command", ""),
        "read": f"sed -n '1,200p' {_quote(a.get('path', ''))}",
        "search": f"rg -n {_quote(a.get('pattern', ''))} {_quote(a.get('path', ''))}",
        "list": f"ls {_quote(a.get('path', ''))}",
    }[call.tool]
    arguments = _encode({"command": ["bash", "-lc", command], "workdir": cwd})
    return {
        "type": "function_call",
        "name": "shell",
        "arguments": arguments,
        "call_id": f"call_{call.id}",
    }


def _codex_output(call: ToolCall) -> dict[str, Any]:
    code = 1 if call.error else 0
    if call.tool == "edit":
        output = _encode(
            {"output": call.output, "metadata": {"exit_code": code, "duration_seconds": 0.1}}
        )
        return {"type": "custom_tool_call_output", "call_id": f"call_{call.id}", "output": output}
    text = f"Exit code: {code}\nWall time: 0.4 seconds\nOutput:\n{call.output}"
    if call.tool == "task":
        text = call.output
    return {"type": "function_call_output", "call_id": f"call_{call.id}", "output": text}


@register
class CodexWriter(Writer):
    """Codex CLI rollouts; a rewound branch is followed by ``thread_rolled_back``."""

    name = "codex"
    agent = "codex"
    subdir = ".codex/sessions"

    def add(self, session: Session) -> list[Planted]:
        path, size = self._rollout(session, None)
        planted = [self._planted(session, session.id, path, size, session.rewind is not None)]
        for sub in session.subagents():
            sub_path, sub_size = self._rollout(sub, session.id)
            planted.append(self._planted(sub, sub.id, sub_path, sub_size, False))
        return planted

    def _rollout(self, session: Session, parent: str | None) -> tuple[Path, int]:
        cwd = session.workspace.cwd
        start = iso(session.created)
        source: Any = "cli"
        if parent is not None:
            spawn = {
                "parent_thread_id": parent,
                "depth": 1,
                "agent_nickname": "Explorer",
                "agent_role": "explorer",
            }
            source = {"subagent": {"thread_spawn": spawn}}
        meta = {
            "id": session.id,
            "timestamp": start,
            "cwd": cwd,
            "originator": "codex_cli_rs",
            "cli_version": "0.46.0",
            "instructions": None,
            "source": source,
            "model_provider": "openai",
            "git": {"branch": "main"},
        }
        context = (
            f"<environment_context>\n  <cwd>{cwd}</cwd>\n  <approval_policy>on-request"
            "</approval_policy>\n  <sandbox_mode>workspace-write</sandbox_mode>\n"
            "  <shell>bash</shell>\n</environment_context>"
        )
        records: list[dict[str, Any]] = [
            {"timestamp": start, "type": "session_meta", "payload": meta},
            {
                "timestamp": start,
                "type": "response_item",
                "payload": {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": context}],
                },
            },
        ]
        for branch, messages in _branches(session):
            for m in messages:
                records += self._items(m, cwd)
            if branch == "rewound":
                turns = sum(1 for m in messages if m.role == "user")
                records.append(
                    {
                        "timestamp": iso(messages[-1].at + 1),
                        "type": "event_msg",
                        "payload": {"type": "thread_rolled_back", "num_turns": turns},
                    }
                )
        day = time.gmtime(session.created / 1000)
        path = (
            self.root
            / f"{day.tm_year:04d}"
            / f"{day.tm_mon:02d}"
            / f"{day.tm_mday:02d}"
            / f"rollout-{time.strftime('%Y-%m-%dT%H-%M-%S', day)}-{session.id}.jsonl"
        )
        return path, self._write(path, _lines(records))

    def _items(self, m: Message, cwd: str) -> list[dict[str, Any]]:
        t = iso(m.at)
        if m.role == "user":
            return [
                {
                    "timestamp": t,
                    "type": "turn_context",
                    "payload": {
                        "cwd": cwd,
                        "approval_policy": "on-request",
                        "model": "gpt-5-codex",
                        "effort": "medium",
                        "summary": "auto",
                    },
                },
                {
                    "timestamp": t,
                    "type": "response_item",
                    "payload": {
                        "type": "message",
                        "role": "user",
                        "content": [{"type": "input_text", "text": m.text}],
                    },
                },
                {
                    "timestamp": t,
                    "type": "event_msg",
                    "payload": {"type": "user_message", "message": m.text, "images": []},
                },
            ]
        out: list[dict[str, Any]] = []
        if m.thinking:
            out.append(
                {
                    "timestamp": t,
                    "type": "response_item",
                    "payload": {
                        "type": "reasoning",
                        "summary": [{"type": "summary_text", "text": m.thinking}],
                        "content": None,
                        "encrypted_content": "gAAAAB" + "x" * 64,
                    },
                }
            )
        if m.text:
            out.append(
                {
                    "timestamp": t,
                    "type": "response_item",
                    "payload": {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": m.text}],
                    },
                }
            )
            out.append(
                {
                    "timestamp": t,
                    "type": "event_msg",
                    "payload": {"type": "agent_message", "message": m.text},
                }
            )
        for c in m.calls:
            out.append({"timestamp": t, "type": "response_item", "payload": _codex_call(c, cwd)})
        for c in m.calls:
            out.append(
                {"timestamp": iso(c.at + 1), "type": "response_item", "payload": _codex_output(c)}
            )
        if not m.calls:
            out.append(
                {
                    "timestamp": t,
                    "type": "event_msg",
                    "payload": {
                        "type": "token_count",
                        "info": {"total_token_usage": {"total_tokens": 1200}},
                    },
                }
            )
        return out


GEMINI_TOOLS = {
    "shell": ("run_shell_command", "Shell"),
    "read": ("read_file", "ReadFile"),
    "edit": ("replace", "Edit"),
    "search": ("search_file_content", "SearchText"),
    "list": ("list_directory", "ReadFolder"),
    "task": ("delegate_to_agent", "Delegate"),
}


def _gemini_args(call: ToolCall) -> dict[str, str]:
    a = call.args
    if call.tool == "shell":
        return {"command": a["command"], "description": f"Run {a['command'].split()[0]}"}
    if call.tool == "read":
        return {"absolute_path": a["path"]}
    if call.tool == "edit":
        return {"file_path": a["path"], "old_string": a["old"], "new_string": a["new"]}
    if call.tool == "search":
        return {"pattern": a["pattern"], "path": a["path"]}
    if call.tool == "list":
        return {"path": a["path"]}
    return {"agent_name": "codebase_investigator", "objective": a["prompt"]}


@register
class GeminiWriter(Writer):
    """Gemini CLI chats: one JSON document each; a rewound session is the JSONL form
    with ``$rewindTo``; sub-agents are chats of kind ``subagent``."""

    name = "gemini"
    agent = "gemini"
    subdir = ".gemini/tmp"

    def add(self, session: Session) -> list[Planted]:
        path, size = self._chat(session, "main")
        planted = [self._planted(session, session.id, path, size, session.rewind is not None)]
        for sub in session.subagents():
            sub_path, sub_size = self._chat(sub, "subagent")
            planted.append(self._planted(sub, sub.id, sub_path, sub_size, False))
        return planted

    def _chat(self, session: Session, kind: str) -> tuple[Path, int]:
        project = hashlib.sha256(session.workspace.cwd.encode("utf-8")).hexdigest()
        stamp = time.strftime("%Y-%m-%dT%H-%M", time.gmtime(session.created / 1000))
        name = f"session-{stamp}-{session.id[:8]}"
        header: dict[str, Any] = {
            "sessionId": session.id,
            "projectHash": project,
            "startTime": iso(session.created),
            "lastUpdated": iso(session.updated),
            "kind": kind,
        }
        if session.number % 2 == 0:
            header["summary"] = session.title
        ids = _record_ids(session.id)
        folder = self.root / project / "chats"
        if session.rewind is None:
            body = [_encode(self._message(m, ids)) for m in session.messages]
            head = ",\n".join(f"  {_encode(k)}: {_encode(v)}" for k, v in header.items())
            text = head + ',\n  "messages": [\n    ' + ",\n    ".join(body) + "\n  ]\n}\n"
            return folder / f"{name}.json", self._write(folder / f"{name}.json", "{\n" + text)
        records: list[dict[str, Any]] = [header]
        for branch, messages in _branches(session):
            rewound = [self._message(m, ids) for m in messages]
            records += rewound
            if branch == "rewound":
                records.append({"$rewindTo": rewound[0]["id"]})
            records.append({"$set": {"lastUpdated": iso(messages[-1].at)}})
        return folder / f"{name}.jsonl", self._write(folder / f"{name}.jsonl", _lines(records))

    def _message(self, m: Message, ids: Iterator[str]) -> dict[str, Any]:
        t = iso(m.at)
        if m.role == "user":
            return {"id": next(ids), "timestamp": t, "type": "user", "content": [{"text": m.text}]}
        record: dict[str, Any] = {
            "id": next(ids),
            "timestamp": t,
            "type": "gemini",
            "content": m.text,
            "thoughts": [{"subject": "Planning", "description": m.thinking, "timestamp": t}]
            if m.thinking
            else [],
            "tokens": {
                "input": 9000,
                "output": 120,
                "cached": 0,
                "thoughts": 0,
                "tool": 0,
                "total": 9120,
            },
            "model": "gemini-2.5-pro",
        }
        if m.calls:
            calls = []
            for c in m.calls:
                name, display = GEMINI_TOOLS[c.tool]
                call_id = f"{name}-{c.at}-{c.id[:12]}"
                response = {"error": c.output} if c.error else {"output": c.output}
                calls.append(
                    {
                        "id": call_id,
                        "name": name,
                        "args": _gemini_args(c),
                        "result": [
                            {
                                "functionResponse": {
                                    "id": call_id,
                                    "name": name,
                                    "response": response,
                                }
                            }
                        ],
                        "status": "error" if c.error else "success",
                        "timestamp": iso(c.at + 1),
                        "displayName": display,
                        "renderOutputAsMarkdown": False,
                    }
                )
            record["toolCalls"] = calls
        return record


def _python_code(call: ToolCall) -> str:
    """What a ChatGPT code-interpreter call would run for a neutral tool call."""
    a = call.args
    if call.tool == "shell":
        return f"import subprocess\nprint(subprocess.run({a['command']!r}, shell=True))"
    if call.tool == "read":
        return f"print(open({a['path']!r}).read())"
    if call.tool == "edit":
        return (
            f"p = {a['path']!r}\ns = open(p).read()\n"
            f"open(p, 'w').write(s.replace({a['old']!r}, {a['new']!r}))"
        )
    if call.tool == "search":
        return (
            f"import subprocess\nsubprocess.run(['grep', '-rn', {a['pattern']!r}, {a['path']!r}])"
        )
    if call.tool == "list":
        return f"import os\nprint(os.listdir({a['path']!r}))"
    return f"# {a['description']}\n# {a['prompt']}"


@register
class ChatGptWriter(Writer):
    """ChatGPT ``conversations.json`` exports: a mapping tree whose ``current_node`` ends
    the kept branch; code-interpreter calls for tools; no sub-agents."""

    name = "chatgpt"
    agent = "chat_export"
    subdir = "exports"
    per_export = 200

    def __init__(self, out: Path) -> None:
        super().__init__(out)
        self.pending: list[str] = []
        self.exports = 0

    def _path(self) -> Path:
        return self.root / f"chatgpt-{self.exports:03d}" / "conversations.json"

    def add(self, session: Session) -> list[Planted]:
        encoded = _encode(self._conversation(session))
        self.pending.append(encoded)
        size = len(encoded.encode("utf-8")) + 1
        planted = self._planted(session, session.id, self._path(), size, bool(session.rewind))
        if len(self.pending) >= self.per_export:
            self.close()
        return [planted]

    def close(self) -> None:
        if self.pending:
            self._write(self._path(), "[" + ",".join(self.pending) + "]")
            self.pending = []
            self.exports += 1

    def _conversation(self, session: Session) -> dict[str, Any]:
        ids = _record_ids(session.id)
        mapping: dict[str, dict[str, Any]] = {}

        def add(parent: str | None, message: dict[str, Any] | None) -> str:
            node = next(ids)
            mapping[node] = {"id": node, "message": message, "parent": parent, "children": []}
            if parent is not None:
                mapping[parent]["children"].append(node)
            if message is not None:
                message["id"] = node
            return node

        def message(role: str, at: int, content: dict[str, Any], **extra: Any) -> dict[str, Any]:
            return {
                "author": {"role": role, "name": extra.pop("name", None), "metadata": {}},
                "create_time": at / 1000,
                "update_time": None,
                "content": content,
                "status": "finished_successfully",
                "end_turn": extra.pop("end_turn", None),
                "weight": 1.0,
                "metadata": extra.pop("metadata", {}),
                "recipient": extra.pop("recipient", "all"),
                "channel": None,
            }

        root = add(None, None)
        hidden = {"is_visually_hidden_from_conversation": True}
        system = message(
            "system", session.created, {"content_type": "text", "parts": [""]}, metadata=hidden
        )
        kept = add(root, system)
        for branch, messages in _branches(session):
            node = kept
            for m in messages:
                if m.thinking:
                    thoughts = {
                        "content_type": "thoughts",
                        "thoughts": [{"summary": "Thinking", "content": m.thinking}],
                    }
                    node = add(node, message("assistant", m.at, thoughts))
                if m.text:
                    content = {"content_type": "text", "parts": [m.text]}
                    node = add(node, message(m.role, m.at, content, end_turn=not m.calls))
                for c in m.calls:
                    code = {"content_type": "code", "language": "unknown", "text": _python_code(c)}
                    node = add(node, message("assistant", c.at, code, recipient="python"))
                    output = {"content_type": "execution_output", "text": c.output}
                    node = add(node, message("tool", c.at + 1, output, name="python"))
            if branch == "kept":
                kept = node
        return {
            "title": session.title[:60],
            "create_time": session.created / 1000,
            "update_time": session.updated / 1000,
            "mapping": mapping,
            "moderation_results": [],
            "current_node": kept,
            "conversation_id": session.id,
            "default_model_slug": "gpt-4o",
            "is_archived": False,
            "id": session.id,
        }


@register
class DagWriter(Writer):
    """The legacy 1.x DAG event log: a rewound branch stays in the file, behind a rewind."""

    name = "dag"
    agent = "dag"
    subdir = "legacy"
    home_layout = False  # found by its first record, wherever it is

    def add(self, session: Session) -> list[Planted]:
        records: list[dict[str, Any]] = [
            {
                "type": "system",
                "head": "main",
                "msgs": [{"role": "system", "content": SYSTEM_PROMPT}],
                "at": session.created,
            }
        ]
        leaf: str | None = None
        kept: str | None = None  # the leaf of the effective branch so far
        for branch, messages in _branches(session):
            if branch == "kept" and leaf != kept:  # back from a rewound branch
                records.append({"type": "rewind", "head": "main", "parent": kept})
                leaf = kept
            for message in _native_messages(messages):
                node = f"m{len(records)}"
                records.append(
                    {
                        "type": "message",
                        "id": node,
                        "parent": leaf,
                        "head": "main",
                        "msgs": [message],
                        "at": message["createdAt"],
                    }
                )
                leaf = node
            if branch == "kept":
                kept = leaf
        records.append({"type": "rename", "head": "main", "title": session.title[:60]})
        path = self.root / f"{session.id}.jsonl"
        size = self._write(path, _lines(records))
        return [self._planted(session, session.id, path, size, session.rewind is not None)]


# ---------------------------------------------------------------------------------------
# Writers for the other agents (issue 13): each writes the layout its reader and the
# default roots expect when ``out`` is the home directory


# Where VS Code-family editors keep their user folders, under the home directory.
EDITOR_HOME = "Library/Application Support" if sys.platform == "darwin" else ".config"


def _shifted(messages: Sequence[Message], delta: int) -> list[Message]:
    """Copies said ``delta`` ms later (a reverted turn moved to after the kept ones)."""
    return [
        replace(m, at=m.at + delta, calls=[replace(c, at=c.at + delta) for c in m.calls])
        for m in messages
    ]


def _digest(text: str, algorithm: str = "md5") -> str:
    """Agents' folder names (not security): md5 of a workspace, sha1 of a project."""
    return hashlib.new(algorithm, text.encode("utf-8"), usedforsecurity=False).hexdigest()


def _anthropic_blocks(m: Message, tools: ToolNames, ids: bool = True) -> list[dict[str, Any]]:
    """An answer's content blocks: thinking, text, then its ``tool_use`` calls."""
    blocks: list[dict[str, Any]] = []
    if m.thinking:
        blocks.append({"type": "thinking", "thinking": m.thinking, "signature": "sig"})
    if m.text:
        blocks.append({"type": "text", "text": m.text})
    for c in m.calls:
        call = {"type": "tool_use", "id": f"toolu_{c.id}"} if ids else {"type": "tool_use"}
        blocks.append({**call, "name": tools.name(c), "input": tools.args(c)})
    return blocks


def _anthropic_results(m: Message) -> list[dict[str, Any]]:
    """The ``tool_result`` blocks answering an answer's calls (sent back as the user)."""
    return [
        {
            "type": "tool_result",
            "tool_use_id": f"toolu_{c.id}",
            "content": c.output,
            **({"is_error": True} if c.error else {}),
        }
        for c in m.calls
    ]


QWEN_TOOLS = ToolNames(
    {
        "shell": "run_shell_command",
        "read": "read_file",
        "edit": "edit",
        "search": "grep_search",
        "list": "list_directory",
        "task": "task",
    },
    {
        "read.path": "absolute_path",
        "edit.path": "file_path",
        "old": "old_string",
        "new": "new_string",
    },
)


@register
class QwenWriter(Writer):
    """Qwen Code chats (``projects/<cwd slug>/chats/<id>.jsonl``): a uuid/parentUuid tree
    of Gemini-style parts; going back writes a ``rewind`` record the kept turns continue
    from; a sub-agent's records are a chat of their own, marked ``isSidechain``."""

    name = "qwen"
    agent = "qwen"
    subdir = ".qwen/projects"

    def add(self, session: Session) -> list[Planted]:
        folder = self.root / _claude_slug(session.workspace.cwd) / "chats"
        path = folder / f"{session.id}.jsonl"
        size = self._write(path, _lines(self._records(session, False)))
        planted = [self._planted(session, session.id, path, size, session.rewind is not None)]
        for sub in session.subagents():
            sub_path = folder / f"{sub.id}.jsonl"
            sub_size = self._write(sub_path, _lines(self._records(sub, True)))
            planted.append(self._planted(sub, sub.id, sub_path, sub_size, False))
        return planted

    def _records(self, session: Session, sidechain: bool) -> list[dict[str, Any]]:
        base: dict[str, Any] = {
            "sessionId": session.id,
            "cwd": session.workspace.cwd,
            "version": "0.21.13",
            "gitBranch": "main",
        }
        if sidechain:
            base["isSidechain"] = True
        ids = _record_ids(session.id)

        def link(parent: str | None, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
            uid = next(ids)
            return uid, {"uuid": uid, "parentUuid": parent, **base, **body}

        def back(abandoned: list[Message]) -> dict[str, Any]:
            payload = {"truncatedCount": len(abandoned)}
            stamp = iso(abandoned[-1].at + 1)
            return {
                "type": "system",
                "subtype": "rewind",
                "timestamp": stamp,
                "systemPayload": payload,
            }

        records = _chained(session, self._bodies, link, back=back)
        if session.number % 3 == 0 and not sidechain:  # renamed with /rename
            title = {"customTitle": session.title}
            body = {"type": "system", "subtype": "custom_title", "systemPayload": title}
            records.append(link(records[-1]["uuid"], body)[1])
        return records

    def _bodies(self, m: Message) -> Iterator[dict[str, Any]]:
        stamp = iso(m.at)
        if m.role == "user":
            parts = [{"text": m.text}]
            yield {"type": "user", "timestamp": stamp, "message": {"role": "user", "parts": parts}}
            return
        said: list[dict[str, Any]] = []
        if m.thinking:
            said.append({"text": m.thinking, "thought": True})
        if m.text:
            said.append({"text": m.text})
        for c in m.calls:
            call = {"id": f"call_{c.id}", "name": QWEN_TOOLS.name(c), "args": QWEN_TOOLS.args(c)}
            said.append({"functionCall": call})
        message = {"role": "model", "parts": said}
        yield {"type": "assistant", "timestamp": stamp, "model": "qwen3-coder", "message": message}
        for c in m.calls:
            response = {
                "id": f"call_{c.id}",
                "name": QWEN_TOOLS.name(c),
                "response": {"error" if c.error else "output": c.output},
            }
            yield {
                "type": "tool_result",
                "timestamp": iso(c.at + 1),
                "message": {"role": "user", "parts": [{"functionResponse": response}]},
                "toolCallResult": {
                    "callId": f"call_{c.id}",
                    "status": "error" if c.error else "success",
                },
            }


COPILOT_TOOLS = ToolNames(
    {
        "shell": "bash",
        "read": "view",
        "edit": "edit",
        "search": "grep",
        "list": "glob",
        "task": "task",
    },
    {"old": "old_str", "new": "new_str", "list.path": "pattern"},
)
Emit = Callable[..., None]


@register
class CopilotCliWriter(Writer):
    """GitHub Copilot CLI (``session-state/<id>/events.jsonl`` and ``workspace.yaml``): one
    event a line in a linear chain; a sub-agent's events sit in its parent's log between
    the task call's start and completion, marked with ``parentToolCallId``."""

    name = "copilot-cli"
    agent = "copilot_cli"
    subdir = ".copilot/session-state"

    def add(self, session: Session) -> list[Planted]:
        cwd = session.workspace.cwd
        ids = _record_ids(session.id)
        events: list[dict[str, Any]] = []

        def emit(kind: str, at: int, **data: Any) -> None:
            parent = events[-1]["id"] if events else None
            stamp = iso(at)
            events.append(
                {
                    "type": kind,
                    "data": data,
                    "id": next(ids),
                    "timestamp": stamp,
                    "parentId": parent,
                }
            )

        context = {"cwd": cwd, "gitRoot": cwd, "branch": "main"}
        emit(
            "session.start",
            session.created,
            sessionId=session.id,
            version=1,
            producer="copilot-agent",
            copilotVersion="0.0.354",
            startTime=iso(session.created),
            context=context,
        )
        self._events(session.messages, emit, None)
        folder = self.root / session.id
        path = folder / "events.jsonl"
        size = self._write(path, _lines(events))
        summary = f"id: {session.id}\ncwd: {cwd}\nsummary: {session.title}\n"
        self._write(folder / "workspace.yaml", summary)
        planted = [self._planted(session, session.id, path, size, False)]
        # Sub-agent work is in the parent's log: its session is the parent's.
        planted += [self._planted(sub, session.id, path, 0, False) for sub in session.subagents()]
        return planted

    def _events(self, messages: Sequence[Message], emit: Emit, parent: str | None) -> None:
        inside = {"parentToolCallId": parent} if parent else {}
        for m in messages:
            if m.role == "user":
                emit("user.message", m.at, content=m.text, attachments=[], **inside)
                continue
            if m.thinking:
                emit("assistant.reasoning", m.at, content=m.thinking, **inside)
            requests = [
                {
                    "toolCallId": f"call_{c.id}",
                    "name": COPILOT_TOOLS.name(c),
                    "arguments": COPILOT_TOOLS.args(c),
                    "type": "function",
                }
                for c in m.calls
            ]
            emit("assistant.message", m.at, content=m.text, toolRequests=requests, **inside)
            for c, request in zip(m.calls, requests, strict=True):
                call_id, name = f"call_{c.id}", request["name"]
                emit("tool.execution_start", c.at, toolCallId=call_id, toolName=name, **inside)
                done = c.at + 1
                if c.subagent is not None:
                    agent = {"toolCallId": call_id, "agentName": "general-purpose"}
                    emit("subagent.started", c.at, **agent, **inside)
                    self._events(c.subagent.messages, emit, call_id)
                    done = c.subagent.updated + 1
                    emit("subagent.completed", done, **agent, **inside)
                emit(
                    "tool.execution_complete",
                    done,
                    toolCallId=call_id,
                    success=not c.error,
                    result={"content": c.output},
                    **inside,
                )


VSCODE_TOOLS = {
    "shell": "run_in_terminal",
    "read": "copilot_readFile",
    "edit": "copilot_replaceString",
    "search": "copilot_findTextInFiles",
    "list": "copilot_listDirectory",
    "task": "runSubagent",
}


def _vscode_invocation(call: ToolCall) -> dict[str, Any]:
    """A ``toolInvocationSerialized`` response part with its result details."""
    a = call.args
    said = {
        "shell": f"Running `{a.get('command')}`",
        "read": f"Reading {a.get('path')}",
        "edit": f"Editing {a.get('path')}",
        "search": f"Searching text for `{a.get('pattern')}` in {a.get('path')}",
        "list": f"Listing {a.get('path')}",
        "task": f"{a.get('description')}: {a.get('prompt')}",
    }[call.tool]
    item: dict[str, Any] = {
        "kind": "toolInvocationSerialized",
        "toolId": VSCODE_TOOLS[call.tool],
        "toolCallId": f"call_{call.id}",
        "invocationMessage": {"value": said},
        "isConfirmed": True,
        "isComplete": True,
    }
    if call.tool == "shell":
        command = {"original": a["command"]}
        item["toolSpecificData"] = {"kind": "terminal", "commandLine": command, "language": "sh"}
    item["resultDetails"] = {
        "input": _encode(a),
        "output": [{"type": "embed", "isText": True, "value": call.output}],
        "isError": call.error,
    }
    return item


@register
class CopilotVscodeWriter(Writer):
    """GitHub Copilot Chat in VS Code (``workspaceStorage/<hash>/chatSessions/``, the
    folder named in ``workspace.json``): a request per turn holding the prompt and every
    response part; ``.json`` is the serialized model, ``.jsonl`` (every rewound session,
    and every other one) its operation log, where editing a request splices the later ones
    away."""

    name = "copilot-vscode"
    agent = "copilot_vscode"
    subdir = f"{EDITOR_HOME}/Code/User/workspaceStorage"

    def add(self, session: Session) -> list[Planted]:
        uri = Path(session.workspace.cwd).as_uri()
        folder = self.root / _digest(uri)
        if not (folder / "workspace.json").exists():
            self._write(folder / "workspace.json", _encode({"folder": uri}))
        header: dict[str, Any] = {
            "version": 3,
            "requesterUsername": "dev",
            "responderUsername": "GitHub Copilot",
            "initialLocation": "panel",
            "sessionId": session.id,
            "creationDate": session.created,
            "lastMessageDate": session.updated,
        }
        titled = session.number % 3 == 0
        rewound = session.rewind is not None
        chats = folder / "chatSessions"
        if rewound or session.number % 2 == 1:
            path = chats / f"{session.id}.jsonl"
            size = self._write(path, _lines(self._operations(session, header, titled)))
        else:
            requests = []
            for turn in _turns(session.messages):
                request, response = self._request(turn)
                requests.append({**request, "response": response})
            title = {"customTitle": session.title} if titled else {}
            path = chats / f"{session.id}.json"
            size = self._write(path, _encode({**header, **title, "requests": requests}))
        return [self._planted(session, session.id, path, size, rewound)]

    def _operations(
        self, session: Session, header: dict[str, Any], titled: bool
    ) -> list[dict[str, Any]]:
        """The log: the first request in the initial state, later ones pushed, each answer
        set when it is done; the request after a rewind truncates the abandoned ones."""
        ops: list[dict[str, Any]] = []
        size = kept = 0  # requests in the log's state; of them, on the kept branch
        for branch, messages in _branches(session):
            for turn in _turns(messages):
                request, response = self._request(turn)
                if not ops:
                    ops.append({"kind": 0, "v": {**header, "requests": [request]}})
                else:
                    push: dict[str, Any] = {"kind": 2, "k": ["requests"], "v": [request]}
                    if size > kept:  # the edited request: the abandoned ones go
                        push["i"] = size = kept
                    ops.append(push)
                ops.append({"kind": 1, "k": ["requests", size, "response"], "v": response})
                size += 1
                if branch == "kept":
                    kept = size
        if titled:
            ops.append({"kind": 1, "k": ["customTitle"], "v": session.title})
        return ops

    def _request(self, turn: list[Message]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """A request with no answer yet, and its answer's parts."""
        prompt = turn[0]
        response: list[dict[str, Any]] = []
        for m in turn[1:]:
            if m.thinking:
                response.append({"kind": "thinking", "value": m.thinking})
            if m.text:
                response.append({"kind": "markdownContent", "content": {"value": m.text}})
            response.extend(_vscode_invocation(c) for c in m.calls)
        request = {
            "requestId": f"request_{prompt.at:x}",
            "timestamp": prompt.at,
            "modelId": "copilot/gpt-4.1",
            "message": {"text": prompt.text, "parts": [{"kind": "text", "text": prompt.text}]},
            "response": [],
            "isCanceled": False,
        }
        return request, response


DROID_TOOLS = ToolNames(
    {
        "shell": "Execute",
        "read": "Read",
        "edit": "Edit",
        "search": "Grep",
        "list": "LS",
        "task": "Task",
    },
    {
        "read.path": "file_path",
        "edit.path": "file_path",
        "old": "old_str",
        "new": "new_str",
        "list.path": "directory_path",
    },
)


@register
class DroidWriter(Writer):
    """Factory Droid's session store (``sessions/<cwd slug>/<id>.jsonl``): a
    ``session_start`` line, then Anthropic-style messages in a ``parentId`` tree whose
    rewound branch hangs off the same parent as the turns that replaced it."""

    name = "droid"
    agent = "droid"
    subdir = ".factory/sessions"

    def add(self, session: Session) -> list[Planted]:
        ids = _record_ids(session.id)

        def link(parent: str | None, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
            mid = next(ids)
            return mid, {"type": "message", "id": mid, "parentId": parent, **body}

        head = {
            "type": "session_start",
            "id": session.id,
            "title": session.title,
            "sessionTitle": session.title,
            "owner": "dev",
            "version": "0.81.0",
            "cwd": session.workspace.cwd,
        }
        records = [head, *_chained(session, self._bodies, link, root=session.id)]
        path = self.root / _claude_slug(session.workspace.cwd) / f"{session.id}.jsonl"
        size = self._write(path, _lines(records))
        return [self._planted(session, session.id, path, size, session.rewind is not None)]

    def _bodies(self, m: Message) -> Iterator[dict[str, Any]]:
        stamp = iso(m.at)
        if m.role == "user":
            content = [{"type": "text", "text": m.text}]
            yield {"timestamp": stamp, "message": {"role": "user", "content": content}}
            return
        blocks = _anthropic_blocks(m, DROID_TOOLS)
        yield {"timestamp": stamp, "message": {"role": "assistant", "content": blocks}}
        if m.calls:
            results = {"role": "user", "content": _anthropic_results(m)}
            yield {"timestamp": iso(m.calls[-1].at + 1), "message": results}


PI_TOOLS = ToolNames(
    {
        "shell": "bash",
        "read": "read",
        "edit": "edit",
        "search": "grep",
        "list": "ls",
        "task": "task",
    },
    {"old": "oldText", "new": "newText"},
)


@register
class PiWriter(Writer):
    """Pi (``agent/sessions/--<cwd>--/<time>_<id>.jsonl``): a version 3 ``session`` header,
    then entries in an ``id``/``parentId`` tree; going back in ``/tree`` writes a
    ``branch_summary`` the kept turns continue from; ``session_info`` names a session."""

    name = "pi"
    agent = "pi"
    subdir = ".pi/agent/sessions"

    def add(self, session: Session) -> list[Planted]:
        cwd = session.workspace.cwd
        ids = _record_ids(session.id)

        def link(parent: str | None, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
            eid = next(ids)[-8:]
            return eid, {"type": body["type"], "id": eid, "parentId": parent, **body}

        def back(abandoned: list[Message]) -> dict[str, Any]:
            summary = "The person went back; the abandoned attempt changed nothing."
            return {
                "type": "branch_summary",
                "timestamp": iso(abandoned[-1].at + 1),
                "summary": summary,
            }

        header = {
            "type": "session",
            "version": 3,
            "id": session.id,
            "timestamp": iso(session.created),
            "cwd": cwd,
        }
        model = {
            "type": "model_change",
            "timestamp": iso(session.created),
            "provider": "anthropic",
            "modelId": "claude-sonnet-4-5",
        }
        root, first = link(None, model)
        records = [header, first, *_chained(session, self._bodies, link, root, back)]
        if session.number % 3 == 0:
            info = {"type": "session_info", "timestamp": iso(session.updated + 1)}
            records.append(link(records[-1]["id"], {**info, "name": session.title})[1])
        folder = self.root / f"--{cwd.lstrip('/').replace('/', '-')}--"
        stamp = iso(session.created).replace(":", "-").replace(".", "-")
        path = folder / f"{stamp}_{session.id}.jsonl"
        size = self._write(path, _lines(records))
        return [self._planted(session, session.id, path, size, session.rewind is not None)]

    def _bodies(self, m: Message) -> Iterator[dict[str, Any]]:
        stamp = iso(m.at)
        content: list[dict[str, Any]] = []
        if m.role == "user":
            content.append({"type": "text", "text": m.text})
            message = {"role": "user", "content": content, "timestamp": m.at}
            yield {"type": "message", "timestamp": stamp, "message": message}
            return
        if m.thinking:
            content.append({"type": "thinking", "thinking": m.thinking})
        if m.text:
            content.append({"type": "text", "text": m.text})
        for c in m.calls:
            call = {"id": f"toolu_{c.id}", "name": PI_TOOLS.name(c), "arguments": PI_TOOLS.args(c)}
            content.append({"type": "toolCall", **call})
        answer = {
            "role": "assistant",
            "content": content,
            "api": "anthropic-messages",
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            "usage": {"input": 9000, "output": 120, "cacheRead": 0, "cacheWrite": 0},
            "stopReason": "toolUse" if m.calls else "stop",
            "timestamp": m.at,
        }
        yield {"type": "message", "timestamp": stamp, "message": answer}
        for c in m.calls:
            result = {
                "role": "toolResult",
                "toolCallId": f"toolu_{c.id}",
                "toolName": PI_TOOLS.name(c),
                "content": [{"type": "text", "text": c.output}],
                "isError": c.error,
                "timestamp": c.at + 1,
            }
            yield {"type": "message", "timestamp": iso(c.at + 1), "message": result}


def _cline_cli_call(call: ToolCall) -> tuple[str, dict[str, Any], str]:
    """The Cline SDK's tool, its input, and the query its result is reported under."""
    a = call.args
    if call.tool == "shell":
        return "run_commands", {"commands": [a["command"]]}, a["command"]
    if call.tool == "read":
        return "read_files", {"files": [{"path": a["path"]}]}, a["path"]
    if call.tool == "edit":
        edit = {"command": "str_replace", "path": a["path"], "old_text": a["old"]}
        return "editor", {**edit, "new_text": a["new"]}, f"edit:{a['path']}"
    if call.tool == "search":
        return "search_codebase", {"queries": [a["pattern"]], "path": a["path"]}, a["pattern"]
    if call.tool == "list":
        return "run_commands", {"commands": [f"ls {a['path']}"]}, f"ls {a['path']}"
    return "spawn_agent", {"agent": "researcher", "task": a["prompt"]}, a["description"]


@register
class ClineWriter(Writer):
    """Cline's CLI/SDK sessions (``data/sessions/<id>/``): ``<id>.messages.json`` (tab
    indented, like the SDK's) beside its manifest ``<id>.json``; a spawned teammate is a
    session of its own whose ``agent`` is not the ``lead``. Compaction rewrites the file:
    no branches."""

    name = "cline"
    agent = "cline"
    subdir = ".cline/data/sessions"

    def add(self, session: Session) -> list[Planted]:
        sid = self._id(session)
        path = self.root / sid / f"{sid}.messages.json"
        size = self._write(path, self._messages(session, sid, "lead"))
        manifest = {
            "version": 1,
            "session_id": sid,
            "source": "cli",
            "started_at": iso(session.created),
            "ended_at": iso(session.updated),
            "status": "completed",
            "interactive": True,
            "provider": "cline",
            "model": "anthropic/claude-sonnet-4.5",
            "cwd": session.workspace.cwd,
            "workspace_root": session.workspace.cwd,
            "enable_tools": True,
            "enable_spawn": True,
            "metadata": {"title": session.title, "mode": "act"},
        }
        self._write(path.with_name(f"{sid}.json"), json.dumps(manifest, indent="\t"))
        planted = [self._planted(session, sid, path, size, False)]
        for sub in session.subagents():
            sub_sid = self._id(sub)
            sub_path = self.root / sub_sid / f"{sub_sid}.messages.json"
            sub_size = self._write(sub_path, self._messages(sub, sub_sid, "researcher"))
            planted.append(self._planted(sub, sub_sid, sub_path, sub_size, False))
        return planted

    @staticmethod
    def _id(session: Session) -> str:
        return f"{session.created}_{session.id[:5]}"

    def _messages(self, session: Session, sid: str, agent: str) -> str:
        messages: list[dict[str, Any]] = []
        for m in session.messages:
            mid = f"msg_{m.at:x}"
            if m.role == "user":
                text = [{"type": "text", "text": m.text}]
                messages.append({"id": mid, "role": "user", "content": text, "ts": m.at})
                continue
            blocks: list[dict[str, Any]] = []
            if m.thinking:
                blocks.append({"type": "thinking", "thinking": m.thinking})
            if m.text:
                blocks.append({"type": "text", "text": m.text})
            results: list[dict[str, Any]] = []
            for c in m.calls:
                name, arguments, query = _cline_cli_call(c)
                blocks.append(
                    {"type": "tool_use", "id": f"toolu_{c.id}", "name": name, "input": arguments}
                )
                item = (
                    {"query": query, "error": c.output, "success": False}
                    if c.error
                    else {"query": query, "result": c.output}
                )
                results.append(
                    {
                        "type": "tool_result",
                        "tool_use_id": f"toolu_{c.id}",
                        "name": name,
                        "content": [item],
                        **({"is_error": True} if c.error else {}),
                    }
                )
            model = {"id": "anthropic/claude-sonnet-4.5", "provider": "cline"}
            messages.append(
                {"id": mid, "role": "assistant", "content": blocks, "ts": m.at, "modelInfo": model}
            )
            if results:
                at = m.calls[-1].at + 1
                messages.append({"id": f"{mid}_tool", "role": "user", "content": results, "ts": at})
        document = {
            "version": 1,
            "updated_at": iso(session.updated),
            "agent": agent,
            "sessionId": sid,
            "messages": messages,
        }
        return json.dumps(document, ensure_ascii=False, indent="\t")


def _cline_task_input(call: ToolCall) -> dict[str, str]:
    a = call.args
    if call.tool == "edit":
        diff = f"------- SEARCH\n{a['old']}\n=======\n{a['new']}\n+++++++ REPLACE"
        return {"path": a["path"], "diff": diff}
    if call.tool == "shell":
        return {"command": a["command"], "requires_approval": "false"}
    if call.tool == "search":
        return {"path": a["path"], "regex": a["pattern"]}
    if call.tool == "list":
        return {"path": a["path"], "recursive": "false"}
    if call.tool == "task":
        return {"context": a["prompt"]}
    return {"path": a["path"]}


class _ClineTasksWriter(Writer):
    """The VS Code extension task folders of the Cline family
    (``globalStorage/<extension>/tasks/<id>/api_conversation_history.json``): a JSON
    array of Anthropic-style messages, prompts wrapped in ``<task>`` / ``<feedback>`` with
    the ``<environment_details>`` the extension adds, thinking in ``<thinking>`` blocks.
    Restoring a checkpoint truncates the file, so there are no branches; a subtask
    (``new_task``) is not linked to its parent in these files, so its call is written
    as a plain tool call."""

    edit_tool = "apply_diff"

    def add(self, session: Session) -> list[Planted]:
        task = self._task_id(session)
        path = self.root / "tasks" / task / "api_conversation_history.json"
        size = self._write(path, _encode(self._history(session)))
        return [self._planted(session, task, path, size, False)]

    def _task_id(self, session: Session) -> str:
        return session.id  # Roo Code and Kilo Code name tasks by a UUID

    def _history(self, session: Session) -> list[dict[str, Any]]:
        tools = ToolNames(
            {
                "shell": "execute_command",
                "read": "read_file",
                "edit": self.edit_tool,
                "search": "search_files",
                "list": "list_files",
                "task": "new_task",
            }
        )
        out: list[dict[str, Any]] = []
        for n, m in enumerate(session.messages):
            if m.role == "user":
                wrap = "task" if n == 0 else "feedback"
                prompt = {"type": "text", "text": f"<{wrap}>\n{m.text}\n</{wrap}>"}
                content = [prompt, self._environment(session, m.at, n == 0)]
                out.append({"role": "user", "content": content, "ts": m.at})
                continue
            text = f"<thinking>\n{m.thinking}\n</thinking>\n\n{m.text}" if m.thinking else m.text
            blocks: list[dict[str, Any]] = []
            if text.strip():
                blocks.append({"type": "text", "text": text.strip()})
            for c in m.calls:
                call = {"type": "tool_use", "id": f"toolu_{c.id}", "name": tools.name(c)}
                blocks.append({**call, "input": _cline_task_input(c)})
            out.append({"role": "assistant", "content": blocks, "ts": m.at})
            if m.calls:
                at = m.calls[-1].at + 1
                results = [*_anthropic_results(m), self._environment(session, at, False)]
                out.append({"role": "user", "content": results, "ts": at})
        return out

    @staticmethod
    def _environment(session: Session, at: int, first: bool) -> dict[str, str]:
        cwd = session.workspace.cwd
        lines = ["<environment_details>", "# VSCode Visible Files", f"src/{cwd.rsplit('/', 1)[-1]}"]
        lines += ["", "# Current Time", iso(at)]
        if first:
            lines += ["", f"# Current Working Directory ({cwd}) Files", "README.md", "src/"]
        lines += ["", "# Current Mode", "ACT MODE", "</environment_details>"]
        return {"type": "text", "text": "\n".join(lines)}


@register
class ClineVscodeWriter(_ClineTasksWriter):
    """Cline's extension: tasks named by their creation time (ms), and the task index
    ``state/taskHistory.json`` that gives each its title and workspace."""

    name = "cline-vscode"
    agent = "cline"
    subdir = f"{EDITOR_HOME}/Code/User/globalStorage/saoudrizwan.claude-dev"
    edit_tool = "replace_in_file"

    def __init__(self, out: Path) -> None:
        super().__init__(out)
        self.history: list[dict[str, Any]] = []
        self.taken: set[str] = set()

    def add(self, session: Session) -> list[Planted]:
        planted = super().add(session)
        self.history.append(
            {
                "id": planted[0].session_id,
                "ts": session.created,
                "task": session.messages[0].text,
                "tokensIn": 9000,
                "tokensOut": 1200,
                "totalCost": 0.04,
                "size": planted[0].bytes,
                "cwdOnTaskInitialization": session.workspace.cwd,
                "isFavorited": False,
            }
        )
        return planted

    def _task_id(self, session: Session) -> str:
        at = session.created
        while str(at) in self.taken:  # two tasks started in the same millisecond
            at += 1
        self.taken.add(str(at))
        return str(at)

    def close(self) -> None:
        if self.history:
            self._write(self.root / "state" / "taskHistory.json", _encode(self.history))


@register
class RooCodeWriter(_ClineTasksWriter):
    name = "roo-code"
    agent = "roo_code"
    subdir = f"{EDITOR_HOME}/Code/User/globalStorage/rooveterinaryinc.roo-cline"


@register
class KiloCodeWriter(_ClineTasksWriter):
    name = "kilo-code"
    agent = "kilo_code"
    subdir = f"{EDITOR_HOME}/Code/User/globalStorage/kilocode.kilo-code"


OPENCODE_TOOLS = ToolNames(
    {
        "shell": "bash",
        "read": "read",
        "edit": "edit",
        "search": "grep",
        "list": "list",
        "task": "task",
    },
    {"read.path": "filePath", "edit.path": "filePath", "old": "oldString", "new": "newString"},
)
OPENCODE_TOKENS = {"input": 9000, "output": 120, "reasoning": 0, "cache": {"read": 0, "write": 0}}


@dataclass(slots=True)
class _OpenCodeSession:
    """One session as OpenCode stores it (the same objects in both of its layouts)."""

    session: Session
    info: dict[str, Any]
    messages: list[tuple[dict[str, Any], list[dict[str, Any]]]]  # info and parts each
    children: list[_OpenCodeSession]  # the task tool's child sessions


def _opencode(session: Session, parent: str | None = None) -> _OpenCodeSession:
    """OpenCode's objects for a session. A rewound branch becomes OpenCode's revert: the
    reverted turns come last (the TUI hides them; the next prompt would delete them), and
    the session's ``revert`` names the first of them."""
    ses = f"ses_{session.id.replace('-', '')[:26]}"
    cwd = session.workspace.cwd
    tag = session.id.replace("-", "")[:10]
    serial = iter(range(1 << 16))
    children: list[_OpenCodeSession] = []

    def new_id(prefix: str, at: int) -> str:  # sortable by time, like OpenCode's own ids
        return f"{prefix}_{at:012x}{tag}{next(serial):04x}"

    def part(mid: str, at: int, kind: str, **fields: Any) -> dict[str, Any]:
        return {"id": new_id("prt", at), "sessionID": ses, "messageID": mid, "type": kind, **fields}

    def tool(mid: str, at: int, c: ToolCall) -> dict[str, Any]:
        name, args = OPENCODE_TOOLS.name(c), OPENCODE_TOOLS.args(c)
        span = {"start": c.at, "end": c.at + 1}
        state: dict[str, Any] = {"status": "completed", "input": args, "output": c.output}
        if c.tool == "shell":  # a failing command completes with its exit code
            state["metadata"] = {"exit": 1 if c.error else 0, "description": "Run it"}
        elif c.error:
            state = {"status": "error", "input": args, "error": c.output}
        if c.subagent is not None:
            child = _opencode(c.subagent, ses)
            children.append(child)
            state["metadata"] = {"sessionId": child.info["id"]}
        return part(
            mid, at, "tool", callID=f"toolu_{c.id}", tool=name, state={**state, "time": span}
        )

    reverted: list[Message] = []
    if session.rewind is not None:
        first = session.rewind.messages[0].at
        reverted = _shifted(session.rewind.messages, session.updated - first + 60_000)
    messages: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    prompt: str | None = None
    for m in [*session.messages, *reverted]:
        mid = new_id("msg", m.at)
        info: dict[str, Any] = {"id": mid, "sessionID": ses, "role": m.role}
        if m.role == "user":
            prompt = mid
            info["time"] = {"created": m.at}
            info["agent"] = "build"
            info["model"] = {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"}
            messages.append((info, [part(mid, m.at, "text", text=m.text)]))
            continue
        info["time"] = {"created": m.at, "completed": m.at + 900}
        info.update(
            parentID=prompt,
            modelID="claude-sonnet-4-5",
            providerID="anthropic",
            mode="build",
            path={"cwd": cwd, "root": cwd},
            cost=0,
            tokens=OPENCODE_TOKENS,
            finish="tool-calls" if m.calls else "stop",
        )
        parts = [part(mid, m.at, "step-start")]
        if m.thinking:
            parts.append(part(mid, m.at, "reasoning", text=m.thinking))
        if m.text:
            parts.append(part(mid, m.at, "text", text=m.text))
        parts += [tool(mid, m.at, c) for c in m.calls]
        finish = "tool-calls" if m.calls else "stop"
        parts.append(part(mid, m.at, "step-finish", reason=finish, cost=0, tokens=OPENCODE_TOKENS))
        messages.append((info, parts))
    info = {
        "id": ses,
        "version": "1.1.40",
        "projectID": _digest(cwd, "sha1"),
        "directory": cwd,
        **({"parentID": parent} if parent else {}),
        "title": session.title if parent is None else f"{session.title[:40]} (@general subagent)",
        "time": {"created": session.created, "updated": messages[-1][0]["time"]["created"]},
    }
    if reverted:
        info["revert"] = {"messageID": messages[len(session.messages)][0]["id"]}
    return _OpenCodeSession(session, info, messages, children)


@register
class OpenCodeWriter(Writer):
    """OpenCode's JSON storage tree (before v1.2): ``session/<project>/<ses>.json``, a file
    per message in ``message/<ses>/`` and per part in ``part/<msg>/``; a sub-agent is a
    child session (``parentID``); a rewound turn is reverted (``revert``)."""

    name = "opencode"
    agent = "opencode"
    subdir = ".local/share/opencode/storage"

    def add(self, session: Session) -> list[Planted]:
        return self._session(_opencode(session))

    def _session(self, oc: _OpenCodeSession) -> list[Planted]:
        ses = oc.info["id"]
        path = self.root / "session" / oc.info["projectID"] / f"{ses}.json"
        size = self._write(path, _encode(oc.info))
        for info, parts in oc.messages:
            size += self._write(self.root / "message" / ses / f"{info['id']}.json", _encode(info))
            for p in parts:
                size += self._write(self.root / "part" / info["id"] / f"{p['id']}.json", _encode(p))
        planted = [self._planted(oc.session, ses, path, size, "revert" in oc.info)]
        for child in oc.children:
            planted += self._session(child)
        return planted


OPENCODE_SCHEMA = """
CREATE TABLE project (id TEXT PRIMARY KEY, worktree TEXT NOT NULL, vcs TEXT, name TEXT,
  time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL);
CREATE TABLE session (id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES project(id) ON DELETE CASCADE,
  workspace_id TEXT, parent_id TEXT, slug TEXT NOT NULL, directory TEXT NOT NULL, path TEXT,
  title TEXT NOT NULL, version TEXT NOT NULL, share_url TEXT, summary_additions INTEGER,
  summary_deletions INTEGER, summary_files INTEGER, summary_diffs TEXT, revert TEXT,
  permission TEXT, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL,
  time_compacting INTEGER, time_archived INTEGER);
CREATE INDEX session_project_idx ON session(project_id);
CREATE INDEX session_parent_idx ON session(parent_id);
CREATE TABLE message (id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES session(id) ON DELETE CASCADE,
  time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
CREATE INDEX message_session_time_created_id_idx ON message(session_id, time_created, id);
CREATE TABLE part (id TEXT PRIMARY KEY,
  message_id TEXT NOT NULL REFERENCES message(id) ON DELETE CASCADE,
  session_id TEXT NOT NULL, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL,
  data TEXT NOT NULL);
CREATE INDEX part_message_id_id_idx ON part(message_id, id);
CREATE INDEX part_session_idx ON part(session_id);
"""


class _Database:
    """A SQLite file a writer fills one session at a time (opened on the first one)."""

    def __init__(self, path: Path, schema: str, wal: bool) -> None:
        self.path, self.schema, self.wal = path, schema, wal
        self.db: sqlite3.Connection | None = None

    def open(self) -> sqlite3.Connection:
        if self.db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.path)
            if self.wal:
                self.db.execute("PRAGMA journal_mode = WAL")
            self.db.executescript(self.schema)
        return self.db

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None


@register
class OpenCodeDbWriter(Writer):
    """OpenCode's ``opencode.db`` (v1.2 and later, WAL mode like OpenCode's), built from
    the documented schema: the same objects as the JSON tree, a row each, with ``data``
    holding what is not a column. With the JSON tree in the same corpus the database takes
    in its sessions too: OpenCode migrates the tree into the database and keeps reading
    only the database."""

    name = "opencode-db"
    agent = "opencode"
    subdir = ".local/share/opencode"

    def __init__(self, out: Path) -> None:
        super().__init__(out)
        self.database = _Database(self.root / "opencode.db", OPENCODE_SCHEMA, wal=True)
        self.projects: set[str] = set()

    def add(self, session: Session) -> list[Planted]:
        return self._insert(_opencode(session))

    def absorb(self, fmt: str, session: Session) -> None:
        if fmt == OpenCodeWriter.name:
            self._insert(_opencode(session))

    def close(self) -> None:
        self.database.close()

    def _insert(self, oc: _OpenCodeSession) -> list[Planted]:
        db = self.database.open()
        info = oc.info
        ses, at = info["id"], info["time"]["created"]
        size = 0
        with db:
            if info["projectID"] not in self.projects:
                self.projects.add(info["projectID"])
                project = (info["projectID"], info["directory"], "git", at, at)
                db.execute("INSERT INTO project VALUES (?, ?, ?, NULL, ?, ?)", project)
            revert = _encode(info["revert"]) if "revert" in info else None
            db.execute(
                "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, "
                "revert, time_created, time_updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    ses,
                    info["projectID"],
                    info.get("parentID"),
                    ses[4:16],
                    info["directory"],
                    info["title"],
                    info["version"],
                    revert,
                    at,
                    info["time"]["updated"],
                ),
            )
            for message, parts in oc.messages:
                mid, created = message["id"], message["time"]["created"]
                data = _encode({k: v for k, v in message.items() if k not in ("id", "sessionID")})
                size += len(data)
                db.execute(
                    "INSERT INTO message VALUES (?, ?, ?, ?, ?)", (mid, ses, created, created, data)
                )
                rows = []
                for p in parts:
                    body = _encode(
                        {k: v for k, v in p.items() if k not in ("id", "sessionID", "messageID")}
                    )
                    size += len(body)
                    rows.append((p["id"], mid, ses, created, created, body))
                db.executemany("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)", rows)
        path = self.database.path
        planted = [self._planted(oc.session, ses, path, size, "revert" in info)]
        for child in oc.children:
            planted += self._insert(child)
        return planted


CURSOR_TOOLS = ToolNames(
    {
        "shell": "Shell",
        "read": "Read",
        "edit": "StrReplace",
        "search": "Grep",
        "list": "LS",
        "task": "Task",
    },
    {"old": "old_string", "new": "new_string"},
)


def _user_query(text: str, cwd: str, first: bool) -> str:
    """A Cursor agent prompt: ``<user_query>``, after the injected ``<user_info>``."""
    query = f"<user_query>\n{text}\n</user_query>"
    if not first:
        return query
    info = f"<user_info>\nOS Version: linux 6.8.0\nShell: bash\nWorkspace Path: {cwd}\n</user_info>"
    return f"{info}\n\n{query}"


@register
class CursorWriter(Writer):
    """cursor-agent transcripts (``projects/<slug>/agent-transcripts/<id>/<id>.jsonl``):
    one ``{role, message: {content}}`` line a message, no ids or times; a sub-agent's
    transcript in ``subagents/`` beside it. No branches are recorded."""

    name = "cursor"
    agent = "cursor"
    subdir = ".cursor/projects"

    def add(self, session: Session) -> list[Planted]:
        slug = _claude_slug(session.workspace.cwd).lstrip("-")
        folder = self.root / slug / "agent-transcripts" / session.id
        path = folder / f"{session.id}.jsonl"
        size = self._write(path, _lines(self._records(session)))
        planted = [self._planted(session, session.id, path, size, False)]
        for sub in session.subagents():
            sub_path = folder / "subagents" / f"{sub.id}.jsonl"
            sub_size = self._write(sub_path, _lines(self._records(sub)))
            planted.append(self._planted(sub, sub.id, sub_path, sub_size, False))
        return planted

    def _records(self, session: Session) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for n, m in enumerate(session.messages):
            if m.role == "user":
                text = _user_query(m.text, session.workspace.cwd, n == 0)
                out.append(
                    {"role": "user", "message": {"content": [{"type": "text", "text": text}]}}
                )
                continue
            blocks = _anthropic_blocks(m, CURSOR_TOOLS, ids=False)
            out.append({"role": "assistant", "message": {"content": blocks}})
            if m.calls:
                results = [
                    {"type": "tool_result", "content": [{"type": "text", "text": c.output}]}
                    for c in m.calls
                ]
                out.append({"role": "user", "message": {"content": results}})
        return out


CURSOR_STORE_TOOLS = ToolNames(
    {
        "shell": "run_terminal_cmd",
        "read": "read_file",
        "edit": "search_replace",
        "search": "grep",
        "list": "list_dir",
        "task": "task",
    },
    {
        "read.path": "target_file",
        "edit.path": "file_path",
        "old": "old_string",
        "new": "new_string",
        "list.path": "target_directory",
    },
)


def _protobuf_field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field (wire type 2)."""
    out = bytearray()
    for value in (number << 3 | 2, len(payload)):
        while value >= 0x80:
            out.append(value & 0x7F | 0x80)
            value >>= 7
        out.append(value)
    return bytes(out) + payload


@register
class CursorStoreWriter(Writer):
    """cursor-agent chat stores (``chats/<md5 of the workspace>/<id>/store.db``): JSON
    provider messages as content-addressed blobs, a protobuf root blob listing them
    (field 1) and naming the workspace (field 9), and hex-encoded JSON meta. These
    sessions have no transcript, so the store is what is read."""

    name = "cursor-store"
    agent = "cursor"
    subdir = ".cursor/chats"
    schema = """
CREATE TABLE blobs (id TEXT PRIMARY KEY, data BLOB);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
"""

    def add(self, session: Session) -> list[Planted]:
        cwd = session.workspace.cwd
        path = self.root / _digest(cwd) / session.id / "store.db"
        database = _Database(path, self.schema, wal=False)
        db = database.open()
        blobs = [_encode(m).encode("utf-8") for m in self._messages(session)]
        digests = [hashlib.sha256(data).digest() for data in blobs]
        root = b"".join(_protobuf_field(1, d) for d in digests)
        root += _protobuf_field(9, Path(cwd).as_uri().encode("utf-8"))
        root_id = hashlib.sha256(root).hexdigest()
        meta = {
            "agentId": session.id,
            "latestRootBlobId": root_id,
            "name": session.title,
            "mode": "default",
            "createdAt": session.created,
            "lastUsedModel": "claude-4.5-sonnet",
        }
        with db:
            rows = [(d.hex(), data) for d, data in zip(digests, blobs, strict=True)]
            db.executemany("INSERT OR IGNORE INTO blobs VALUES (?, ?)", [*rows, (root_id, root)])
            db.execute("INSERT INTO meta VALUES ('0', ?)", (_encode(meta).encode("utf-8").hex(),))
        database.close()
        size = sum(map(len, blobs)) + len(root)
        return [self._planted(session, session.id, path, size, False)]

    def _messages(self, session: Session) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]
        for n, m in enumerate(session.messages):
            if m.role == "user":
                text = _user_query(m.text, session.workspace.cwd, n == 0)
                out.append({"role": "user", "content": [{"type": "text", "text": text}]})
                continue
            content: list[dict[str, Any]] = []
            if m.thinking:
                content.append({"type": "reasoning", "text": m.thinking})
            if m.text:
                content.append({"type": "text", "text": m.text})
            tools = CURSOR_STORE_TOOLS
            for c in m.calls:
                call = {
                    "toolCallId": f"toolu_{c.id}",
                    "toolName": tools.name(c),
                    "args": tools.args(c),
                }
                content.append({"type": "tool-call", **call})
            out.append({"role": "assistant", "content": content})
            if m.calls:
                results = [
                    {
                        "type": "tool-result",
                        "toolCallId": f"toolu_{c.id}",
                        "toolName": tools.name(c),
                        "result": c.output,
                        **({"isError": True} if c.error else {}),
                    }
                    for c in m.calls
                ]
                out.append({"role": "tool", "content": results})
        return out


@register
class CursorIdeWriter(Writer):
    """The Cursor editor's global ``state.vscdb``: ``cursorDiskKV`` holds each composer
    (``composerData:<id>``, listing its bubbles in ``fullConversationHeadersOnly``) and
    each bubble (``bubbleId:<composer>:<bubble>``; one per tool call, in
    ``toolFormerData``). Editing an earlier message rewrites the list: the rewound
    bubbles stay in the table, unlisted."""

    name = "cursor-ide"
    agent = "cursor_ide"
    subdir = f"{EDITOR_HOME}/Cursor/User/globalStorage"
    schema = """
CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);
CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);
INSERT INTO ItemTable VALUES ('workbench.panel.composerChatViewPane', '{"visible":true}');
"""

    def __init__(self, out: Path) -> None:
        super().__init__(out)
        self.database = _Database(self.root / "state.vscdb", self.schema, wal=False)

    def add(self, session: Session) -> list[Planted]:
        ids = _record_ids(session.id)
        rows: list[tuple[str, str]] = []
        headers: list[dict[str, Any]] = []
        for branch, messages in _branches(session):
            for m in messages:
                for bubble in self._bubbles(m, ids):
                    rows.append((f"bubbleId:{session.id}:{bubble['bubbleId']}", _encode(bubble)))
                    if branch == "kept":
                        headers.append({"bubbleId": bubble["bubbleId"], "type": bubble["type"]})
        composer = {
            "_v": 10,
            "composerId": session.id,
            "name": session.title,
            "createdAt": session.created,
            "lastUpdatedAt": session.updated,
            "status": "completed",
            "unifiedMode": "agent",
            "fullConversationHeadersOnly": headers,
        }
        rows.insert(0, (f"composerData:{session.id}", _encode(composer)))
        db = self.database.open()
        with db:
            db.executemany("INSERT INTO cursorDiskKV VALUES (?, ?)", rows)
        size = sum(len(value.encode("utf-8")) for _, value in rows)
        path = self.database.path
        return [self._planted(session, session.id, path, size, session.rewind is not None)]

    def close(self) -> None:
        self.database.close()

    def _bubbles(self, m: Message, ids: Iterator[str]) -> Iterator[dict[str, Any]]:
        kind = 1 if m.role == "user" else 2
        if m.text or m.thinking or not m.calls:
            bubble: dict[str, Any] = {"_v": 3, "type": kind, "bubbleId": next(ids), "text": m.text}
            bubble["createdAt"] = iso(m.at)
            if m.thinking:
                bubble["thinking"] = {"text": m.thinking, "signature": ""}
            yield bubble
        for c in m.calls:
            tool = {
                "tool": 15,
                "toolCallId": f"toolu_{c.id}",
                "status": "error" if c.error else "completed",
                "name": CURSOR_STORE_TOOLS.name(c),
                "rawArgs": _encode(CURSOR_STORE_TOOLS.args(c)),
                "result": _encode({"output": c.output}),
                "userDecision": "accepted",
            }
            yield {
                "_v": 3,
                "type": 2,
                "bubbleId": next(ids),
                "text": "",
                "createdAt": iso(c.at),
                "toolFormerData": tool,
            }


def _aider_stamp(ms: int, micro: bool = False) -> str:
    """A time as aider writes it (local time; the corpus's person lives in UTC)."""
    text = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ms // 1000))
    return f"{text}.{ms % 1000:03d}000" if micro else text


def _quoted(text: str) -> list[str]:
    """Aider's own output lines: ``> `` and a markdown hard break."""
    return [f"> {line}  " if line.strip() else ">" for line in text.splitlines()]


@register
class AiderWriter(Writer):
    """Aider: ``.aider.chat.history.md`` and ``.aider.input.history`` in each project
    directory (``projects/<workspace path under the home directory>``), one run a session
    (``# aider chat started at``), runs in time order, and the config file's ``roots``
    naming the projects folder as an aider root. Aider has no tool calls: an edit is a
    SEARCH/REPLACE block in the reply (then ``Applied edit`` and its commit), and what any
    other tool gave is aider's ``> `` output. No ids: a session's id is its run's start
    and a digest of the history's path, as the reader derives it."""

    name = "aider"
    agent = "aider"
    subdir = "projects"

    def __init__(self, out: Path) -> None:
        super().__init__(out)
        # history file → its runs: (start, text, [(prompt time, prompt)])
        self.runs: dict[Path, list[tuple[str, str, list[tuple[int, str]]]]] = {}

    def add(self, session: Session) -> list[Planted]:
        cwd = session.workspace.cwd
        folder = self.root / cwd.removeprefix("/home/dev/")
        path = folder / ".aider.chat.history.md"
        runs = self.runs.setdefault(path, [])
        taken = {start for start, _, _ in runs}
        at = session.created
        while _aider_stamp(at) in taken:  # two runs started in the same second
            at += 1000
        start = _aider_stamp(at)
        text, prompts = self._run(session, start)
        runs.append((start, text, prompts))
        real = os.path.realpath(path)
        digest = hashlib.blake2b(os.fsencode(real), digest_size=4).hexdigest()
        compact = start.replace("-", "").replace(":", "").replace(" ", "T")
        planted = self._planted(
            session, f"aider-{compact}-{digest}", path, len(text.encode()), False
        )
        planted.workspace = os.path.dirname(real)  # aider records only where it ran
        return [planted]

    def close(self) -> None:
        for path, runs in self.runs.items():
            runs.sort()
            self._write(path, "".join(text for _, text, _ in runs))
            prompts = sorted(p for _, _, ps in runs for p in ps)
            entries = [
                f"\n# {_aider_stamp(ms, True)}\n"
                + "".join(f"+{line}\n" for line in prompt.splitlines())
                for ms, prompt in prompts
            ]
            self._write(path.with_name(".aider.input.history"), "".join(entries))
        if self.runs:
            config = self.out / ".config" / "convodex" / "config.toml"
            self._write(config, f'roots = ["~/{self.subdir}:{self.name}"]\n')

    def _run(self, session: Session, start: str) -> tuple[str, list[tuple[int, str]]]:
        cwd = session.workspace.cwd
        lines = [
            "",
            f"# aider chat started at {start}",
            "",
            "> /home/dev/.local/bin/aider --model sonnet  ",
            "> Aider v0.86.1  ",
            "> Main model: anthropic/claude-sonnet-4-5 with diff edit format  ",
            "> Git repo: .git with 214 files  ",
            "> Repo-map: using 4096 tokens, auto refresh  ",
            "",
        ]
        prompts: list[tuple[int, str]] = []
        for m in session.messages:
            if m.role == "user":
                lines += [f"#### {line}  " for line in m.text.splitlines()] + [""]
                prompts.append((m.at, m.text))
                continue
            reply = [m.text] if m.text else []
            output: list[str] = []
            for c in m.calls:
                a = c.args
                if c.tool == "edit":
                    rel = a["path"].removeprefix(f"{cwd}/")
                    block = ["<<<<<<< SEARCH", a["old"], "=======", a["new"], ">>>>>>> REPLACE"]
                    reply += ["", rel, "```python", *block, "```"]
                    said = (
                        c.output
                        if c.error
                        else f"Applied edit to {rel}\nCommit {c.id[:7]} fix: Update {rel}"
                    )
                    output += _quoted(said)
                elif c.tool == "shell":
                    ran = f"Run shell command? (Y)es/(N)o [Yes]: y\nRunning {a['command']}"
                    output += _quoted(f"{ran}\n{c.output}")
                else:
                    output += _quoted(c.output)
            if reply:
                lines += [*reply, ""]
            if output:
                lines += [*output, ""]
        return "\n".join(lines) + "\n", prompts


# ---------------------------------------------------------------------------------------
# Whole corpora, their manifests and the cache


@dataclass(slots=True)
class Manifest:
    """What a generated corpus holds: its roots per format and every planted session."""

    out: str
    seed: int
    mb: float
    formats: list[str]
    roots: dict[str, str]  # format → its directory, relative to ``out``
    sessions: list[Planted]
    seconds: float
    version: int = VERSION
    python: str = f"{sys.version_info[0]}.{sys.version_info[1]}"

    @property
    def path(self) -> Path:
        return Path(self.out)

    def root(self, fmt: str) -> Path:
        """Where one format's sessions are (index this with ``:format`` to skip sniffing)."""
        return self.path / self.roots[fmt]

    @property
    def bytes(self) -> int:
        return sum(p.bytes for p in self.sessions)

    def main_sessions(self) -> list[Planted]:
        return [p for p in self.sessions if not p.subagent]

    def rare_word(self) -> str:
        """A marker said in exactly one main session (one from the middle)."""
        main = self.main_sessions()
        return main[len(main) // 2].marker

    def dumps(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, indent=1)

    @classmethod
    def loads(cls, text: str) -> Manifest:
        data = json.loads(text)
        data["sessions"] = [Planted(**p) for p in data["sessions"]]
        return cls(**data)


def parse_formats(spec: str | Sequence[str]) -> list[str]:
    """``all``, one format name, a comma-separated list, or a list of names."""
    names = spec.split(",") if isinstance(spec, str) else list(spec)
    if names == ["all"]:
        return list(WRITERS)
    unknown = [n for n in names if n not in WRITERS]
    if unknown or not names:
        known = ", ".join([*WRITERS, "all"])
        raise ValueError(f"unknown corpus format {', '.join(unknown)!r}; known: {known}")
    return names


def generate(
    out: Path, mb: float = 200.0, seed: int = 1, formats: str | Sequence[str] = "native"
) -> Manifest:
    """Write about ``mb`` MiB of transcripts under ``out`` (which must be empty or absent)."""
    names = parse_formats(formats)
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} is not empty")
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    writers = [WRITERS[name](out) for name in names]
    target = int(mb * 1024 * 1024)
    planted: list[Planted] = []
    written = 0
    count = len(writers)
    for session in sessions(seed):
        if written >= target:
            break
        # In turn, shifted by one every round: session features recur with the session
        # number, and a period sharing a factor with the format count would otherwise
        # give them to the same few formats.
        n = session.number
        writer = writers[(n + n // count) % count]
        new = writer.add(session)
        for other in writers:
            other.absorb(writer.name, session)
        planted += new
        written += sum(p.bytes for p in new)
    for writer in writers:
        writer.close()
    return Manifest(
        out=str(out),
        seed=seed,
        mb=mb,
        formats=names,
        roots={w.name: w.subdir for w in writers},
        sessions=planted,
        seconds=time.perf_counter() - started,
    )


def cached(formats: str | Sequence[str] = "native", mb: float = 200.0, seed: int = 1) -> Manifest:
    """A corpus under ``bench/.corpus/`` keyed by formats, size, seed, version and Python;
    generated on first use. The manifest is written last: it marks the corpus complete."""
    names = parse_formats(formats)
    py = f"{sys.version_info[0]}{sys.version_info[1]}"
    folder = CACHE_DIR / f"{'+'.join(names)}-{mb:g}mb-seed{seed}-v{VERSION}-py{py}"
    manifest_file = folder / "manifest.json"
    if manifest_file.exists():
        manifest = Manifest.loads(manifest_file.read_text("utf-8"))
        manifest.out = str(folder / "corpus")  # the repository may have moved
        return manifest
    if folder.exists():
        shutil.rmtree(folder)
    print(f"generating {mb:g} MiB of {'+'.join(names)} sessions in {folder}", file=sys.stderr)
    manifest = generate(folder / "corpus", mb, seed, names)
    partial = manifest_file.with_suffix(".partial")
    partial.write_text(manifest.dumps(), "utf-8")
    partial.replace(manifest_file)
    return manifest


def add_arguments(ap: argparse.ArgumentParser, mb: float = 200.0) -> None:
    """``--corpus DIR`` (an existing directory), else ``--mb`` and ``--seed`` of a cached one."""
    ap.add_argument("--corpus", type=Path, help="run on this directory instead of generating")
    ap.add_argument("--mb", type=float, default=mb, help=f"generated corpus MiB ({mb:g})")
    ap.add_argument("--seed", type=int, default=1, help="generated corpus seed (1)")


def for_bench(
    directory: Path | None, formats: str | Sequence[str], mb: float, seed: int
) -> tuple[Path, Manifest | None]:
    """The directory a benchmark runs on, and its manifest when it was generated here."""
    if directory is not None:
        if not directory.is_dir():
            raise SystemExit(f"error: --corpus {directory} is not a directory")
        return directory.resolve(), None
    manifest = cached(formats, mb, seed)
    return manifest.path, manifest


def main(argv: Sequence[str] | None = None) -> int:
    doc = __doc__ or ""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--mb", type=float, default=200.0, help="total transcript MiB (approx.)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--format",
        default="native",
        help=f"{' | '.join(WRITERS)} | all, or a comma-separated list (default: native)",
    )
    ap.add_argument("--manifest", type=Path, help="also write the manifest (JSON) here")
    args = ap.parse_args(argv)
    try:
        manifest = generate(args.out, args.mb, args.seed, args.format)
    except (ValueError, FileExistsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.manifest:
        args.manifest.write_text(manifest.dumps(), "utf-8")
    summary = {
        "sessions": len(manifest.main_sessions()),
        "subagents": len(manifest.sessions) - len(manifest.main_sessions()),
        "bytes": manifest.bytes,
        "seconds": round(manifest.seconds, 2),
        "out": str(args.out),
        "roots": {fmt: str(manifest.root(fmt)) for fmt in manifest.roots},
    }
    print(json.dumps(summary, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
