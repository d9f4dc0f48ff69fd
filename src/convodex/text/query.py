"""The query language (SPEC L12): one parser for every surface.

``parse("deploy -staging \\"rollback plan\\" agent:codex since:7d")`` gives a
:class:`Query`: a boolean tree of terms over L3 tokens plus the filters its
qualifiers named. The tree is turned into an FTS5 MATCH expression for the catalog
(:func:`match_expression`) and evaluated against a loaded document to find where it
matched (text/matches.py). Pure: no I/O.

Grammar: words are ANDed; ``a OR b``; ``-word`` / ``NOT word``; ``"quoted phrase"``
(tokens adjacent and in order); ``prefix*`` (2+ characters); parentheses;
``name:value`` / ``name:"quoted value"`` qualifiers at the top level. A CJK run is a
phrase of its bigrams; one CJK character also matches the bigrams that contain it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Sequence
from typing import Literal

import msgspec

from convodex.errors import QueryError
from convodex.text.tokens import (
    TAIL_MARK,
    TOOL_MARK,
    is_cjk_pair,
    iter_tokens,
)

QUALIFIERS = ("agent", "project", "kind", "tool", "role", "session", "since", "until")

TermKind = Literal["word", "phrase", "prefix", "cjk1"]


class Term(msgspec.Struct, frozen=True):
    """A word, a phrase of adjacent tokens, a prefix, or one CJK character."""

    tokens: tuple[str, ...]
    kind: TermKind


class And(msgspec.Struct, frozen=True):
    items: tuple[Node, ...]


class Or(msgspec.Struct, frozen=True):
    items: tuple[Node, ...]


class Not(msgspec.Struct, frozen=True):
    item: Node


Node = Term | And | Or | Not


class Query(msgspec.Struct, frozen=True):
    """A parsed query: the match tree and the qualifiers' values (raw, per name)."""

    tree: Node
    qualifiers: dict[str, tuple[str, ...]] = msgspec.field(default_factory=dict)

    def terms(self) -> list[Term]:
        """Every positive term, in query order (what a hit is highlighted by)."""
        return list(_positive_terms(self.tree))

    def key(self) -> str:
        """A canonical text of the match tree (cursors compare it)."""
        return _canonical(self.tree)


# -- lexing ----------------------------------------------------------------------------

_QUALIFIER = re.compile(r"([A-Za-z_]+):(?![/:\\])")
# A command-line option, searched as a word rather than negated: ``--long`` (two
# dashes), or a cluster of one or two letters (``-la``, ``-rn``, ``-F``); ``-staging``
# is still a negation.
_OPTION = re.compile(r"--[^\s()\"]|-[A-Za-z]{1,2}(?=[\s()\"]|$)")


class _Lexeme(msgspec.Struct):
    kind: Literal["(", ")", "word", "phrase", "or", "and", "not", "qualifier"]
    text: str = ""
    negated: bool = False
    name: str = ""  # qualifier name


def _lex(text: str) -> list[_Lexeme]:
    out: list[_Lexeme] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        negated = False
        if ch == "-" and i + 1 < n and not text[i + 1].isspace():
            if _OPTION.match(text, i):
                end = i
                while end < n and not text[end].isspace() and text[end] not in '()"':
                    end += 1
                out.append(_Lexeme("word", text[i:end]))  # ``ls -la``, ``aider --no-git``
                i = end
                continue
            negated = True
            i += 1
            ch = text[i]
        if ch in "()":
            if ch == "(" and negated:
                out.append(_Lexeme("not"))
            elif negated:
                raise QueryError("'-' must come before a word, a phrase or '('")
            out.append(_Lexeme(ch))  # type: ignore[arg-type]
            i += 1
            continue
        if ch == '"':
            end = text.find('"', i + 1)
            if end < 0:
                raise QueryError("unclosed quote in the query")
            out.append(_Lexeme("phrase", text[i + 1 : end], negated))
            i = end + 1
            continue
        qualifier = _QUALIFIER.match(text, i)
        if qualifier is not None and i + len(qualifier.group(0)) < n:
            name = qualifier.group(1).lower()
            j = qualifier.end()
            if name not in QUALIFIERS and text[j].isspace():
                # ``error: patch did not apply``: a pasted message, not a qualifier.
                out.append(_Lexeme("word", qualifier.group(1), negated))
                i = j
                continue
            if text[j] == '"':
                end = text.find('"', j + 1)
                if end < 0:
                    raise QueryError(f"unclosed quote in the {name}: value")
                value, i = text[j + 1 : end], end + 1
            elif text[j].isspace():
                raise QueryError(f"{name}: needs a value")
            else:
                end = j
                while end < n and not text[end].isspace() and text[end] not in '()"':
                    end += 1
                value, i = text[j:end], end
            if name not in QUALIFIERS:
                raise QueryError(
                    f"unknown qualifier '{qualifier.group(1)}:'; known: "
                    + ", ".join(f"{q}:" for q in QUALIFIERS)
                    + " (quote the word to search for it)"
                )
            if negated:
                raise QueryError(f"a qualifier cannot be negated: -{name}:")
            out.append(_Lexeme("qualifier", value, name=name))
            continue
        end = i
        while end < n and not text[end].isspace() and text[end] not in '()"':
            end += 1
        word = text[i:end]
        i = end
        if not negated and word in ("OR", "AND", "NOT"):
            out.append(_Lexeme(word.lower()))  # type: ignore[arg-type]
            continue
        out.append(_Lexeme("word", word, negated))
    return out


# -- parsing ---------------------------------------------------------------------------


class _Parser:
    def __init__(self, lexemes: list[_Lexeme]) -> None:
        self.lexemes = lexemes
        self.pos = 0
        self.depth = 0
        self.qualifiers: dict[str, list[str]] = {}

    def peek(self) -> _Lexeme | None:
        return self.lexemes[self.pos] if self.pos < len(self.lexemes) else None

    def take(self) -> _Lexeme:
        lexeme = self.lexemes[self.pos]
        self.pos += 1
        return lexeme

    def parse_or(self) -> Node | None:
        items = [self.parse_and()]
        while (nxt := self.peek()) is not None and nxt.kind == "or":
            self.take()
            items.append(self.parse_and())
        if len(items) == 1:
            return items[0]
        kept = [item for item in items if item is not None]
        if len(kept) != len(items):
            raise QueryError("OR needs a term on each side")
        if any(isinstance(item, Not) for item in kept):
            raise QueryError("a negative term needs a positive term beside it, not OR")
        return Or(tuple(kept))

    def parse_and(self) -> Node | None:
        items: list[Node] = []
        while (nxt := self.peek()) is not None and nxt.kind not in ("or", ")"):
            if nxt.kind == "and":
                self.take()
                continue
            item = self.parse_unary()
            if item is not None:
                items.append(item)
        if not items:
            return None
        if len(items) == 1:
            return items[0]
        return And(tuple(items))

    def parse_unary(self) -> Node | None:
        lexeme = self.take()
        if lexeme.kind == "not":
            nxt = self.peek()
            if nxt is None or nxt.kind in ("or", "and", "not", ")"):
                raise QueryError("NOT must be followed by a word, a phrase or '('")
            inner = self.parse_unary()
            if inner is None:
                raise QueryError("NOT must be followed by a word, a phrase or '('")
            return Not(inner)
        if lexeme.kind == "(":
            self.depth += 1
            inner = self.parse_or()
            if self.peek() is None or self.take().kind != ")":
                raise QueryError("unclosed parenthesis in the query")
            self.depth -= 1
            if inner is None:
                raise QueryError("empty parentheses in the query")
            return inner
        if lexeme.kind == ")":
            raise QueryError("unmatched ')' in the query")
        if lexeme.kind == "qualifier":
            if self.depth:
                raise QueryError(f"{lexeme.name}: must be outside parentheses")
            self.qualifiers.setdefault(lexeme.name, []).append(lexeme.text)
            return None
        node = _text_node(lexeme.text, lexeme.kind == "phrase")
        if node is None:
            return None
        return Not(node) if lexeme.negated else node


def _text_node(text: str, quoted: bool) -> Node | None:
    """The terms of one word or quoted phrase (None when it holds no token)."""
    prefix = not quoted and text.endswith("*")
    if prefix:
        text = text.rstrip("*")
    tokens = list(iter_tokens(text))
    if not tokens:
        if prefix:
            raise QueryError("a prefix search needs at least 2 letters or digits before *")
        return None
    if quoted:
        if len(tokens) == 1 and tokens[0].cjk and len(tokens[0].text) == 1:
            return Term((tokens[0].text,), "cjk1")
        return Term(tuple(t.text for t in tokens), "phrase" if len(tokens) > 1 else "word")
    terms: list[Node] = []
    run: list[str] = []
    last_end = -1
    for tok in tokens:
        if tok.cjk and run and tok.start == last_end - 1:
            run.append(tok.text)  # the next bigram of the same CJK run
        else:
            if run:
                terms.append(_cjk_run(run))
                run = []
            if tok.cjk:
                run = [tok.text]
            else:
                terms.append(Term((tok.text,), "word"))
        last_end = tok.end
    if run:
        terms.append(_cjk_run(run))
    if prefix:
        last = terms[-1]
        if not (isinstance(last, Term) and last.kind == "word") or len(last.tokens[0]) < 2:
            raise QueryError("a prefix search needs at least 2 letters or digits before *")
        terms[-1] = Term(last.tokens, "prefix")
    return terms[0] if len(terms) == 1 else And(tuple(terms))


def _cjk_run(bigrams: list[str]) -> Term:
    if len(bigrams) == 1 and len(bigrams[0]) == 1:
        return Term((bigrams[0],), "cjk1")
    return Term(tuple(bigrams), "phrase" if len(bigrams) > 1 else "word")


def browse_qualifiers(text: str) -> dict[str, tuple[str, ...]] | None:
    """The qualifiers of a query that holds no words (empty, or qualifiers only): such a
    query browses sessions instead of searching (L17), on every surface. None when it
    holds anything else (words, phrases, operators: a search, or an error of ``parse``).
    """
    lexemes = _lex(text)
    if any(lexeme.kind != "qualifier" for lexeme in lexemes):
        return None
    found: dict[str, list[str]] = {}
    for lexeme in lexemes:
        found.setdefault(lexeme.name, []).append(lexeme.text)
    return {name: tuple(values) for name, values in found.items()}


def parse(text: str) -> Query:
    """Parse a query; malformed input raises ``QueryError`` naming the problem."""
    parser = _Parser(_lex(text))
    tree = parser.parse_or()
    if parser.peek() is not None:
        raise QueryError("unmatched ')' in the query")
    qualifiers = {name: tuple(values) for name, values in parser.qualifiers.items()}
    if tree is None:
        raise QueryError("query must contain at least one letter or number")
    tree = _flatten(tree)
    if not _has_positive(tree):
        raise QueryError("a query of only negative terms matches everything: add a word")
    return Query(tree, qualifiers)


def _flatten(node: Node) -> Node:
    """Nested ANDs (and ORs) become one level, so FTS5 sees the simplest expression."""
    if isinstance(node, And | Or):
        items: list[Node] = []
        for item in node.items:
            flat = _flatten(item)
            if type(flat) is type(node):
                items.extend(flat.items)
            else:
                items.append(flat)
        return type(node)(tuple(items))
    if isinstance(node, Not):
        return Not(_flatten(node.item))
    return node


def _has_positive(node: Node) -> bool:
    if isinstance(node, Term):
        return True
    if isinstance(node, Not):
        return False
    if isinstance(node, Or):
        return all(_has_positive(item) for item in node.items)
    return any(_has_positive(item) for item in node.items)


def _positive_terms(node: Node) -> Iterator[Term]:
    if isinstance(node, Term):
        yield node
    elif isinstance(node, And | Or):
        for item in node.items:
            yield from _positive_terms(item)


def _canonical(node: Node) -> str:
    if isinstance(node, Term):
        return f"{node.kind}:{' '.join(node.tokens)}"
    if isinstance(node, Not):
        return f"not({_canonical(node.item)})"
    name = "and" if isinstance(node, And) else "or"
    return f"{name}(" + ",".join(_canonical(item) for item in node.items) + ")"


# -- the FTS5 expression ---------------------------------------------------------------


def _quote(token: str) -> str:
    return '"' + token.replace('"', '""') + '"'


def match_expression(tree: Node, positions: bool = True) -> str:
    """The FTS5 MATCH text for ``tree``.

    ``positions`` is False for a table without token positions (``detail=none``):
    a phrase there is all of its tokens, in any order.
    """
    if isinstance(tree, Term):
        if tree.kind == "cjk1":
            ch = tree.tokens[0]
            return f"({_quote(ch)}* OR {_quote(TAIL_MARK + ch)})"
        if tree.kind == "prefix":
            return _quote(tree.tokens[0]) + "*"
        if tree.kind == "phrase" and positions:
            return _quote(" ".join(tree.tokens))
        return " AND ".join(_quote(t) for t in tree.tokens)
    if isinstance(tree, Or):
        return " OR ".join(f"({match_expression(i, positions)})" for i in tree.items)
    if isinstance(tree, Not):  # only reached inside And (parse refuses the rest)
        return match_expression(tree.item, positions)
    positives = [i for i in tree.items if not isinstance(i, Not)]
    negatives = [i for i in tree.items if isinstance(i, Not)]
    text = " AND ".join(f"({match_expression(i, positions)})" for i in positives)
    for neg in negatives:
        text = f"({text}) NOT ({match_expression(neg.item, positions)})"
    return text


def tool_expression(names: Sequence[str]) -> str:
    """The MATCH text that keeps documents of any of these tools (``tool:``)."""
    return " OR ".join(_quote(TOOL_MARK + tool_token(name)) for name in names)


@functools.lru_cache(maxsize=1024)
def tool_token(name: str) -> str:
    """A tool's name as one folded token (``Read-File`` → ``read_file``)."""
    return "_".join(t.text for t in iter_tokens(name)) or "_"


# -- the relaxed query -----------------------------------------------------------------

# Words too common to find a conversation by: a relaxed query leaves them out (they
# would match nearly every document and add nothing to the ranking but time).
STOPWORDS = frozenset(
    """a about above after again all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers him his how i if in into is it its
    just me more most my no nor not now of off on once only or other our out over own same
    she should so some such than that the their them then there these they this those
    through to too under until up very was we were what when where which while who whom
    why will with would you your""".split()
)


def relaxed(query: Query) -> Query | None:
    """The query with every word optional (SPEC L19): its positive terms ORed, common
    words left out, a CJK run as its bigrams, its negative terms still excluding; for a
    search whose words all together find nothing. None when it would be the same query.
    """
    if isinstance(query.tree, Or):
        return None  # any of its words already finds it
    items = query.tree.items if isinstance(query.tree, And) else (query.tree,)
    negatives = tuple(item for item in items if isinstance(item, Not))
    terms: list[Node] = []
    for item in items:
        if isinstance(item, Not):
            continue
        if isinstance(item, Term) and item.kind == "phrase" and all(map(is_cjk_pair, item.tokens)):
            terms.extend(Term((t,), "word") for t in item.tokens)
        elif isinstance(item, Or):
            terms.extend(item.items)
        else:
            terms.append(item)
    kept = [
        t
        for t in terms
        if not (isinstance(t, Term) and t.kind == "word" and t.tokens[0] in STOPWORDS)
    ]
    terms = list(dict.fromkeys(kept or terms))
    loose: Node = terms[0] if len(terms) == 1 else Or(tuple(terms))
    tree = And((loose, *negatives)) if negatives else loose
    if _canonical(tree) == _canonical(query.tree):
        return None
    return Query(tree, query.qualifiers)
