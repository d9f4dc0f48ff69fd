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
