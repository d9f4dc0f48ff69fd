"""Tokenizer v1 (SPEC L3): every example from the spec, and the edges around them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from convodex.text.tokens import cjk_run_tails, iter_tokens, tokenize


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("BM25 检索 cache-first", ["bm25", "检索", "cache", "first"]),
        ("用pnpm装依赖", ["用", "pnpm", "装依", "依赖"]),
        ("数据库迁移", ["数据", "据库", "库迁", "迁移"]),
        ("user_id", ["user_id"]),
        ("cache-first", ["cache", "first"]),
        ("Café", ["cafe"]),
        ("CAFÉ crème brûlée", ["cafe", "creme", "brulee"]),
        ("Straße", ["strasse"]),
        ("Ünïcödé_Name", ["unicode_name"]),
        ("", []),
        ("  ...!!!  ", []),
        ("a", ["a"]),
        ("检", ["检"]),
        ("データベース", ["デー", "ータ", "タベ", "ベー", "ース"]),
        ("세션 기록", ["세션", "기록"]),
        ("go test ./... failed: exit 1", ["go", "test", "failed", "exit", "1"]),
        ("Привет, мир", ["привет", "мир"]),
    ],
)
def test_spec_examples_and_edges(text: str, tokens: list[str]) -> None:
    assert tokenize(text) == tokens


def test_spans_point_into_the_original_text() -> None:
    text = "Fix the Café-bug in 数据库"
    for tok in iter_tokens(text):
        assert tokenize(text[tok.start : tok.end])[0] == tok.text or tok.cjk


def test_cjk_tails_cover_the_last_character_of_each_run() -> None:
    assert cjk_run_tails("数据库 and 迁移 plus 检") == ["库", "移"]
    assert cjk_run_tails("plain ascii") == []


@given(st.text(max_size=200))
def test_tokens_are_stable_under_retokenizing(text: str) -> None:
    """Tokens are already normal: tokenizing a token gives back exactly that token."""
    for token in tokenize(text):
        assert tokenize(token) == [token]


@given(st.text(max_size=300))
def test_tokenize_agrees_with_the_span_tokenizer(text: str) -> None:
    """The fast path used for indexing and the span path used for snippets agree."""
    assert tokenize(text) == [t.text for t in iter_tokens(text)]


@given(
    st.lists(
        st.sampled_from(
            [
                "数据",
                "库",
                "Café",
                "user_id",
                " ",
                "-",
                "é",
                "ß",
                "x1",
                "データ",
                "세션",
                "\u0301",
                "①",
                "½",
            ]
        ),
        max_size=30,
    )
)
def test_tokenize_agrees_on_mixed_scripts(parts: list[str]) -> None:
    text = "".join(parts)
    assert tokenize(text) == [t.text for t in iter_tokens(text)]
