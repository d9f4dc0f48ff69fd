"""Roo Code's own task files: ``history_item.json`` beside a task's conversation gives
its title, time and workspace, and tells Roo Code's tasks from Cline's anywhere."""

from __future__ import annotations

from pathlib import Path

from helpers import FIXTURES, CliRun, hits
from sources.agents import Agent, Placed, check_any_root, check_default_root

TASK = "1767225700000"
AGENT = Agent(
    name="roo_code",
    root=".config/Code/User/globalStorage/rooveterinaryinc.roo-cline",
    placed=[Placed(FIXTURES / "roo-code" / "deja-vu" / "tasks" / TASK, f"tasks/{TASK}")],
    said=[("user_text", "flaky"), ("assistant_text", "stale")],
    resume=None,
    session=TASK,
)


def test_found_under_the_default_root(cli: CliRun) -> None:
    check_default_root(AGENT, cli)
    (found,) = hits(cli, "stale")
    assert found["sessionTitle"] == "Fix the flaky test"
    assert found["project"] == "/home/example/work/demo"


def test_found_under_any_root(tmp_path: Path, cli: CliRun) -> None:
    check_any_root(AGENT, tmp_path, cli)
