"""Issue 12, item 10: a lone surrogate escape does not cost its message.

``"\\ud800"`` is valid JSON (any encoder that writes Python strings as ASCII produces
it), but not a character: the decoder refused the whole line, so it counted as
malformed and its message was never indexed. It is indexed with U+FFFD in its place.
"""

from __future__ import annotations

from pathlib import Path

from helpers import write_claude_session
from local_faults import convodex, ok_json, source_states


def test_lone_surrogates_are_replaced_not_dropped(tmp_path: Path, root: Path) -> None:
    cache = tmp_path / "cache"
    (root / "native.jsonl").write_text(
        '{"role":"user","content":"walrus \\ud800 native"}\n'
        '{"role":"assistant","content":"pair \\ud83d\\ude00 and low \\udc00 alone, '
        'escaped \\\\ud800 literal"}\n',
        "utf-8",
    )
    claude = tmp_path / "claude"
    path = write_claude_session(claude, "c1", "/w", [("user", "walrus XSURROGATEX claude", 1)])
    path.write_text(path.read_text("utf-8").replace("XSURROGATEX", "\\udfff"), "utf-8")
    roots = ("--root", str(root), "--root", f"{claude}:claude-code", "--cache-dir", str(cache))

    report = ok_json(convodex("index", "--json", *roots))
    assert report["stats"]["lineErrors"] == 0
    found = ok_json(convodex("search", "walrus", "--json", *roots))
    snippets = sorted(h["snippet"] for h in found["hits"])
    assert snippets == ["walrus \ufffd claude", "walrus \ufffd native"]
    states = source_states(cache)
    assert states["native.jsonl"] == ("ok", None) and states["c1.jsonl"] == ("ok", None)

    paired = ok_json(convodex("search", "literal", "--json", *roots))["hits"]
    assert [h["snippet"] for h in paired] == [
        "pair \U0001f600 and low \ufffd alone, escaped \\ud800 literal"
    ]
