"""Where a parsed query (text/query.py) matches in a loaded text: the snippet's
centre, the check that a source still says what was indexed, the marks a surface
draws. Kept apart from the parser because it walks a document's text and tokens, not
the query string. Pure: no I/O.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from convodex.text.query import And, Node, Not, Or, Query, Term
from convodex.text.tokens import ascii_words_only, is_cjk_pair, iter_tokens

Span = tuple[int, int]


class _Doc:
    """A document's tokens, computed once and only when a query needs them."""

    def __init__(self, text: str) -> None:
        self.text = text

    @functools.cached_property
    def tokens(self) -> list[tuple[str, int, int]]:
        return [(t.text, t.start, t.end) for t in iter_tokens(self.text)]


def _term_spans(term: Term, doc: _Doc, positions: bool) -> list[Span]:
    quick = _searched_spans(term, doc.text, positions)
    return _token_spans(term, doc, positions) if quick is None else quick


def _searched_spans(term: Term, text: str, positions: bool) -> list[Span] | None:
    """The spans ``_token_spans`` finds, by a plain search where that gives the same
    answer, since tokenizing a long message costs more than the rest of its hit: a CJK
    bigram (every two adjacent CJK characters are a token), and ASCII words or phrases
    in text whose tokens are its ASCII words. None when the tokens are needed."""
    tokens = term.tokens
    if term.kind == "word" and is_cjk_pair(tokens[0]):
        out = []
        at = text.find(tokens[0])
        while at >= 0:
            out.append((at, at + 2))
            at = text.find(tokens[0], at + 1)
        return out
    if term.kind == "word" or (term.kind == "phrase" and positions):
        if all(t.isascii() for t in tokens) and ascii_words_only(text):
            return [m.span(1) for m in _sequence_pattern(tokens).finditer(text)]
    return None


@functools.lru_cache(maxsize=256)
def _sequence_pattern(tokens: tuple[str, ...]) -> re.Pattern[str]:
    """Whole ASCII tokens in sequence, separated by anything that is not a token; a
    lookahead, so overlapping occurrences are each found, as walking the tokens does."""
    body = "[^A-Za-z0-9_]+".join(re.escape(t) for t in tokens)
    return re.compile(rf"(?<![A-Za-z0-9_])(?=({body})(?![A-Za-z0-9_]))", re.IGNORECASE | re.ASCII)


def _token_spans(term: Term, doc: _Doc, positions: bool) -> list[Span]:
    tokens = doc.tokens
    if term.kind == "word":
        want = term.tokens[0]
        return [(s, e) for t, s, e in tokens if t == want]
    if term.kind == "prefix":
        want = term.tokens[0]
        return [(s, e) for t, s, e in tokens if t.startswith(want)]
    if term.kind == "cjk1":
        ch = term.tokens[0]
        return [(s, e) for t, s, e in tokens if ch in t and not t.isascii()]
    seq = term.tokens
    if not positions:  # a bag of tokens: each must occur somewhere
        spans = [[(s, e) for t, s, e in tokens if t == want] for want in seq]
        return sorted(sp for group in spans for sp in group) if all(spans) else []
    out: list[Span] = []
    for i in range(len(tokens) - len(seq) + 1):
        if all(tokens[i + k][0] == seq[k] for k in range(len(seq))):
            out.append((tokens[i][1], tokens[i + len(seq) - 1][2]))
    return out


def _eval(node: Node, doc: _Doc, positions: bool) -> list[Span] | None:
    """The spans of positive matches when ``node`` matches ``doc``, else None."""
    if isinstance(node, Term):
        spans = _term_spans(node, doc, positions)
        return spans or None
    if isinstance(node, Not):
        return [] if _eval(node.item, doc, positions) is None else None
    if isinstance(node, Or):
        found = [s for s in (_eval(i, doc, positions) for i in node.items) if s is not None]
        return sorted(sp for group in found for sp in group) if found else None
    out: list[Span] = []
    for item in node.items:
        matched = _eval(item, doc, positions)
        if matched is None:
            return None
        out.extend(matched)
    return sorted(out)


def first_match(query: Query, text: str, positions: bool = True) -> Span | None:
    """Where ``query`` first matches ``text`` (a positive term's span), or None when the
    text does not match: the snippet's centre, and the check that a source still says
    what was indexed."""
    words = _simple_words(query.tree)
    if words is not None and text.isascii():
        return _first_ascii_match(text, words)
    spans = _eval(query.tree, _Doc(text), positions)
    if spans is None:
        return None
    return spans[0] if spans else (0, 0)


# Matches of each term looked at for a snippet's place (a word in every line of a long
# tool output would otherwise be thousands).
SNIPPET_SPANS = 256
# Pieces a snippet is made of at most, when the query's terms are far apart.
SNIPPET_PIECES = 3


def snippet_spans(query: Query, text: str, first: Span, radius: int) -> list[Span]:
    """Where a snippet of ``radius`` characters either side goes, in text order: the
    stretch (at most ``radius`` long) that holds the most of the query's different
    terms (the earliest such), then, for terms it lacks, the stretches that hold them
    (at most ``SNIPPET_PIECES`` in all). One term: ``first``, where it first matched.
    A long tool error that says "error" in its first line and "timeout" thirty lines
    on shows both for ``error timeout``."""
    terms = list(dict.fromkeys(query.terms()))
    if len(terms) < 2:
        return [first]
    doc = _Doc(text)
    found = sorted(
        (start, end, n)
        for n, term in enumerate(terms)
        for start, end in _term_spans(term, doc, True)[:SNIPPET_SPANS]
    )
    width = max(radius, 1)
    stretches: list[tuple[Span, frozenset[int]]] = []
    for i, (start, _, _) in enumerate(found):
        seen: set[int] = set()
        stop = start
        for _, other_end, n in found[i:]:
            if other_end - start > width:
                break
            seen.add(n)
            stop = max(stop, other_end)
        stretches.append(((start, stop), frozenset(seen)))
    chosen: list[Span] = []
    missing = set(range(len(terms)))
    while missing and stretches and len(chosen) < SNIPPET_PIECES:
        span, covers = max(stretches, key=lambda s: (len(s[1] & missing), -s[0][0]))
        if not covers & missing:
            break
        chosen.append(span)
        missing -= covers
    return sorted(chosen) or [first]


def highlights(query: Query, text: str) -> list[Span]:
    """Every span of ``text`` (a snippet) that a positive term of ``query`` matches."""
    doc = _Doc(text)
    spans = {sp for term in query.terms() for sp in _term_spans(term, doc, True)}
    return merge_spans(spans)


def merge_spans(spans: Iterable[Span]) -> list[Span]:
    """Overlapping or touching spans as one, in order (marks and masks alike)."""
    merged: list[Span] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _simple_words(tree: Node) -> tuple[str, ...] | None:
    """The words of a query that is only ASCII words (ANDed), the common case."""
    items = tree.items if isinstance(tree, And) else (tree,)
    words: list[str] = []
    for item in items:
        if not (isinstance(item, Term) and item.kind == "word" and item.tokens[0].isascii()):
            return None
        words.append(item.tokens[0])
    return tuple(words)


def _first_ascii_match(text: str, words: tuple[str, ...]) -> Span | None:
    """The same answer for ASCII text and words, by one regex instead of tokenizing."""
    wanted = set(words)
    found: set[str] = set()
    first: Span | None = None
    for match in _words_pattern(tuple(sorted(wanted))).finditer(text):
        found.add(match.group(0).lower())
        if first is None:
            first = match.span()
        if len(found) == len(wanted):
            break
    return first if len(found) == len(wanted) else None


@functools.lru_cache(maxsize=256)
def _words_pattern(tokens: tuple[str, ...]) -> re.Pattern[str]:
    """Whole ASCII tokens (runs of letters, digits and ``_``) equal to one of ``tokens``."""
    alternatives = "|".join(re.escape(t) for t in sorted(tokens, key=len, reverse=True))
    return re.compile(rf"(?<![A-Za-z0-9_])(?:{alternatives})(?![A-Za-z0-9_])", re.IGNORECASE)
