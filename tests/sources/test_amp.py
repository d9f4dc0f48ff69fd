"""Amp threads: found under the default root and, by their keys, under any root; calls
and results paired by id, thinking never indexed, one broken thread failing alone."""

from __future__ import annotations

from pathlib import Path

from convodex.sources.registry import FORMATS
from helpers import FIXTURES, CliRun, as_json, hits, read_all
from sources.agents import Agent, Placed, check_any_root, check_default_root

AMP = FIXTURES / "amp"
THREAD = "T-019c2505-6bed-73de-8e27-51899656b47b"
REAL = AMP / "idea-de-espend-ml-llm" / f"{THREAD}.json"
PARALLEL = AMP / "idea-de-espend-ml-llm" / "T-array-format-test.json"
TITLED = AMP / "cli-continues" / "threads" / "test-thread-1.json"

AGENT = Agent(
    name="amp",
    root=".local/share/amp/threads",
    placed=[
        Placed(REAL, f"{THREAD}.json"),
        Placed(PARALLEL, "T-array-format-test.json"),
        Placed(TITLED, "test-thread-1.json"),
    ],
    said=[
        ("user_text", "Tailwind"),
        ("assistant_text", "template"),
        ("tool_input", "twig"),
        ("tool_output", "DOCTYPE"),
    ],
    resume=f"amp threads continue {THREAD}",
    session=THREAD,
)


def test_found_under_the_default_root(cli: CliRun) -> None:
    check_default_root(AGENT, cli)


def test_found_under_any_root(tmp_path: Path, cli: CliRun) -> None:
    check_any_root(AGENT, tmp_path, cli)


def test_messages_in_order_with_roles_times_and_tools() -> None:
    messages = read_all(FORMATS["amp"], REAL)
    assert [m.role for m in messages] == ["user", "assistant", "tool"]
    assert messages[0].text() == "Can we add a dark / light theme switch using Tailwind CSS?"
    assert messages[0].created_at == 1770147672372  # meta.sentAt
    assert messages[1].created_at == 1770147679913  # usage.timestamp
    answer = messages[1]
    assert "dark/light theme switch" not in answer.text()  # thinking is not a document
    assert [(d.kind, d.tool_name) for d in answer.documents] == [
        ("assistant_text", None),
        ("tool_input", "Read"),
    ]
    (result,) = messages[2].documents
    assert (result.kind, result.tool_name) == ("tool_output", "Read")
    assert "<!DOCTYPE html>" in result.text


def test_parallel_calls_answered_in_one_message() -> None:
    messages = read_all(FORMATS["amp"], PARALLEL)
    results = [(d.tool_name, d.text) for d in messages[2].documents]
    assert [name for name, _ in results] == ["Read", "glob"]
    assert "src/util.kt" in results[1][1]  # a list result
    (diff,) = messages[4].documents
    assert "Hello World" in diff.text  # a result with no text field: its JSON


def test_thread_facts() -> None:
    info = FORMATS["amp"].info(REAL)
    assert (info.session_id, info.workspace_root, info.created_at) == (
        THREAD,
        "/home/user/project",
        1770147638256,
    )
    titled = FORMATS["amp"].info(TITLED)
    assert (titled.session_id, titled.title) == ("test-thread-1", "Create a login form component")


def test_a_broken_thread_fails_alone(tmp_path: Path, cli: CliRun) -> None:
    root = tmp_path / "threads"
    root.mkdir()
    (root / f"{THREAD}.json").write_bytes(REAL.read_bytes())
    (root / "T-broken.json").write_bytes(REAL.read_bytes()[:300])
    out = as_json(cli("index", "--root", f"{root}:amp", "--json"))
    assert out["stats"]["indexed"] == 2
    assert hits(cli, "Tailwind")
    assert out["stats"]["lineErrors"] == 1  # counted, not fatal
