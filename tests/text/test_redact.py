"""Likely-secret masking (SPEC L15): each documented kind of secret is caught, and the
text around it, counts and ordinary words are left alone."""

from __future__ import annotations

import pytest

from convodex.sessions.brief import brief
from convodex.text.redact import MASK, redact

# One planted secret of each kind the docs list (all fake, none ever valid).
PLANTED = {
    "openai": "sk-proj-4fJq9ZxT2mLw8RkP1vN6bY3cH7dS0aEo",
    "anthropic": "sk-ant-api03-Zq8wX2vB7nM4kL1pJ6hG9fD3sA5",
    "github": "ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R",
    "github_pat": "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv",
    "gitlab": "glpat-xY7z9Ab3Cd5Ef1Gh2Ij4",
    "slack": "xoxb-123456789012-1234567890123-AbCdEfGhIjKl",
    "aws": "AKIAQ3EGRLW6EXAMPLE7",
    "google": "AIzaSyD1fakeKeyForTests0123456789abcdef",
    "stripe": "sk_live_51HfakeStripeKey0123456789",
    "huggingface": "hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
    "npm": "npm_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0ZXN0LXVzZXIifQ.c2lnbmF0dXJlLWZha2UtMTIzNDU2",
}


@pytest.mark.parametrize("kind", sorted(PLANTED))
def test_provider_tokens_and_jwts(kind: str) -> None:
    secret = PLANTED[kind]
    text = f"use {secret} for the deploy, then rotate it"
    assert redact(text) == f"use {MASK} for the deploy, then rotate it"


def test_private_key_blocks_headers_urls_and_assignments() -> None:
    block = (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"
        "-----END OPENSSH PRIVATE KEY-----"
    )
    assert redact(f"key:\n{block}\ndone") == f"key:\n{MASK}\ndone"
    assert redact("curl -H 'Authorization: Bearer abcdef0123456789xyz'") == (
        f"curl -H 'Authorization: Bearer {MASK}'"
    )
    assert redact("postgres://app:hunter2@db.internal:5432/orders") == (
        f"postgres://app:{MASK}@db.internal:5432/orders"
    )
    assert redact("DB_PASSWORD=hunter2 ./run.sh") == f"DB_PASSWORD={MASK} ./run.sh"
    assert redact('{"api_key": "abc123def456", "user": "ann"}') == (
        f'{{"api_key": "{MASK}", "user": "ann"}}'
    )
    assert redact("client_secret: 'q9w8e7r6'") == f"client_secret: '{MASK}'"
    assert redact("export GITHUB_TOKEN=abc.def.ghi") == f"export GITHUB_TOKEN={MASK}"


def test_ordinary_text_is_left_alone() -> None:
    for text in (
        "max_tokens: 4096, passwordless = true, token_count=12",
        "the task-notification hook ran; sk-short is not a key",
        "we discussed password rotation policy at length",
        "see https://example.com/docs and ghp_ is a prefix",
    ):
        assert redact(text) == text


def test_the_brief_is_bounded() -> None:
    from convodex.models import SessionDocument, SessionEntry, SessionPart

    long = "word " * 4000
    messages = [
        SessionEntry(
            message_index=n,
            role="user" if n % 2 == 0 else "assistant",
            created_at=None,
            parts=[SessionPart(kind="user_text" if n % 2 == 0 else "assistant_text", text=long)],
        )
        for n in range(30)
    ]
    messages.append(
        SessionEntry(
            message_index=30,
            role="assistant",
            created_at=None,
            parts=[
                SessionPart(
                    kind="tool_input",
                    text='bash {"command": "pytest -x tests/"}',
                    tool_name="bash",
                ),
                SessionPart(
                    kind="tool_input",
                    text='Edit {"file_path": "src/app.py", "old": "a"}',
                    tool_name="Edit",
                ),
            ],
        )
    )
    messages.append(
        SessionEntry(
            message_index=31,
            role="tool",
            created_at=None,
            parts=[SessionPart(kind="tool_error", text="bash error: 2 failed", tool_name="bash")],
        )
    )
    document = SessionDocument(
        session_id="s1",
        session_path="/x/s1.jsonl",
        agent="claude_code",
        title="A long session",
        project="/srv/app",
        started_at=None,
        ended_at=None,
        message_count=len(messages),
        resume_command=None,
        messages=messages,
    )
    for limit in (1024, 4096, 8192, 20000):
        text = brief(document, limit)
        assert len(text.encode("utf-8")) <= limit
        assert text.startswith("# Continuing: A long session")
    text = brief(document, 8192)
    assert "`src/app.py`" in text and "`pytest -x tests/`" in text
    assert "- bash: error: 2 failed" in text
    assert "## Last turns" in text and "(#29)" in text


# -- every form it claims to catch, with whatever text around it (hypothesis) ----------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from convodex.text.redact import redact_paths  # noqa: E402

_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_B64URL = _ALNUM + "_-"


def _run(alphabet: str, low: int, high: int) -> st.SearchStrategy[str]:
    return st.text(alphabet, min_size=low, max_size=high)


# Each provider shape the module's docstring lists, generated from its published form.
TOKENS = st.one_of(
    _run(_B64URL, 20, 40).map(lambda s: "sk-ant-" + s),
    st.tuples(st.sampled_from(["", "proj-", "svcacct-", "admin-"]), _run(_B64URL, 20, 40)).map(
        lambda t: "sk-" + t[0] + t[1]
    ),
    st.tuples(st.sampled_from("pousr"), _run(_ALNUM, 30, 40)).map(lambda t: f"gh{t[0]}_{t[1]}"),
    _run(_ALNUM + "_", 22, 40).map(lambda s: "github_pat_" + s),
    _run(_B64URL, 20, 30).map(lambda s: "glpat-" + s),
    st.tuples(st.sampled_from("abposr"), _run(_ALNUM + "-", 10, 30)).map(
        lambda t: f"xox{t[0]}-{t[1]}"
    ),
    st.tuples(st.sampled_from(["AKIA", "ASIA"]), _run(_ALNUM[:26] + "0123456789", 16, 16)).map(
        "".join
    ),
    _run(_B64URL, 35, 35).map(lambda s: "AIza" + s),
    st.tuples(
        st.sampled_from(["sk", "rk", "pk"]), st.sampled_from(["live", "test"]), _run(_ALNUM, 16, 30)
    ).map(lambda t: f"{t[0]}_{t[1]}_{t[2]}"),
    _run(_ALNUM, 30, 40).map(lambda s: "hf_" + s),
    _run(_ALNUM, 36, 36).map(lambda s: "npm_" + s),
    st.tuples(_run(_B64URL, 8, 20), _run(_B64URL, 8, 20), _run(_B64URL, 8, 20)).map(
        lambda t: f"eyJ{t[0]}.eyJ{t[1]}.{t[2]}"
    ),
)
# A value an assignment masks: a word that is not a count or a flag, or a token.
VALUES = st.one_of(
    _run(_ALNUM + "._/+-", 4, 24).filter(
        lambda v: (
            any(c.isalpha() for c in v)
            and v.lower() not in {"true", "false", "null", "none", "yes", "no"}
        )
    ),
    TOKENS,
)
NAMES = st.sampled_from(
    [
        "GITHUB_TOKEN",
        "password",
        "DB_PASSWORD",
        "passwd",
        "secret",
        "api_key",
        "OPENAI_API_KEY",
        "apikey",
        "access_key",
        "client_secret",
        "private_key",
        "auth_token",
        "credentials",
    ]
)


@st.composite
def secrets(draw: st.DrawFn) -> tuple[str, str]:
    """(a secret in one of the claimed forms, what redaction makes of it)."""
    form = draw(st.sampled_from(["token", "assign", "quoted", "json", "header", "url", "key"]))
    if form == "token":
        return draw(TOKENS), MASK
    name, value = draw(NAMES), draw(VALUES)
    if form == "assign":
        sep = draw(st.sampled_from(["=", ": ", " = ", ":"]))
        return f"{name}{sep}{value}", f"{name}{sep}{MASK}"
    if form == "quoted":
        quote = draw(st.sampled_from(["'", '"']))
        return f"{name}={quote}{value}{quote}", f"{name}={quote}{MASK}{quote}"
    if form == "json":
        return f'"{name}": "{value}"', f'"{name}": "{MASK}"'
    if form == "header":
        scheme = draw(st.sampled_from(["Bearer", "Basic", "Token"]))
        credential = draw(st.one_of(_run(_ALNUM + "._~+/=-", 12, 40), TOKENS))
        return f"Authorization: {scheme} {credential}", f"Authorization: {scheme} {MASK}"
    if form == "url":
        user = draw(_run(_ALNUM, 1, 10))
        password = draw(st.one_of(_run(_ALNUM + "!$%*+-._~", 1, 20), TOKENS))
        host = draw(st.sampled_from(["db.internal:5432/app", "github.com/o/r.git", "h"]))
        scheme = draw(st.sampled_from(["postgres", "https", "redis"]))
        return f"{scheme}://{user}:{password}@{host}", f"{scheme}://{user}:{MASK}@{host}"
    body = draw(_run(_ALNUM + "+/=\n", 1, 80))
    label = draw(st.sampled_from(["", "RSA ", "OPENSSH ", "EC "]))
    block = f"-----BEGIN {label}PRIVATE KEY-----\n{body}\n-----END {label}PRIVATE KEY-----"
    return block, MASK


PLAIN = st.lists(
    st.sampled_from(["run", "the", "deploy", "then", "check", "logs", "ok", "42", "(done)"]),
    max_size=4,
).map(" ".join)
SEPARATORS = st.sampled_from([" ", "\n", " | ", "; ", "\t"])


@settings(max_examples=250, deadline=None)
@given(PLAIN, SEPARATORS, secrets(), SEPARATORS, PLAIN)
def test_every_claimed_form_is_masked_whole(
    before: str, left: str, secret: tuple[str, str], right: str, after: str
) -> None:
    """The secret goes, the form around it stays, and nothing is left over: no stray
    character of the secret or of the mask (``GITHUB_TOKEN=[redacted]]`` was one)."""
    raw, masked = secret
    text = f"{before}{left}{raw}{right}{after}"
    out = redact(text)
    assert out == f"{before}{left}{masked}{right}{after}"
    assert redact(out) == out  # a redacted text stays as it is


@settings(max_examples=200, deadline=None)
@given(st.lists(secrets(), min_size=2, max_size=5), SEPARATORS)
def test_several_secrets_side_by_side(found: list[tuple[str, str]], sep: str) -> None:
    text = sep.join(raw for raw, _ in found)
    assert redact(text) == sep.join(masked for _, masked in found)


def test_the_reported_token_assignment() -> None:
    token = "ghp_" + "a1B2" * 9
    assert redact(f"export GITHUB_TOKEN={token}") == f"export GITHUB_TOKEN={MASK}"
    assert redact(f"GITHUB_TOKEN={token}]") == f"GITHUB_TOKEN={MASK}]"


def test_home_and_user_name_in_paths() -> None:
    home, user = "/home/alice", "alice"
    text = (
        "cat /home/alice/app/.env and ~/.claude/projects/-home-alice-app/s.jsonl; "
        "/tmp/alice/x; alice said hi; /home/alicebob/y"
    )
    assert redact_paths(text, home, user) == (
        "cat ~/app/.env and ~/.claude/projects/-home-[user]-app/s.jsonl; "
        "/tmp/[user]/x; alice said hi; /home/alicebob/y"
    )
    assert redact_paths("/home/alice", home, user) == "~"


def _reference(text: str) -> str:
    """Every pattern scanned over the whole text: what the literal look-ups must equal."""
    from convodex.text import redact as r
    from convodex.text.matches import merge_spans

    spans = [m.span() for m in r._PRIVATE_KEY.finditer(text)]
    spans += [m.span() for m in r._TOKEN_SHAPES.finditer(text)]
    spans += [m.span(3) for m in r._AUTH_HEADER.finditer(text)]
    spans += [m.span(2) for m in r._URL_PASSWORD.finditer(text)]
    for match in r._ASSIGNMENT.finditer(text):
        group = next(g for g in ("dq", "sq", "bare") if match[g] is not None)
        if not r._NOT_SECRET.fullmatch(match[group]):
            spans.append(match.span(group))
    out, at = [], 0
    for start, end in merge_spans(spans):
        out += [text[at:start], MASK]
        at = end
    return "".join(out) + text[at:]


def test_looking_only_where_the_literals_are_finds_every_span() -> None:
    """Random texts of secret-shaped pieces, case variants and the characters (?i) folds
    to ASCII (ſ, K, İ, ı): the redaction equals a full scan of every pattern."""
    import random

    pieces = [
        "api_key", "API-KEY", "apikey", "my.secret", "Client_Secret", "PASSWORD", "passwd",
        "pwd", "auth_token", "ToKeN", "credentials", "monkey", "keys", "ſecret", "\u212aey",
        "İ", "ı", "=", ": ", '"', "'", " ", "\n", "-", ".", "_", "hunter2", "true", "42",
        "[redacted]", "Bearer ", "basic\t", "abcdefghijkl0123", "https://u:pw@h/",
        "x://a:b@c", PLANTED["github"], PLANTED["jwt"], "sk-", "é", "部署", ";", "}",
    ]  # fmt: skip
    rng = random.Random(29)
    for _ in range(4000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 14)))
        assert redact(text) == _reference(text), text
