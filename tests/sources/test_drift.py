"""Format drift: a file a reader claims but finds no message in is counted per format
by ``doctor``, so the next unknown shape shows there and not as a missing hit."""

from __future__ import annotations

import shutil
from pathlib import Path

from helpers import FIXTURES, CliRun, as_json

KIRO = FIXTURES / "kiro" / "irrlicht" / "2-2_auto-executed-tool-call" / "transcript.jsonl"


def test_doctor_counts_claimed_sources_with_no_messages(tmp_path: Path, cli: CliRun) -> None:
    root = tmp_path / "cli"
    root.mkdir()
    shutil.copy(KIRO, root / "known.jsonl")
    # A later version's records, none of a kind the reader knows: read, no message.
    (root / "future.jsonl").write_text(
        '{"version":"v2","kind":"Thought","data":{"text":"kinds to come"}}\n', "utf-8"
    )
    (root / "empty.jsonl").write_bytes(b"")  # an empty file is not drift
    out = as_json(cli("index", "--root", f"{root}:kiro", "--json"))
    assert out["stats"]["failed"] == 0
    report = as_json(cli("doctor", "catalogs", "--json"))["catalogs"][0]
    assert report["emptyByFormat"] == {"kiro": 1}
    text = cli("doctor", "catalogs").stdout
    assert "no messages found: 1 kiro source(s)" in text
    assert "kinds to come" not in text  # names and counts only, never content
