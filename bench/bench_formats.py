"""Index throughput (MB/s) per source format, beside the parse-only floor.

Generates a corpus per format with ``../shared/bench/make_corpus.py`` (native,
claude-code, codex; Gemini CLI JSONL and ChatGPT ``conversations.json`` are
converted from its native sessions), indexes it into a fresh catalog with the real
indexer, and compares with the floor: read every file and JSON-decode it, nothing else.

Usage: python bench/bench_formats.py [--mb 100] [--formats native,claude-code,codex,gemini,chatgpt]
Figures on a shared machine are noisy; run twice and keep the better one.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec

from convodex.catalog.db import open_catalog
from convodex.catalog.indexer import Indexer

MAKE_CORPUS = (Path(__file__).parents[1] / ".." / "shared" / "bench" / "make_corpus.py").resolve()
ROOT_OF = {"native": ".", "claude-code": ".claude/projects", "codex": ".codex/sessions"}
FORMAT_OF = {
    "native": "session_log",
    "claude-code": "claude_code",
    "codex": "codex",
    "gemini": "gemini",
    "chatgpt": "chat_export",
}
CONVERTED = {"gemini", "chatgpt"}
SESSIONS_PER_EXPORT = 200


def corpus(out: Path, fmt: str, mb: float) -> Path:
    generated = "native" if fmt in CONVERTED else fmt
    subprocess.run(
        [sys.executable, str(MAKE_CORPUS), str(out), "--mb", str(mb), "--format", generated],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    if fmt in CONVERTED:
        return convert(out, fmt)
    return (out / ROOT_OF[fmt]).resolve()


def native_sessions(root: Path) -> list[tuple[str, list[dict[str, Any]]]]:
    sessions = []
    for path in sorted(root.glob("*/sessions/*.jsonl")):
        lines = path.read_text(encoding="utf-8").splitlines()
        sessions.append((path.stem, [json.loads(line) for line in lines if line]))
    return sessions


def iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(ms / 1000))


def as_gemini(sid: str, messages: list[dict[str, Any]]) -> str:
    """A Gemini CLI JSONL chat: header, then user / gemini records with tool calls."""
    out = [{"sessionId": sid, "startTime": iso(messages[0].get("createdAt", 0)), "kind": "main"}]
    calls: dict[str, dict[str, Any]] = {}
    for n, m in enumerate(messages):
        stamp = iso(m.get("createdAt", 0))
        if m["role"] == "user":
            out.append(
                {
                    "id": f"{sid}-{n}",
                    "timestamp": stamp,
                    "type": "user",
                    "content": [{"text": m["content"]}],
                }
            )
        elif m["role"] == "assistant":
            record = {
                "id": f"{sid}-{n}",
                "timestamp": stamp,
                "type": "gemini",
                "content": m["content"],
                "toolCalls": [],
            }
            for c in m.get("tool_calls", []):
                call = {
                    "id": c["id"],
                    "name": c["name"],
                    "args": json.loads(c["arguments"]),
                    "status": "success",
                }
                calls[c["id"]] = call
                record["toolCalls"].append(call)
            out.append(record)
        elif m["role"] == "tool" and m["tool_call_id"] in calls:
            call = calls[m["tool_call_id"]]
            call["result"] = [
                {
                    "functionResponse": {
                        "id": m["tool_call_id"],
                        "name": call["name"],
                        "response": {"output": m["content"]},
                    }
                }
            ]
            if m["content"].startswith("error:"):
                call["status"] = "error"
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in out)


def as_chatgpt(sid: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """One ChatGPT export conversation: a mapping tree whose current node is its end."""
    mapping: dict[str, Any] = {
        "root": {"id": "root", "message": None, "parent": None, "children": []}
    }
    parent = "root"

    def add(author: dict[str, Any], text: str, at: int, recipient: str = "all") -> None:
        nonlocal parent
        node_id = f"{sid}-{len(mapping)}"
        mapping[node_id] = {
            "id": node_id,
            "message": {
                "id": node_id,
                "author": author,
                "create_time": at / 1000,
                "recipient": recipient,
                "content": {"content_type": "text", "parts": [text]},
            },
            "parent": parent,
            "children": [],
        }
        mapping[parent]["children"].append(node_id)
        parent = node_id

    names: dict[str, str] = {}
    for m in messages:
        at = m.get("createdAt", 0)
        if m["role"] in ("user", "assistant") and m["content"]:
            add({"role": m["role"]}, m["content"], at)
        for c in m.get("tool_calls", []):
            names[c["id"]] = c["name"]
            add({"role": "assistant"}, c["arguments"], at, recipient=c["name"])
        if m["role"] == "tool":
            add({"role": "tool", "name": names.get(m["tool_call_id"])}, m["content"], at)
    return {
        "id": sid,
        "conversation_id": sid,
        "title": sid,
        "create_time": 0,
        "current_node": parent,
        "mapping": mapping,
    }


def convert(out: Path, fmt: str) -> Path:
    """Rewrite the generated native sessions in ``fmt``; the native files are removed."""
    target = out / fmt
    target.mkdir()
    sessions = native_sessions(out)
    if fmt == "gemini":
        for sid, messages in sessions:
            (target / f"session-{sid}.jsonl").write_text(as_gemini(sid, messages), "utf-8")
    else:
        for start in range(0, len(sessions), SESSIONS_PER_EXPORT):
            chunk = [as_chatgpt(sid, m) for sid, m in sessions[start : start + SESSIONS_PER_EXPORT]]
            folder = target / f"export-{start // SESSIONS_PER_EXPORT:03d}"
            folder.mkdir()
            (folder / "conversations.json").write_text(
                json.dumps(chunk, ensure_ascii=False), "utf-8"
            )
    for project in out.glob("project*"):
        shutil.rmtree(project)
    return target.resolve()


def floor(root: Path) -> tuple[int, float]:
    """Bytes and seconds to read and JSON-decode every line (or JSON file) of the corpus."""
    decode = msgspec.json.Decoder().decode
    total = 0
    started = time.perf_counter()
    for path in root.rglob("*.jsonl"):
        with open(path, "rb") as handle:
            for line in handle:
                total += len(line)
                if line.strip():
                    decode(line)
    for path in root.rglob("*.json"):
        data = path.read_bytes()
        total += len(data)
        decode(data)
    return total, time.perf_counter() - started


def index(root: Path, fmt: str, cache: Path) -> tuple[int, float, int]:
    spec = Path(f"{root}:{FORMAT_OF[fmt]}")
    from convodex.sources.discover import resolve_root

    resolved = resolve_root(spec)
    with open_catalog(cache) as catalog:
        started = time.perf_counter()
        stats = Indexer(catalog).run([resolved])
        seconds = time.perf_counter() - started
    return stats.bytes_read, seconds, stats.messages


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=100.0)
    ap.add_argument("--formats", default="native,claude-code,codex,gemini,chatgpt")
    args = ap.parse_args()
    print(f"{'format':<12} {'MB':>8} {'index MB/s':>11} {'floor MB/s':>11} {'messages':>10}")
    for fmt in args.formats.split(","):
        work = Path(tempfile.mkdtemp(prefix=f"bench-{fmt}-"))
        try:
            root = corpus(work / "corpus", fmt, args.mb)
            size, floor_s = floor(root)
            done, index_s, messages = index(root, fmt, work / "cache")
            mb = size / 1e6
            print(
                f"{fmt:<12} {mb:>8.1f} {done / 1e6 / index_s:>11.1f} "
                f"{mb / floor_s:>11.1f} {messages:>10}",
                flush=True,
            )
        finally:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
