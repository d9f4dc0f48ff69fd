"""The recall hook beside a running warm service (SPEC L18, L20, issue 26): the thin
client reads the hook's stdin and the service answers it, with the very output the
hook gives in-process; a service that is gone leaves the hook to answer in-process."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from convodex.warm.server import WarmServer
from warm.conftest import convodex, history, runtime, warm  # noqa: F401  (fixtures)

EVENT = {
    "session_id": "current",
    "transcript_path": "/tmp/current.jsonl",
    "cwd": "/work/p1",
    "hook_event_name": "UserPromptSubmit",
    "prompt": "how did we run the migration of orders twice",
}


def hook(cache_dir: Path, **env: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "convodex", "recall", "--cache-dir", str(cache_dir)],
        input=json.dumps(EVENT).encode(),
        capture_output=True,
        env={**os.environ, **env},
        timeout=120,
        check=False,
    )


def patient() -> None:
    """A busy machine must not turn these into timeouts (that one has its own test)."""
    settings = Path(os.environ["HOME"]) / ".config" / "convodex" / "config.toml"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text("[recall]\ntimeout_ms = 10000\n", "utf-8")


def receipts() -> list[dict[str, object]]:
    path = Path(os.environ["CONVODEX_HOME"]) / "recall" / "receipts.jsonl"
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def test_the_service_answers_the_hook_as_the_hook_does_in_process(
    warm: WarmServer,  # noqa: F811
    cache_dir: Path,
) -> None:
    patient()
    served = warm.served
    answered = hook(cache_dir)
    assert answered.returncode == 0 and answered.stderr == b""
    assert warm.served == served + 1  # the service answered it
    warm.close()
    alone = hook(cache_dir)  # no service: the hook runs in its own process
    assert alone.returncode == 0 and alone.stderr == b""
    assert alone.stdout == answered.stdout
    first, second = receipts()
    assert first["outcome"] == second["outcome"] and first.get("refs") == second.get("refs")
    assert all(r["sessionId"] == "current" for r in receipts())


def test_a_service_of_another_environment_leaves_the_hook_in_process(
    warm: WarmServer,  # noqa: F811
    cache_dir: Path,
) -> None:
    patient()
    served = warm.served
    off = hook(cache_dir, CONVODEX_RECALL="0")  # the client's switch, not the service's
    assert off.returncode == 0 and off.stdout == b"" and off.stderr == b""
    assert warm.served == served
    assert [r["outcome"] for r in receipts()] == ["off"]


def test_a_killed_service_falls_back_silently(
    warm: WarmServer,  # noqa: F811
    cache_dir: Path,
) -> None:
    """A SIGKILLed service leaves its socket file with nobody listening on it."""
    patient()
    path = warm.path
    warm.close()
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(path)
    os.chmod(path, 0o600)
    stale.close()  # the file stays, as a killed process leaves it
    assert os.path.exists(path)
    done = hook(cache_dir)
    assert done.returncode == 0 and done.stderr == b""
    assert [r["sessionId"] for r in receipts()] == ["current"]  # answered in-process
