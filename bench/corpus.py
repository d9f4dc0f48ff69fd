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

Layout under OUT (one subtree per format, as in a home directory):
  native       OUT/sessions/<id>.jsonl (+ .jsonl.meta; subagents/<ref>.jsonl + .meta.json)
  claude-code  OUT/.claude/projects/<slug>/<uuid>.jsonl (+ <uuid>/subagents/agent-*.jsonl)
  codex        OUT/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl
  gemini       OUT/.gemini/tmp/<sha256 of cwd>/chats/session-*.json (.jsonl when rewound)
  chatgpt      OUT/exports/chatgpt-NNN/conversations.json (200 conversations each)
  dag          OUT/legacy/<uuid>.jsonl (the legacy 1.x DAG event log)
With several formats the sessions are dealt out in turn, and ``--mb`` is the total size.
Output is deterministic for a seed and a Python version (the text comes from its stdlib).

Usage: corpus.py OUT [--mb 200] [--seed 1] [--format native|claude-code|…|all|a,b]
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import random
import shutil
import sys
import sysconfig
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

# Bump when the output changes, so cached corpora are regenerated.
VERSION = 1
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
        """Features follow the session number (periods prime to any format count, so
        every writer gets its share even in a small corpus); text follows the stream."""
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
    its sessions go under ``out``), write ``add``, and decorate the class ``@register``.
    """

    name = ""
    subdir = ""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.root = out / self.subdir

    @abstractmethod
    def add(self, session: Session) -> list[Planted]:
        """Write one main session (and its sub-agents, where the format has them)."""

    def close(self) -> None:  # noqa: B027 - most formats buffer nothing
        """Flush anything buffered (formats that hold many sessions in one file)."""

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
        out: list[dict[str, Any]] = []
        kept: str | None = None  # the last record of the kept branch so far
        for branch, messages in _branches(session):
            parent = kept
            for m in messages:
                for body in self._bodies(m, agents, ids):
                    uid = next(ids)
                    out.append({"parentUuid": parent, **base, **body, "uuid": uid})
                    parent = uid
            if branch == "kept":
                kept = parent
        return out

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
    subdir = "legacy"

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
    for session in sessions(seed):
        if written >= target:
            break
        new = writers[session.number % len(writers)].add(session)
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
