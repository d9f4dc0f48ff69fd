"""Property tests: whatever bytes a session log holds, the reader fails only as documented.

Malformed, mistyped, deeply nested, binary or truncated lines are counted per
source; the only exceptions that may leave a read are ``SourceError`` (of which
``SessionReplayLimitError`` is one). The indexer's reader never raises at all.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convodex.catalog.batches import PendingSource, SourceReader
from convodex.errors import SourceError
from convodex.sources.base import Budget, ReadResult
from convodex.sources.session_log import FORMAT, NAME

SETTINGS = settings(
    max_examples=150,
    deadline=None,
    # The autouse fixture only points HOME dirs at tmp paths; sharing it is harmless.
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.text(max_size=30),
)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(
            st.sampled_from(["text", "type", "id", "name", "arguments", "function", "x"]),
            children,
            max_size=4,
        ),
    ),
    max_leaves=12,
)
roles = st.one_of(
    st.sampled_from(["user", "assistant", "tool", "system", "developer", "weird"]), json_values
)
records = st.fixed_dictionaries(
    {},
    optional={
        "role": roles,
        "content": json_values,
        "tool_calls": st.one_of(
            json_values,
            st.lists(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "id": json_values,
                        "name": json_values,
                        "arguments": json_values,
                        "function": json_values,
                    },
                ),
                max_size=3,
            ),
        ),
        "tool_call_id": json_values,
        "name": json_values,
        "createdAt": json_values,
        "meta": json_values,
        "isMeta": json_values,
        "origin": json_values,
        "is_error": json_values,
    },
)


def encoded_record(record: dict[str, Any]) -> bytes:
    return json.dumps(record, ensure_ascii=False).encode("utf-8", "surrogatepass")


lines = st.one_of(
    records.map(encoded_record),
    records.map(encoded_record).flatmap(
        lambda raw: st.integers(0, max(0, len(raw) - 1)).map(lambda n: raw[:n])
    ),
    st.binary(max_size=200),
    st.text(max_size=80).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.integers(1, 12_000).map(lambda n: b'{"role":"user","content":' + b"[" * n + b"]" * n + b"}"),
    st.integers(1, 12_000).map(lambda n: b'{"role":"user","x":' + b"{" * n),
    st.just(b'{"role":"user","content":"caf\xc3\x28 \xff"}'),
)


def write_lines(folder: str, parts: list[bytes], trailing_newline: bool) -> Path:
    path = Path(folder) / "prop.jsonl"
    body = b"\n".join(p.replace(b"\n", b" ") for p in parts)
    path.write_bytes(body + (b"\n" if trailing_newline and parts else b""))
    return path


@SETTINGS
@given(
    parts=st.lists(lines, max_size=8),
    trailing_newline=st.booleans(),
    record_limit=st.integers(16, 4096),
    start=st.integers(0, 400),
)
def test_reader_raises_only_documented_source_errors(
    parts: list[bytes], trailing_newline: bool, record_limit: int, start: int
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = write_lines(folder, parts, trailing_newline)
        size = path.stat().st_size
        budget = Budget(1 << 20, record_limit, 1 << 20, 1 << 20)
        # Any start offset, even mid-line, as a stale checkpoint might give.
        result = ReadResult(min(start, size), 0)
        messages = []
        try:
            for message in FORMAT.read(path, result, budget):
                messages.append(message)
        except SourceError:
            pass
        assert result.end_offset <= size
        assert [m.index for m in messages] == list(range(len(messages)))
        raw = path.read_bytes()
        for message in messages:
            assert message.offset + message.length <= size
            end = message.offset + message.length
            assert end == size or raw[end - 1 : end] == b"\n"  # spans end on a line end
            loaded = FORMAT.load(path, message.offset, message.length, message.index)
            assert loaded is None or loaded.index == message.index


@SETTINGS
@given(parts=st.lists(lines, max_size=8), trailing_newline=st.booleans())
def test_indexer_reader_never_raises(parts: list[bytes], trailing_newline: bool) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = write_lines(folder, parts, trailing_newline)
        reader = SourceReader(Budget(1 << 20, 2048, 4096, 1 << 20))
        batches = list(reader.batches(PendingSource(1, str(path), NAME, 0, 0, None, None)))
        assert batches
        last = batches[-1]
        if last.failure is not None:
            assert last.failure[0] == "failed"
            assert last.failure[1] == "SessionReplayLimitError"
        else:
            assert last.checkpoint is not None
