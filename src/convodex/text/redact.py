"""Likely-secret masking for exports and hand-off briefs (SPEC L15): best effort.

What it catches, each replaced by ``[redacted]``:

- provider keys and tokens by their published shapes: OpenAI (``sk-…``, ``sk-proj-…``),
  Anthropic (``sk-ant-…``), GitHub (``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_``,
  ``github_pat_``), GitLab (``glpat-``), Slack (``xoxb-``/``xoxp-``/…), AWS access key
  ids (``AKIA…``/``ASIA…``), Google API keys (``AIza…``), Stripe (``sk_live_``/
  ``rk_test_``/…), Hugging Face (``hf_…``), npm (``npm_…``);
- JSON Web Tokens (three base64url parts, the first two starting ``eyJ``);
- private-key blocks (``-----BEGIN … PRIVATE KEY-----`` to its ``END`` line);
- ``Authorization: Bearer …`` / ``Basic …`` credentials;
- passwords in URLs (``scheme://user:password@host``);
- assignments whose name says secret: ``password=``, ``passwd:``, ``secret``,
  ``token``, ``api_key``/``apikey``, ``access_key``, ``client_secret``,
  ``private_key``, in ``NAME=value``, ``NAME: value`` and JSON ``"NAME": "value"``
  form (the name is kept, the value masked).

It cannot know a secret that has none of these shapes (a bare random string, a
password said in prose): an export meant for strangers still needs a human read.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from convodex.text.matches import merge_spans

MASK = "[redacted]"
USER_MASK = "[user]"

_TOKEN_SHAPES = re.compile(
    r"""
    (?<![A-Za-z0-9_-])(?:
        sk-ant-[A-Za-z0-9_-]{20,}
      | sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}
      | gh[pousr]_[A-Za-z0-9]{30,}
      | github_pat_[A-Za-z0-9_]{22,}
      | glpat-[A-Za-z0-9_-]{20,}
      | xox[abposr]-[A-Za-z0-9-]{10,}
      | (?:AKIA|ASIA)[A-Z0-9]{16}
      | AIza[0-9A-Za-z_-]{35}
      | (?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}
      | hf_[A-Za-z0-9]{30,}
      | npm_[A-Za-z0-9]{36}
      | eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}
    )(?![A-Za-z0-9_-])
    """,
    re.VERBOSE,
)
_PRIVATE_KEY = re.compile(
    r"-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----.*?(?:-----END \1PRIVATE KEY-----|\Z)", re.DOTALL
)
_AUTH_HEADER = re.compile(r"(?i)\b(Bearer|Basic|Token)(\s+)([A-Za-z0-9._~+/=-]{12,})")
_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s:/@]+:)([^\s@/]+)(@)")
_SECRET_NAMES = (
    r"passw(?:or)?d|passwd|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|"
    r"private[_-]?key|client[_-]?secret|auth[_-]?token|credentials?"
)
_ASSIGNMENT = re.compile(
    rf"""(?ix)
    (?P<name>\b[A-Za-z0-9_.-]*(?:{_SECRET_NAMES})[A-Za-z0-9_.-]*)
    (?P<sep>["']?\s*[:=]\s*)
    (?:
        "(?P<dq>[^"\n]+)"
      | '(?P<sq>[^'\n]+)'
      | (?P<bare>\[redacted\]|[^\s"',;&}}\])]+)  # a mask already there stays whole
    )
    """
)

_NOT_SECRET = re.compile(r"(?i)[0-9.]+|true|false|null|none|yes|no|\[redacted\]")


# Literals one of which a pattern's match must contain: a pattern looks only where
# they are (most texts hold none, and ``str.find`` runs at memory speed where a
# pattern tried at every position does not). The case-insensitive patterns'
# literals are found in the lower-cased text.
_TOKEN_PREFIXES = (
    "sk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "xox", "AKIA",
    "ASIA", "AIza", "_live_", "_test_", "hf_", "npm_", "eyJ",
)  # fmt: skip
_AUTH_WORDS = ("bearer", "basic", "token")
_NAME_PARTS = ("passw", "pwd", "secret", "token", "key", "credential")
# The only characters (?i) matches to an ASCII letter besides its two cases (ſ, K, İ,
# ı): in a text holding one, the case-insensitive patterns scan everything.
_FOLDS_TO_ASCII = ("\u017f", "\u212a", "\u0130", "\u0131")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def _holds(text: str, literals: tuple[str, ...]) -> bool:
    return any(literal in text for literal in literals)


def _places(folded: str, literals: tuple[str, ...]) -> list[int]:
    """Where any of ``literals`` starts in ``folded``, in order."""
    found: set[int] = set()
    for literal in literals:
        at = folded.find(literal)
        while at >= 0:
            found.add(at)
            at = folded.find(literal, at + 1)
    return sorted(found)


def _auth_spans(text: str, places: list[int]) -> Iterator[tuple[int, int]]:
    """``_AUTH_HEADER.finditer``'s credential spans, tried only where a scheme word starts."""
    end = 0
    for at in places:
        if at >= end and (match := _AUTH_HEADER.match(text, at)) is not None:
            end = match.end()
            yield match.span(3)


def _assignments(text: str, places: list[int] | None) -> Iterator[re.Match[str]]:
    """``_ASSIGNMENT.finditer(text)``, tried only from the start of the name-character
    run around a secret name's place (``None``: everywhere). A match's name holds a
    secret name inside one run, so no match starts anywhere else."""
    if places is None:
        yield from _ASSIGNMENT.finditer(text)
        return
    tried = 0
    for at in places:
        start = at
        while start > tried and text[start - 1] in _NAME_CHARS:
            start -= 1
        for pos in range(max(start, tried), at + 1):
            match = _ASSIGNMENT.match(text, pos)
            if match is not None:
                yield match
                tried = match.end()
                break
        else:
            tried = max(tried, at + 1)


def redact(text: str) -> str:
    """``text`` with every likely secret it recognises replaced by ``[redacted]``.

    Every pattern looks at the original text and names the span it would mask; the
    spans are merged and each merged run becomes one mask. Masking pass by pass let a
    later pattern see an earlier mask as part of a value (``GITHUB_TOKEN=ghp_…`` became
    ``GITHUB_TOKEN=[redacted]]``). Each pattern looks only where the literals its
    matches need are: the same spans, at a fraction of the cost.
    """
    if not text:
        return text
    folded: str | None = text.lower()
    if not text.isascii() and _holds(text, _FOLDS_TO_ASCII):
        folded = None
    spans: list[tuple[int, int]] = []
    if "PRIVATE KEY-----" in text:
        spans.extend(m.span() for m in _PRIVATE_KEY.finditer(text))
    if _holds(text, _TOKEN_PREFIXES):
        spans.extend(m.span() for m in _TOKEN_SHAPES.finditer(text))
    if folded is None:
        spans.extend(m.span(3) for m in _AUTH_HEADER.finditer(text))
    else:
        spans.extend(_auth_spans(text, _places(folded, _AUTH_WORDS)))
    if "://" in text and "@" in text:
        spans.extend(m.span(2) for m in _URL_PASSWORD.finditer(text))
    if "=" in text or ":" in text:
        places = None if folded is None else _places(folded, _NAME_PARTS)
        for match in _assignments(text, places):
            group = next(g for g in ("dq", "sq", "bare") if match[g] is not None)
            if not _NOT_SECRET.fullmatch(match[group]):
                spans.append(match.span(group))
    if not spans:
        return text
    out: list[str] = []
    at = 0
    for start, end in merge_spans(spans):
        out.append(text[at:start])
        out.append(MASK)
        at = end
    out.append(text[at:])
    return "".join(out)


# A path in text: from ``/``, ``~/`` or a drive letter to the next space or quote.
_PATH = re.compile(r"""(?:(?<![\w.-])~|(?<![\w~])[A-Za-z]:\\|(?<![\w.~-])/)[^\s'"`<>|;,)]*""")


def redact_paths(text: str, home: str, user: str) -> str:
    """Paths in ``text`` without the home directory (``~``) or the user name
    (``[user]`` where it is a whole name inside a path: a directory, a slug's part)."""
    if not text:
        return text
    home = home.rstrip("/\\")
    if (not home or home not in text) and (not user or user not in text):
        return text  # no path in it can change
    own = re.compile(rf"(?<![A-Za-z0-9]){re.escape(user)}(?![A-Za-z0-9])") if user else None

    def one(match: re.Match[str]) -> str:
        path = match[0]
        if home and (path == home or path.startswith((home + "/", home + "\\"))):
            path = "~" + path[len(home) :]
        return own.sub(USER_MASK, path) if own is not None else path

    return _PATH.sub(one, text)
