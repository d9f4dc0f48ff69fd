"""The quality benchmark's own parts: its metrics, its query set and the LongMemEval
loader (on a tiny hand-made file of LongMemEval-S's documented shape; the real file
cannot be downloaded here)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import bench_quality
import longmemeval
import quality_metrics as qm


def test_metrics_of_known_ranks() -> None:
    scores = qm.score([([1], 1), ([3], 1), ([], 1), ([2, 7], 2)])
    assert scores.count == 4
    assert scores.hit1 == 0.25
    assert scores.hit5 == 0.75
    assert math.isclose(scores.mrr, (1 + 1 / 3 + 0 + 1 / 2) / 4)
    two_gold = (1 / math.log2(3) + 1 / math.log2(8)) / (1 + 1 / math.log2(3))
    assert math.isclose(qm.ndcg([2, 7], 2), two_gold)
    assert qm.ndcg([11], 1) == 0.0
    assert math.isclose(scores.ndcg10, (1 + 0.5 + 0 + two_gold) / 4)


def test_every_query_names_a_real_gold_session_and_the_classes_are_covered() -> None:
    queries = bench_quality.load_queries()
    assert len(queries) >= 150
    assert len({q.id for q in queries}) == len(queries)
    counts = {c: sum(q.cls == c for q in queries) for c in bench_quality.CLASSES}
    assert all(n >= 10 for n in counts.values()), counts
    for q in queries:
        assert q.cls in bench_quality.CLASSES
        assert q.gold and q.text.strip()
        for gold in q.gold:
            path = gold.split("::", 1)[0]
            if path.startswith("transcripts:"):
                file = bench_quality.TRANSCRIPTS / path.removeprefix("transcripts:")
            else:
                file = bench_quality.FIXTURES / path
            assert file.is_file(), f"{q.id}: {gold}"
            assert not path.startswith("handwritten/"), "gold sessions are real public ones"
        if q.cls == "when":
            assert q.since or q.until, q.id


def _turn(role: str, content: str) -> dict[str, object]:
    return {"role": role, "content": content}


def test_longmemeval_loader_scores_a_tiny_file_of_its_shape(tmp_path: Path) -> None:
    sessions = {
        "s_garden": [
            _turn("user", "My tomato plants finally got their first flowers this week."),
            _turn("assistant", "Congratulations! Keep the soil moist."),
        ],
        "answer_s_bike": [
            _turn("user", "I bought a gravel bike with a carbon fork last Saturday."),
            _turn("assistant", "Enjoy the rides!"),
        ],
        "s_cooking": [_turn("user", "What spices go into a garam masala?")],
    }

    def instance(qid: str, question: str, answers: list[str]) -> dict[str, object]:
        return {
            "question_id": qid,
            "question_type": "single-session-user",
            "question": question,
            "answer": "a gravel bike",
            "question_date": "2023/06/01 (Thu) 10:00",
            "haystack_session_ids": list(sessions),
            "haystack_dates": [
                "2023/05/20 (Sat) 09:15",
                "2023/05/27 (Sat) 18:40",
                "2023/05/29 (Mon) 12:00",
            ],
            "haystack_sessions": list(sessions.values()),
            "answer_session_ids": answers,
        }

    data = [
        instance("q1", "gravel bike", ["answer_s_bike"]),
        instance("q2", "tomato flowers", ["s_garden"]),
        instance("q3_abs", "what car did I buy", []),
    ]
    path = tmp_path / "longmemeval_s.json"
    path.write_text(json.dumps(data), "utf-8")

    loaded = longmemeval.load(path)
    assert [i.question_id for i in loaded] == ["q1", "q2"]  # abstention left out
    assert loaded[0].sessions[1][1] == longmemeval.parse_date("2023/05/27 (Sat) 18:40")
    assert longmemeval.parse_date("2023/05/27 (Sat) 18:40") == 1685212800000
    assert longmemeval.parse_date("not a date") is None

    results = longmemeval.evaluate(path, ["lexical"])
    scores, seconds = results["lexical"]
    assert len(seconds) == 2
    assert scores["overall"].count == 2
    assert scores["overall"].hit1 == 1.0
    assert scores["single-session-user"].mrr == 1.0
