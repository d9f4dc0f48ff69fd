"""Name what failed (SPEC L17): ``index`` and ``doctor`` name each failed source (its
path with ``~``, a reason, one line each; ``doctor --failed``), an unchanged re-index
says nothing changed, and the totals of ``index``, ``doctor`` and ``sources`` agree.
Through the real CLI on real files: a FIFO, a link out of the root, a file that is
not JSON at all."""

from __future__ import annotations

import os
from pathlib import Path

from helpers import CliRun, as_json, write_session
from local_faults import released_fifo


def history(tmp_path: Path) -> Path:
    """A root under the home directory: two good sessions and three that fail."""
    root = Path.home() / "sessions"
    write_session(root, "good1", [{"role": "user", "content": "walrus one"}])
    write_session(root, "good2", [{"role": "user", "content": "walrus two"}])
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text('{"role": "user", "content": "secret"}\n', "utf-8")
    os.symlink(outside, root / "linked.jsonl")
    return root


def test_index_and_doctor_name_each_failed_source(tmp_path: Path, cli: CliRun) -> None:
    root = history(tmp_path)
    with released_fifo(root / "pipe.jsonl"):
        out = cli("index", "--root", str(root))
        assert out.exit_code == 0, out.output
        lines = out.stdout.splitlines()
        failed = [line for line in lines if line.startswith("  failed: ")]
        assert sorted(failed) == [
            "  failed: ~/sessions/linked.jsonl: a link out of its root "
            "(--follow-symlinks reads it)",
            "  failed: ~/sessions/pipe.jsonl: not a regular file (a FIFO, a device or a directory)",
        ]
        assert "2 failed" in lines[0] and "4 sources" in lines[0]

        again = cli("index", "--root", str(root))
        assert again.exit_code == 0, again.output
        first = again.stdout.splitlines()[0]
        assert first.startswith("nothing changed:") and "indexed 0" not in first
        assert "4 sources" in first and "2 failed" in first
        assert len([ln for ln in again.stdout.splitlines() if ln.startswith("  failed: ")]) == 2

        doctor = cli("doctor", "--failed")
        assert doctor.exit_code == 0, doctor.output
        assert sorted(doctor.stdout.splitlines()) == sorted(f.strip() for f in failed)

        report = as_json(cli("doctor", "catalogs", "--json"))["catalogs"][0]
        assert report["sources"].get("failed") == 2
        assert sorted(report["errorClasses"]) == ["NotARegularFile", "SymlinkOutsideRoot"]
        assert [f["path"] for f in report["failed"]] == sorted(
            str(root / n) for n in ("linked.jsonl", "pipe.jsonl")
        )
        listed = as_json(cli("sources", "--root", str(root), "--json", cache=False))
        assert listed["roots"][0]["sources"] == 4


def test_line_errors_in_a_healthy_source_are_not_failures(root: Path, cli: CliRun) -> None:
    path = write_session(root, "mixed", [{"role": "user", "content": "walrus mixed"}])
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("this line is not json\n")
    cli("index", "--root", str(root))
    report = as_json(cli("doctor", "catalogs", "--json"))["catalogs"][0]
    assert report["errorClasses"] == {} and report["failed"] == []
    assert report["lineErrors"] == 1
    assert cli("doctor", "--failed").stdout == "no failed sources\n"
