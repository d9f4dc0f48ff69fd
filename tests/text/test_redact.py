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
