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

MASK = "[redacted]"

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
      | (?P<bare>[^\s"',;&}}\])]+)
    )
    """
)

_NOT_SECRET = re.compile(r"(?i)[0-9.]+|true|false|null|none|yes|no|\[redacted\]")


def redact(text: str) -> str:
    """``text`` with every likely secret it recognises replaced by ``[redacted]``."""
    if not text:
        return text
    text = _PRIVATE_KEY.sub(MASK, text)
    text = _TOKEN_SHAPES.sub(MASK, text)
    text = _AUTH_HEADER.sub(lambda m: f"{m[1]}{m[2]}{MASK}", text)
    text = _URL_PASSWORD.sub(lambda m: f"{m[1]}{MASK}{m[3]}", text)
    return _ASSIGNMENT.sub(_mask_assignment, text)


def _mask_assignment(match: re.Match[str]) -> str:
    value = match["dq"] or match["sq"] or match["bare"] or ""
    if value == MASK or _NOT_SECRET.fullmatch(value):
        return match[0]  # `max_tokens: 4096`, `passwordless = true`: counts and flags
    head = match["name"] + match["sep"]
    if match["dq"] is not None:
        return f'{head}"{MASK}"'
    if match["sq"] is not None:
        return f"{head}'{MASK}'"
    return head + MASK
