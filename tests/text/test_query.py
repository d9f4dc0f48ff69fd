"""The query language (SPEC L12): parsing, errors, the FTS5 expression, matching."""

from __future__ import annotations

import re
from datetime import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from convodex.errors import QueryError
from convodex.text import matches as matches_module
from convodex.text import query as query_module
from convodex.text.dates import parse_time
from convodex.text.matches import first_match, highlights
from convodex.text.query import And, Not, Or, Term, parse


def test_words_are_all_required_and_cjk_runs_are_phrases() -> None:
    q = parse("数据库 cache 迁")
    assert q.tree == And(
        (Term(("数据", "据库"), "phrase"), Term(("cache",), "word"), Term(("迁",), "cjk1"))
    )
    assert query_module.match_expression(q.tree) == (
        '("数据 据库") AND ("cache") AND (("迁"* OR "\ue000迁"))'
    )


def test_phrases_or_not_prefix_and_parentheses() -> None:
    q = parse('"rollback plan" (deploy OR release) -staging NOT prod* cach*')
    assert q.tree == And(
        (
            Term(("rollback", "plan"), "phrase"),
            Or((Term(("deploy",), "word"), Term(("release",), "word"))),
            Not(Term(("staging",), "word")),
            Not(Term(("prod",), "prefix")),
            Term(("cach",), "prefix"),
        )
    )
    assert query_module.match_expression(q.tree) == (
        '((("rollback plan") AND (("deploy") OR ("release")) AND ("cach"*)) '
        'NOT ("staging")) NOT ("prod"*)'
    )
    # A table without positions gets the phrase's words, in any order.
    assert query_module.match_expression(parse('"a b"').tree, positions=False) == ('"a" AND "b"')


def test_qualifiers_with_quoted_values() -> None:
    q = parse('fix agent:codex project:"my app" since:7d tool:Bash kind:tool_error')
    assert q.tree == Term(("fix",), "word")
    assert q.qualifiers == {
        "agent": ("codex",),
        "project": ("my app",),
        "since": ("7d",),
        "tool": ("Bash",),
        "kind": ("tool_error",),
    }
    # Words that only look like qualifiers are words.
    assert parse("http://example.com").tree == And(
        (Term(("http",), "word"), Term(("example",), "word"), Term(("com",), "word"))
    )
    assert parse('"agent:codex"').tree == Term(("agent", "codex"), "phrase")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('"unclosed phrase', "unclosed quote"),
        ("(deploy OR release", "unclosed parenthesis"),
        ("deploy)", "unmatched ')'"),
        ("-staging", "only negative terms"),
        ("NOT staging -prod", "only negative terms"),
        ("deploy OR -staging", "positive term beside it"),
        ("colour:red deploy", "unknown qualifier 'colour:'"),
        ("?? !!", "at least one letter or number"),
        ("a*", "at least 2 letters"),
        ("deploy OR", "OR needs a term on each side"),
        ("(agent:codex deploy)", "agent: must be outside parentheses"),
        ("-agent:codex deploy", "cannot be negated"),
        ("deploy agent: x", "agent: needs a value"),
    ],
)
def test_malformed_queries_are_one_clear_error(text: str, message: str) -> None:
    with pytest.raises(QueryError, match=re.escape(message)):
        parse(text)


def words(*tokens: str) -> And:
    return And(tuple(Term((t,), "word") for t in tokens))


def test_pasted_messages_and_command_options_are_words() -> None:
    """What people paste (an error line, a command) searches for its words: an unknown
    ``name:`` before a space is a word, and ``--long`` or ``-la`` are options, not
    negations; ``-staging`` still negates, a known or joined qualifier still errs."""
    assert parse("error: patch did not apply").tree == words(
        "error", "patch", "did", "not", "apply"
    )
    assert parse("ls: /nope: No such file").tree == words("ls", "nope", "no", "such", "file")
    assert parse("ls -la /tmp").tree == words("ls", "la", "tmp")
    assert parse("aider --no-git").tree == words("aider", "no", "git")
    assert parse("grep -rn x -F").tree == words("grep", "rn", "x", "f")
    assert parse("deploy -staging").tree == And(
        (Term(("deploy",), "word"), Not(Term(("staging",), "word")))
    )
    assert parse("ls -la").qualifiers == {}
    with pytest.raises(QueryError, match="unknown qualifier 'colour:'"):
        parse("error: colour:red")
    with pytest.raises(QueryError, match="agent: needs a value"):
        parse("error: agent: x")


def test_matching_follows_the_tree() -> None:
    text = "We wrote the rollback plan before the deploy to staging."
    assert first_match(parse('"rollback plan"'), text) == (13, 26)
    assert first_match(parse('"plan rollback"'), text) is None
    assert first_match(parse("deploy -staging"), text) is None
    assert first_match(parse("deploy -production"), text) == (38, 44)
    assert first_match(parse("release OR deploy"), text) == (38, 44)
    assert first_match(parse("roll*"), text) == (13, 21)
    assert first_match(parse("迁移"), "数据库迁移失败") == (3, 5)
    assert first_match(parse("移失"), "数据库迁移失败") == (4, 6)
    assert first_match(parse("迁"), "数据库迁移失败") == (2, 4)  # the bigram holding it
    assert first_match(parse("库数"), "数据库迁移失败") is None


def test_highlights_mark_every_positive_term() -> None:
    text = "rollback plan: roll back the deploy, then plan again"
    spans = highlights(parse('"rollback plan" deploy -nothing'), text)
    assert [text[s:e] for s, e in spans] == ["rollback plan", "deploy"]


@given(
    st.text(alphabet=st.sampled_from("abcXYZ_09 -.\n"), max_size=120),
    st.lists(st.sampled_from(["abc", "xyz", "a_b", "09", "c", "zz"]), min_size=1, max_size=3),
)
def test_the_ascii_snippet_matcher_agrees_with_the_tokenizer(text: str, words: list[str]) -> None:
    """The regex fast path finds exactly what walking the tokens finds."""
    q = parse(" ".join(words))
    spans = matches_module._eval(q.tree, matches_module._Doc(text), True)
    assert first_match(q, text) == (spans[0] if spans else None)


@given(
    st.text(alphabet=st.sampled_from("abAB_9 -.\n迁移数据库é𝓐ſK"), max_size=80),
    st.sampled_from(
        ["ab", "AB", "a_b", '"ab ba"', '"ab ab"', '"9 ab"', "迁移", "数据", "库迁", "移迁"]
    ),
)
def test_searched_spans_agree_with_the_tokens(text: str, query: str) -> None:
    """The plain-search path finds exactly the spans walking the tokens finds."""
    term = parse(query).tree
    assert isinstance(term, Term)
    for positions in (True, False):
        searched = matches_module._searched_spans(term, text, positions)
        if searched is not None:
            doc = matches_module._Doc(text)
            assert searched == matches_module._token_spans(term, doc, positions)


def test_searched_spans_are_taken_where_they_hold() -> None:
    def searched(query: str, text: str, positions: bool = True) -> list[tuple[int, int]] | None:
        term = parse(query).tree
        assert isinstance(term, Term)
        return matches_module._searched_spans(term, text, positions)

    assert searched("迁移", "x 迁移迁移") == [(2, 4), (4, 6)]
    assert searched('"ab ab"', "ab ab ab") == [(0, 5), (3, 8)]
    assert searched('"ab ab"', "ab ab ab", positions=False) is None  # a bag of tokens
    assert searched("cafe", "café") is None  # a word to fold: the tokens decide


def test_times_absolute_relative_and_bad() -> None:
    now = int(datetime(2026, 12, 1, 12, 0).timestamp() * 1000)
    day = 86_400_000
    assert parse_time("7d", now) == now - 7 * day
    assert parse_time("12h", now) == now - day // 2
    assert parse_time("30m", now) == now - 30 * 60_000
    assert parse_time("2w", now) == now - 14 * day
    assert parse_time("6mo", now) == now - 180 * day
    assert parse_time("1y", now) == now - 365 * day
    midnight = int(datetime(2026, 11, 30).timestamp() * 1000)
    assert parse_time("2026-11-30", now) == midnight
    assert parse_time("2026-11-30", now, end_of_day=True) == midnight + day - 1
    assert parse_time("2026-11-30T10:00:00+00:00", now) == 1_796_032_800_000
    with pytest.raises(QueryError, match="bad date in until"):
        parse_time("last tuesday", now, name="until")
