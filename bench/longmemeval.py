"""The public LongMemEval-S file as a retrieval benchmark (``--longmemeval FILE``).

LongMemEval-S (``longmemeval_s.json``, Wu et al. 2024) is a JSON list of questions,
each with its own haystack of about 50 chat sessions:
``question_id``, ``question_type``, ``question``, ``answer``, ``question_date``,
``haystack_session_ids``, ``haystack_dates`` (``2023/05/30 (Tue) 23:40``),
``haystack_sessions`` (lists of ``{"role", "content", "has_answer"?}`` turns) and
``answer_session_ids``. It cannot be downloaded here, so a user passes its path.
Every question's haystack is written as native session logs in a root of its own,
one catalog indexes them all, and each question is searched within its root; as in
the dataset's own retrieval scoring, abstention questions (``_abs``) are left out.
"""

from __future__ import annotations

import json
import re
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec

import quality_metrics as qm
from convodex.catalog.plan import SearchRequest
from convodex.catalog.service import HistoryService
from convodex.sources.roots import resolve_root


@dataclass(frozen=True)
class Instance:
    question_id: str
    question_type: str
    question: str
    sessions: list[tuple[str, int | None, list[dict[str, Any]]]]  # (id, epoch ms, turns)
    answer_session_ids: tuple[str, ...]


def with_mode(request: SearchRequest, mode: str) -> SearchRequest:
    """The request in ``mode`` where this convodex knows modes; else as it is (lexical).
    Lexical is asked for too: the default (``auto``) is hybrid where embeddings exist."""
    if "mode" in SearchRequest.__struct_fields__:
        return msgspec.structs.replace(request, mode=mode)
    return request


def parse_date(text: str) -> int | None:
    """``2023/05/30 (Tue) 23:40`` as epoch ms (UTC), None when it is not that shape."""
    found = re.match(r"\s*(\d{4})/(\d{2})/(\d{2})(?:\s*\(\w+\))?\s*(\d{2}):(\d{2})", text)
    if not found:
        return None
    y, mo, d, h, mi = (int(v) for v in found.groups())
    return int(datetime(y, mo, d, h, mi, tzinfo=UTC).timestamp() * 1000)


def load(path: Path) -> list[Instance]:
    """The file's retrieval questions (abstention questions left out)."""
    data = json.loads(path.read_text("utf-8"))
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of questions")
    instances = []
    for item in data:
        qid = str(item["question_id"])
        if qid.endswith("_abs"):
            continue
        ids = [str(s) for s in item["haystack_session_ids"]]
        dates = [parse_date(str(d)) for d in item.get("haystack_dates", [None] * len(ids))]
        sessions = list(zip(ids, dates, item["haystack_sessions"], strict=True))
        instances.append(
            Instance(
                question_id=qid,
                question_type=str(item.get("question_type", "")),
                question=str(item["question"]),
                sessions=sessions,
                answer_session_ids=tuple(str(s) for s in item["answer_session_ids"]),
            )
        )
    return instances


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def write_haystack(root: Path, instance: Instance) -> None:
    """One native session log (and sidecar) per haystack session, under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    for sid, at, turns in instance.sessions:
        lines = []
        for n, turn in enumerate(turns):
            record: dict[str, Any] = {"role": turn["role"], "content": turn["content"]}
            if at is not None:
                record["createdAt"] = at + n * 1000
            lines.append(json.dumps(record, ensure_ascii=False))
        name = _safe(sid)
        (root / f"{name}.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
        meta: dict[str, Any] = {"id": sid, "revision": len(turns)}
        if at is not None:
            meta["created_at"] = at
        (root / f"{name}.jsonl.meta").write_text(json.dumps(meta), "utf-8")


def evaluate(
    path: Path, modes: Sequence[str], limit: int = 50
) -> dict[str, tuple[dict[str, qm.Scores], list[float]]]:
    """Per mode: scores per question type (and ``overall``) and latencies in seconds."""
    instances = load(path)
    results: dict[str, tuple[dict[str, qm.Scores], list[float]]] = {}
    with tempfile.TemporaryDirectory(prefix="convodex-longmemeval-") as tmp:
        base = Path(tmp) / "haystacks"
        roots: list[Path] = []
        for n, instance in enumerate(instances):
            write_haystack(base / f"q{n:04d}", instance)
            roots.append(resolve_root(f"{base / f'q{n:04d}'}:session-log"))
        with HistoryService.open(Path(tmp) / "cache", roots) as service:
            service.index()
            for mode in modes:
                per_type: dict[str, list[tuple[list[int], int]]] = {}
                seconds = []
                for instance, root in zip(instances, roots, strict=True):
                    request = SearchRequest(query=instance.question, limit=limit, roots=[root])
                    started = time.perf_counter()
                    page = service.search(with_mode(request, mode))
                    seconds.append(time.perf_counter() - started)
                    ranked: list[str] = []
                    for hit in page.hits:
                        if hit.session_id not in ranked:
                            ranked.append(hit.session_id)
                    gold = set(instance.answer_session_ids)
                    ranks = [i + 1 for i, sid in enumerate(ranked) if sid in gold]
                    for key in (instance.question_type, "overall"):
                        per_type.setdefault(key, []).append((ranks, len(gold)))
                results[mode] = ({k: qm.score(v) for k, v in per_type.items()}, seconds)
    return results


def run(path: Path, modes: Sequence[str], limit: int = 50) -> None:
    """Print the same figures as the main benchmark for a LongMemEval-S file."""
    try:
        results = evaluate(path, modes, limit)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"\nLongMemEval: cannot read {path}: {exc}")
        return
    print(f"\nLongMemEval-S ({path}), session ranking per question type:")
    for mode, (scores, seconds) in results.items():
        print(f"  mode {mode}:")
        print(f"    {'type':<28}{'n':>5}{'h@1':>7}{'h@5':>7}{'MRR':>7}{'nDCG':>7}")
        for key in sorted(scores, key=lambda k: (k == "overall", k)):
            s = scores[key]
            print(
                f"    {key:<28}{s.count:>5}{s.hit1:>7.2f}{s.hit5:>7.2f}"
                f"{s.mrr:>7.2f}{s.ndcg10:>7.2f}"
            )
        ms = [s * 1000 for s in seconds]
        print(
            f"    latency p50 {statistics.median(ms):.1f} ms, p95 {qm.percentile(ms, 0.95):.1f} ms"
        )
