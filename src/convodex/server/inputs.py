"""Checks on values before they reach the database (SPEC S5).

A value the database cannot store or compare — a number beyond 64 bits, a NUL in
PostgreSQL text, a lone surrogate that is not UTF-8 — must be the caller's clear
400, not a driver error halfway through a transaction. Messages name the field,
never its value.
"""

from __future__ import annotations

from convodex.errors import InvalidInput

#: the largest value of a signed 64-bit integer column (BIGINT, SQLite INTEGER)
MAX_INT64 = 2**63 - 1
#: ids are chosen by callers (session ids) or generated (accounts); generous but bounded
MAX_ID_LENGTH = 256


def storable_text(value: str, field: str) -> str:
    """``value`` if both databases can store it as text: no NUL, valid UTF-8."""
    if "\x00" in value:
        raise InvalidInput(f"{field} must not contain NUL")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{field} must be valid Unicode text") from None
    return value


def check_id(value: object, field: str) -> str:
    """A session or account id: a non-empty string of at most ``MAX_ID_LENGTH``
    characters that the database can store."""
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"{field} must be a non-empty string")
    if len(value) > MAX_ID_LENGTH:
        raise InvalidInput(f"{field} must be at most {MAX_ID_LENGTH} characters")
    return storable_text(value, field)


def check_int64(value: object, field: str, *, minimum: int = 0) -> int:
    """An integer between ``minimum`` and the largest 64-bit value."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{field} must be an integer")
    if not minimum <= value <= MAX_INT64:
        raise InvalidInput(f"{field} must be between {minimum} and {MAX_INT64}")
    return value


def check_seq(value: object, field: str = "seq") -> int:
    """An entry's position in its session: 1 … 2⁶³−1."""
    return check_int64(value, field, minimum=1)


def deeper_than(value: object, limit: int) -> bool:
    """Whether arrays and objects in ``value`` nest more than ``limit`` levels."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: list[object] = list(item.values())
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False
