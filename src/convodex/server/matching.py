"""How the database narrows candidates before the shown-text check (SPEC S3, S5):
the case variants of a query's characters and the forms they take in raw JSON.

Short queries (and queries with NUL) are matched against the stored payload, the
JSON text exactly as its writer encoded it. A standard encoder may write a
character raw, as ``\\uXXXX`` (either hex case; a surrogate pair beyond the BMP), or
with a named escape (``\\n``, ``\\"``, ``\\/`` …), so the raw match must accept every
form, and every case variant of every character, or it finds less than the
shown-text path. The database only narrows the candidates: each one is then decoded
and its shown text must contain the query (see :mod:`convodex.server.search`).
"""

from __future__ import annotations

import functools
import itertools
from typing import NamedTuple

#: the most LIKE patterns one group may hold; a longer query is split into groups
MAX_PATTERNS = 64

_NAMED = {
    '"': '\\"',
    "\\": "\\\\",
    "/": "\\/",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}
# Every cased character lies below U+1F000 (Unicode 15).
_CASED_BELOW = 0x1F000
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


@functools.cache
def _case_classes() -> tuple[dict[str, frozenset[str]], dict[str, frozenset[str]]]:
    """Cased characters grouped by their lower case and by their upper case."""
    by_lower: dict[str, set[str]] = {}
    by_upper: dict[str, set[str]] = {}
    for point in range(_CASED_BELOW):
        char = chr(point)
        lower, upper = char.lower(), char.upper()
        if lower != char or upper != char:
            by_lower.setdefault(lower, {lower}).add(char)
            by_upper.setdefault(upper, {upper}).add(char)
    return (
        {k: frozenset(v) for k, v in by_lower.items()},
        {k: frozenset(v) for k, v in by_upper.items()},
    )


def case_variants(char: str) -> frozenset[str]:
    """Single characters that may match ``char`` case-insensitively: those with the
    same lower case or the same upper case (a superset of what ``str.lower`` equates,
    so the database never drops a candidate the shown-text check would accept)."""
    by_lower, by_upper = _case_classes()
    found = {char}
    found |= by_lower.get(char.lower(), frozenset())
    found |= by_upper.get(char.upper(), frozenset())
    return frozenset(c for c in found if len(c) == 1)


def ascii_lower(text: str) -> str:
    """``text`` with ASCII letters lower-cased and every other character kept."""
    return text.translate(_ASCII_LOWER)


def _escaped(char: str) -> str:
    point = ord(char)
    if point < 0x10000:
        return f"\\u{point:04x}"
    point -= 0x10000
    return f"\\u{0xD800 + (point >> 10):04x}\\u{0xDC00 + (point & 0x3FF):04x}"


def encoded_forms(char: str) -> list[str]:
    """Every way a JSON encoder may write ``char`` or one of its case variants, as the
    database compares them: ASCII letters fold, so hex digits and ASCII letters are
    listed in one case only."""
    forms: dict[str, str] = {}
    for variant in sorted(case_variants(char)):
        written = [_escaped(variant)]
        if variant in _NAMED:
            written.append(_NAMED[variant])
        if variant not in '"\\' and ord(variant) >= 0x20 and not 0xD800 <= ord(variant) < 0xE000:
            written.append(variant)
        for form in written:
            forms.setdefault(ascii_lower(form), form)
    return sorted(forms.values())


#: what every ``\\uXXXX`` form contains: payloads without it need only the other forms
UNICODE_ESCAPE = "\\u"


class LikeGroup(NamedTuple):
    """Alternative LIKE patterns for one piece of a query: ``plain`` ones, and those
    with a ``\\uXXXX`` form, worth trying only on payloads that contain ``\\u``."""

    plain: list[str]
    escaped: list[str]


def like_groups(query: str) -> list[LikeGroup]:
    """LIKE patterns for ``query`` in raw JSON, as groups that must all match (AND),
    each a set of alternatives (OR). A query whose combinations fit in
    ``MAX_PATTERNS`` is one group of exact patterns; a longer one is split into
    consecutive pieces, which keeps the filter a superset of the true matches."""
    groups: list[LikeGroup] = []
    piece: list[list[str]] = []
    combos = 1
    for char in query:
        forms = encoded_forms(char)
        if piece and combos * len(forms) > MAX_PATTERNS:
            groups.append(_patterns(piece))
            piece, combos = [], 1
        piece.append(forms)
        combos *= len(forms)
    if piece:
        groups.append(_patterns(piece))
    return groups


def like_escape(text: str) -> str:
    """Make ``%``, ``_`` and ``\\`` literal in a LIKE pattern escaped with ``\\``."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _patterns(piece: list[list[str]]) -> LikeGroup:
    group = LikeGroup([], [])
    for combo in itertools.product(*piece):
        text = "".join(combo)
        target = group.escaped if UNICODE_ESCAPE in text else group.plain
        target.append("%" + like_escape(text) + "%")
    return group
