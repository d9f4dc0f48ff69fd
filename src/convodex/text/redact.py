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

from convodex.text.query import merge_spans

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


def redact(text: str) -> str:
    """``text`` with every likely secret it recognises replaced by ``[redacted]``.

    Every pattern looks at the original text and names the span it would mask; the
    spans are merged and each merged run becomes one mask. Masking pass by pass let a
    later pattern see an earlier mask as part of a value (``GITHUB_TOKEN=ghp_…`` became
    ``GITHUB_TOKEN=[redacted]]``).
    """
    if not text:
        return text
    spans: list[tuple[int, int]] = []
    spans.extend(m.span() for m in _PRIVATE_KEY.finditer(text))
    spans.extend(m.span() for m in _TOKEN_SHAPES.finditer(text))
    spans.extend(m.span(3) for m in _AUTH_HEADER.finditer(text))
    spans.extend(m.span(2) for m in _URL_PASSWORD.finditer(text))
    for match in _ASSIGNMENT.finditer(text):
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
    own = re.compile(rf"(?<![A-Za-z0-9]){re.escape(user)}(?![A-Za-z0-9])") if user else None

    def one(match: re.Match[str]) -> str:
        path = match[0]
        if home and (path == home or path.startswith((home + "/", home + "\\"))):
            path = "~" + path[len(home) :]
        return own.sub(USER_MASK, path) if own is not None else path

    return _PATH.sub(one, text)
