"""Tokenizer version 1 (SPEC L3): the only thing the catalog ever stores about text.

Words are runs of letters, digits and ``_``, case-folded with diacritics removed.
Runs of Han, Hiragana, Katakana or Hangul become overlapping bigrams (a run of one
character is that character). Everything else separates tokens.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterator
from typing import NamedTuple

TOKENIZER_VERSION = 1

# Marks the catalog projects beside real tokens: private-use characters, which the
# tokenizer never emits and FTS5's ascii tokenizer keeps inside a token. The last
# character of every CJK run (one-character search), and a tool's name (``tool:``).
TAIL_MARK = "\ue000"
TOOL_MARK = "\ue001"

# CJK scripts that are written without spaces and indexed as bigrams.
_CJK_RANGES = (
    "\u1100-\u11ff"  # Hangul Jamo
    "\u2e80-\u2fdf"  # CJK radicals, Kangxi radicals
    "\u3005\u3007\u3021-\u3029\u3038-\u303b"  # ideographic iteration marks and numerals
    "\u3040-\u309f"  # Hiragana
    "\u30a0-\u30ff"  # Katakana
    "\u3130-\u318f"  # Hangul compatibility Jamo
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\ua960-\ua97f"  # Hangul Jamo extended A
    "\uac00-\ud7af"  # Hangul syllables
    "\ud7b0-\ud7ff"  # Hangul Jamo extended B
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uff66-\uff9f"  # half-width Katakana
    "\uffa0-\uffdc"  # half-width Hangul
    "\U00020000-\U0003134f"  # CJK extensions B..G
)
_CJK = f"[{_CJK_RANGES}]"
_WORD = re.compile(r"\w+")
# Pure-ASCII text needs no Unicode folding: the fast path for code and English.
_ASCII_WORD = re.compile(r"[A-Za-z0-9_]+")


@functools.cache
def _cjk_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(a CJK run or a word of non-CJK word characters, a CJK run): compiled on first
    use, since ASCII text (most queries, most of a CLI search) never needs them."""
    return re.compile(f"({_CJK}+)|((?:(?!{_CJK})\\w)+)"), re.compile(f"{_CJK}+")


@functools.cache
def _non_ascii_word() -> re.Pattern[str]:
    """A word character outside ASCII, or any character of the CJK ranges (which hold
    unassigned code points, not word characters, that indexing still takes as a CJK
    run). Text without one (only … · — ’ beyond ASCII, as in most snippets) has the
    tokens of its ASCII words: the fast path holds for it too. Compiled on first use
    (2.7 ms): ASCII text never needs it."""
    return re.compile(f"[^\\W\\x00-\\x7f]|{_CJK}")


class Token(NamedTuple):
    """A token and the span of the original text it came from."""

    text: str
    start: int
    end: int
    cjk: bool


def fold(word: str) -> str:
    """Case-fold and strip diacritics: ``Café`` → ``cafe``, ``Straße`` → ``strasse``."""
    if word.isascii():
        return word.lower()
    # Compatibility forms first (𝓐 → A), then case folding, then decompose what
    # folding produced (İ → i̇) so every combining mark can be dropped.
    folded = unicodedata.normalize("NFKD", word).casefold()
    decomposed = unicodedata.normalize("NFKD", folded)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def _fold_word(word: str) -> list[str]:
    """Fold one word; compatibility decomposition may split it (``①`` stays whole)."""
    folded = fold(word)
    if folded.isascii() and folded.replace("_", "").isalnum():
        return [folded]
    # Decomposition can produce separators (e.g. fractions); re-split on non-word chars.
    return [m.group(0) for m in re.finditer(r"\w+", folded)]


def ascii_words_only(text: str) -> bool:
    """Whether the tokens of ``text`` are its ASCII words, lower-cased (no word
    character beyond ASCII to fold, no CJK run)."""
    return text.isascii() or _non_ascii_word().search(text) is None


def is_cjk_pair(token: str) -> bool:
    """Whether ``token`` is a CJK bigram: two adjacent characters of one CJK run."""
    return len(token) == 2 and _cjk_patterns()[1].fullmatch(token) is not None


def iter_tokens(text: str) -> Iterator[Token]:
    """Every token of ``text`` in order, with its span in the original string."""
    if ascii_words_only(text):
        for m in _ASCII_WORD.finditer(text):
            yield Token(m.group(0).lower(), m.start(), m.end(), False)
        return
    for m in _cjk_patterns()[0].finditer(text):
        run = m.group(1)
        if run is not None:
            start = m.start(1)
            if len(run) == 1:
                yield Token(run, start, start + 1, True)
                continue
            for i in range(len(run) - 1):
                yield Token(run[i : i + 2], start + i, start + i + 2, True)
            continue
        for folded in _fold_word(m.group(2)):
            yield Token(folded, m.start(2), m.end(2), False)


def tokenize(text: str) -> list[str]:
    """The token strings of ``text`` (SPEC L3 examples are tests of this function).

    The same tokens as ``iter_tokens``, faster: the indexer calls it for every
    non-ASCII document, so words are found a segment at a time, not one by one.
    """
    if text.isascii():
        return _ASCII_WORD.findall(text.lower())
    out: list[str] = []
    pos = 0
    for m in _cjk_patterns()[1].finditer(text):
        if m.start() > pos:
            _words(text[pos : m.start()], out)
        run = m.group()
        if len(run) == 1:
            out.append(run)
        else:
            out.extend([run[i : i + 2] for i in range(len(run) - 1)])
        pos = m.end()
    if pos < len(text):
        _words(text[pos:], out)
    return out


def _words(segment: str, out: list[str]) -> None:
    """Words of a segment that holds no CJK character."""
    if segment.isascii():
        out.extend(_ASCII_WORD.findall(segment.lower()))
        return
    for word in _WORD.findall(segment):
        if word.isascii():
            out.append(word.lower())
        else:
            out.extend(_fold_word(word))


def cjk_run_tails(text: str) -> list[str]:
    """The last character of every CJK run of two or more characters.

    A one-character query must find every bigram that contains it; bigrams that
    start with it are found by prefix, and these tails cover the ones that end
    a run (SPEC L3).
    """
    if text.isascii():
        return []
    return [m.group()[-1] for m in _cjk_patterns()[1].finditer(text) if m.end() - m.start() > 1]


def indexed_tokens(text: str) -> list[str]:
    """What an index stores for ``text``: its tokens, then a marked tail for every CJK
    run (so a one-character query finds the bigrams that end with it). The hub's
    ranked index (server/ranked.py) stores exactly this; the local catalog builds
    the same from these two functions."""
    tokens = tokenize(text)
    tails = cjk_run_tails(text)
    if tails:
        tokens.extend(TAIL_MARK + t for t in tails)
    return tokens
