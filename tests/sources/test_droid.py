"""Factory Droid: session-store logs (a tree) and `droid exec` stream-json logs."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from convodex.sources.discover import FORMATS, detect
from convodex.sources.droid import FORMAT
from helpers import FIXTURES, as_json, hits, kinds, read_all, shown, source_row, write_jsonl

DROID = FIXTURES / "droid"


def message(mid: str, parent: str, role: str, content: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "type": "message",
        "id": mid,
        "parentId": parent,
        "timestamp": "2026-01-05T09:00:00.000Z",
        "message": {"role": role, "content": content},
    }


def store(folder: Path) -> Path:
    """A session whose second answer was retried: the older sibling is abandoned."""
    return write_jsonl(
        folder / "d5e0c1a2-0000-4000-8000-00000000beef.jsonl",
        [
            {
                "type": "session_start",
                "id": "d5e0c1a2-0000-4000-8000-00000000beef",
                "title": "Marmalade",
                "cwd": "/srv/jam",
                "version": "0.81.0",
            },
            message(
                "m1",
                "d5e0c1a2-0000-4000-8000-00000000beef",
                "user",
                [
                    {
                        "type": "text",
                        "text": "<system-reminder>\nreminderonlyword\n</system-reminder>"
                        "\n\nboil the marmalade",
                    }
                ],
            ),
            message("m2", "m1", "assistant", [{"type": "text", "text": "abandonedbranchword"}]),
            message(
                "m3",
                "m1",
                "assistant",
                [
                    {
                        "type": "tool_use",
                        "id": "tu1",
                        "name": "Execute",
                        "input": {"command": "thermometer --read"},
                    }
                ],
            ),
            message(
                "m4",
                "m3",
                "user",
                [
                    {
                        "type": "tool_result",
                        "tool_use_id": "tu1",
                        "content": "sensor offline",
                        "is_error": True,
                    }
                ],
            ),
            message("m5", "m4", "assistant", [{"type": "text", "text": "retriedbranchword"}]),
        ],
    )


def test_every_fixture_reads_and_loads_the_same() -> None:
    for path in sorted(DROID.glob("*.jsonl")):
        assert read_all(FORMAT, path), path.name
    small = read_all(FORMAT, DROID / "agent-sessions-session_store_small.jsonl")
    assert [d.kind for m in small for d in m.documents] == ["user_text", "tool_input", "tool_error"]
    drift = read_all(FORMAT, DROID / "agent-sessions-session_store_schema_drift.jsonl")
    assert shown(drift) == ["Do the thing", "Ok"]  # the leading system reminder is context
    stream = read_all(FORMAT, DROID / "agent-sessions-stream_json_schema_drift.jsonl")
    assert shown(stream)[0] == "List files"
    assert kinds(stream) == {"user_text", "assistant_text", "tool_input", "tool_error"}
    large = read_all(FORMAT, DROID / "agent-sessions-stream_json_large.jsonl")
    assert shown(large)[-1] == "Captured multiline output."  # the completion's final text
    assert [d.tool_name for m in large for d in m.documents if d.kind == "tool_output"] == ["Shell"]


def test_store_tree_keeps_the_branch_written_last(tmp_path: Path) -> None:
    path = store(tmp_path)
    messages = read_all(FORMAT, path)
    texts = " ".join(shown(messages))
    assert "abandonedbranchword" not in texts and "retriedbranchword" in texts
    assert "reminderonlyword" not in texts and "boil the marmalade" in texts
    (error,) = [d for m in messages for d in m.documents if d.kind == "tool_error"]
    assert error.tool_name == "Execute"
    info = FORMAT.info(path)
    assert (info.title, info.workspace_root, info.headless) == ("Marmalade", "/srv/jam", False)


def test_stream_json_runs_are_headless(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    logs = tmp_path / "ci-logs"
    logs.mkdir()
    for path in DROID.glob("agent-sessions-stream_json_*.jsonl"):
        shutil.copy(path, logs / path.name)
        assert detect(logs / path.name, 0, None) == "droid"  # by content, under any root
    info = FORMAT.info(logs / "agent-sessions-stream_json_small.jsonl")
    assert info.headless and info.subagent and info.session_id == "sid_stage0_small"
    cli("index", "--root", str(logs), "--json")
    assert hits(cli, "multiline") == []  # `droid exec` runs are left out by default
    found = hits(cli, "multiline", "--include-subagents")
    assert found and {h["sourceFormat"] for h in found} == {"droid"}


def test_default_root_search_and_sources(cli) -> None:  # type: ignore[no-untyped-def]
    sessions = Path.home() / ".factory" / "sessions"
    store(sessions / "-work-jam")
    (sessions / "-work-jam" / "d5e0c1a2-0000-4000-8000-00000000beef.settings.json").write_text("{}")
    cli("index", "--json")
    found = hits(cli, "retriedbranchword")
    assert [(h["sourceFormat"], h["sessionId"]) for h in found] == [
        ("droid", "d5e0c1a2-0000-4000-8000-00000000beef")
    ]
    assert hits(cli, "abandonedbranchword") == []
    assert hits(cli, "sensor offline", "--kind", "tool_error")
    assert source_row(cli, sessions)["formats"] == {"droid": 1}


def test_agent_name_and_resume_template() -> None:
    assert FORMATS["droid"] is FORMAT
    assert FORMAT.resume == "droid --resume {id}"


def test_stream_json_logs_saved_under_other_names(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """`droid exec --output-format stream-json > run.log` (or ``.ndjson``) is found by its
    first record; other ``.log`` files under the root are neither sources nor failures."""
    logs = tmp_path / "ci"
    logs.mkdir()
    stream = DROID / "agent-sessions-stream_json_large.jsonl"
    shutil.copy(stream, logs / "run.log")
    shutil.copy(stream, logs / "nightly.ndjson")
    (logs / "build.log").write_text("compiling multiline\nerror: multiline failed\n", "utf-8")
    (logs / "events.ndjson").write_text('{"level":"info","msg":"multiline"}\n', "utf-8")
    (logs / "core.log").write_bytes(b"\x00\xff" * (1 << 20))  # a big binary log: one bounded read
    assert detect(logs / "run.log", 0, None) == "droid"
    assert detect(logs / "build.log", 0, None) is None
    out = as_json(cli("index", "--root", str(logs), "--json"))
    assert (out["stats"]["sources"], out["stats"]["failed"]) == (2, 0)
    found = hits(cli, "multiline", "--include-subagents")
    assert {Path(h["sessionPath"]).name for h in found} == {"run.log", "nightly.ndjson"}


def test_a_declared_droid_root_takes_stream_json_logs_by_content(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """`--root DIR:droid` finds `droid exec` stream-json saved as `.log`/`.ndjson` by the
    same bounded sniff as an undeclared root, and leaves other logs alone."""
    logs = tmp_path / "ci"
    logs.mkdir()
    stream = DROID / "agent-sessions-stream_json_large.jsonl"
    shutil.copy(stream, logs / "run.log")
    shutil.copy(stream, logs / "nightly.ndjson")
    (logs / "build.log").write_text("compiling multiline\nerror: multiline failed\n", "utf-8")
    (logs / "events.ndjson").write_text('{"level":"info","msg":"multiline"}\n', "utf-8")
    (logs / "core.log").write_bytes(b"\x00\xff" * (1 << 20))
    assert detect(logs / "run.log", 0, "droid") == "droid"
    assert detect(logs / "build.log", 0, "droid") is None
    out = as_json(cli("index", "--root", f"{logs}:droid", "--json"))
    assert (out["stats"]["sources"], out["stats"]["failed"]) == (2, 0)
    found = hits(cli, "multiline", "--include-subagents")
    assert {Path(h["sessionPath"]).name for h in found} == {"run.log", "nightly.ndjson"}
