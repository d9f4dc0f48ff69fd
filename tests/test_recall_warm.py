"""The recall hook beside a running warm service (SPEC L18, L20): the hook's input is
on its own stdin and its watchdog ends its own process, so the service must not run
it; the hook answers in-process and the service lives on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from convodex.warm.server import WarmServer
from warm.conftest import convodex, history, runtime, warm  # noqa: F401  (fixtures)


def test_the_hook_runs_in_its_own_process_and_the_service_survives(
    warm: WarmServer,  # noqa: F811
    cache_dir: Path,
    tmp_path: Path,
) -> None:
    served = warm.served
    # A busy machine must not turn this into a timeout (that one has its own test).
    settings = Path(os.environ["HOME"]) / ".config" / "convodex" / "config.toml"
    settings.parent.mkdir(parents=True)
    settings.write_text("[recall]\ntimeout_ms = 10000\n", "utf-8")
    event = {
        "session_id": "current",
        "transcript_path": str(tmp_path / "current.jsonl"),
        "cwd": "/work/p1",
        "hook_event_name": "UserPromptSubmit",
        "prompt": "run the orders migration twice again",
    }
    done = subprocess.run(
        [sys.executable, "-m", "convodex", "recall", "--cache-dir", str(cache_dir)],
        input=json.dumps(event).encode(),
        capture_output=True,
        env=dict(os.environ),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0 and done.stderr == b""
    receipts = Path(os.environ["CONVODEX_HOME"]) / "recall" / "receipts.jsonl"
    [receipt] = [json.loads(line) for line in receipts.read_text("utf-8").splitlines()]
    assert receipt["outcome"] in ("injected", "nothing"), receipt
    assert receipt["sessionId"] == "current"
    # The service was asked, declined, and still answers the next short command.
    after = convodex("search", "migration", "--json", "--cache-dir", str(cache_dir))
    assert after.returncode == 0 and json.loads(after.stdout)["hits"]
    assert warm.served > served
