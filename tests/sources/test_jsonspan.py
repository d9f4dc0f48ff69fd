"""Message spans in JSON documents: msgspec's answer is the scanner's."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from convodex.sources import jsonspan

KEYS = ("messages", "history")
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.text(alphabet='ab"\\é迁\n{}[],: ', max_size=6)
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.sampled_from("xyz"), inner, max_size=3)
    ),
    max_leaves=12,
)


@st.composite
def documents(draw: st.DrawFn) -> bytes:
    """A JSON document: a message array, or an object holding one among other members
    (a key may repeat), written compact, indented or with odd whitespace."""
    array = draw(st.lists(values, max_size=6))
    if draw(st.booleans()):
        text = _dump(draw, array)
    else:
        members = [
            (k, _dump(draw, v))
            for k, v in draw(
                st.lists(
                    st.tuples(st.sampled_from(["id", "messages", "history", "meta"]), values),
                    max_size=3,
                )
            )
        ]
        members.insert(
            draw(st.integers(0, len(members))), (draw(st.sampled_from(KEYS)), _dump(draw, array))
        )
        gap = draw(st.sampled_from(["", " ", "\n  ", "\t\r\n"]))
        text = "{" + ",".join(f'{gap}"{k}"{gap}:{gap}{v}' for k, v in members) + gap + "}"
    return (draw(st.sampled_from(["", " \n"])) + text).encode()


def _dump(draw: st.DrawFn, value: Any) -> str:
    indent = draw(st.sampled_from([None, 0, 2]))
    return json.dumps(value, indent=indent, ensure_ascii=draw(st.booleans()))


@given(documents())
def test_decoded_spans_are_the_scanned_ones(buf: bytes) -> None:
    decoded = jsonspan._decoded_spans(buf, KEYS)
    if decoded is not None:
        assert decoded == jsonspan._scanned_spans(buf, KEYS)


def test_the_scanner_decides_malformed_and_repeated_keys() -> None:
    repeated = b'{"messages": [1], "messages": [2, 3]}'
    assert jsonspan._decoded_spans(repeated, KEYS) is None
    assert jsonspan._scanned_spans(repeated, KEYS) == [(14, 1)]
    assert jsonspan._decoded_spans(b'{"messages": [1, 2', KEYS) is None
    assert jsonspan._decoded_spans(b'{"messages": {"a": 1}}', KEYS) is None
    assert jsonspan._decoded_spans(b'{"other": [1]}', KEYS) == []
    assert jsonspan._decoded_spans(b' [ {"a": "]"} ,\n 2 ]', KEYS) == [(3, 10), (17, 1)]


@st.composite
def containers(draw: st.DrawFn) -> bytes:
    """A JSON array or object, written compact, indented or with odd separators."""
    value = draw(
        st.one_of(st.lists(values, max_size=5), st.dictionaries(st.text(max_size=4), values))
    )
    separators = draw(st.sampled_from([(",", ":"), (", ", ": "), (" ,\n", " :\t")]))
    text = json.dumps(
        value,
        indent=draw(st.sampled_from([None, 1, 4])),
        separators=separators,
        ensure_ascii=draw(st.booleans()),
    )
    return (draw(st.sampled_from(["", "\n "])) + text + draw(st.sampled_from(["", " \n"]))).encode()


@given(containers())
def test_decoded_members_and_elements_are_the_scanned_ones(buf: bytes) -> None:
    whole = jsonspan.decoded_document(buf)
    assert whole is not None
    start, end = whole
    assert end == jsonspan.value_end(buf, start)
    raw = memoryview(buf)[start:end]
    if buf[start : start + 1] == b"[":
        assert jsonspan.decoded_elements(buf, start, raw) == list(jsonspan.elements(buf, start))
    else:
        assert jsonspan.decoded_members(buf, start, raw) == list(jsonspan.members(buf, start))


def test_a_repeated_key_or_a_malformed_document_is_left_to_the_scanner() -> None:
    for text in (b'{"a": 1, "a": 2}', b'{"a": 1, "a": 1}', b'{"a": [1, 2}'):
        assert jsonspan.decoded_members(text, 0, text) is None
    assert jsonspan.decoded_members(b"{ }", 0, b"{ }") == []
    assert jsonspan.decoded_document(b'{"a": ') is None
