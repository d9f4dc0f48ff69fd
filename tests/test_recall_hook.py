"""``convodex recall`` driven exactly as Claude Code drives a hook (SPEC L18): a child
process, one JSON object on stdin, the documented ``hookSpecificOutput`` on stdout.

Whatever goes wrong (no catalog, a locked one, bad input, a stdin that never closes)
the agent must see nothing and status 0.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from convodex.catalog.service import HistoryService
from convodex.text import recall_block
from helpers import iso, write_claude_session

DAY = 86_400_000
NOW = 1_790_000_000_000
APP = "/home/dev/src/shop"
OTHER = "/home/dev/src/blog"
CURRENT = "0c0c0c0c-0000-4000-8000-00000000cafe"
PAST = "1a1a1a1a-0000-4000-8000-000000000001"


def history(root: Path) -> None:
    """A few past sessions: one holds the answer, the rest are other work."""
    write_claude_session(
        root,
        PAST,
        APP,
        [
            (
                "user",
                "the alembic migration fails: duplicate key value violates unique "
                "constraint ix_customers_email",
                NOW - 3 * DAY,
            ),
            (
                "assistant",
                "Deduplicate customers by email before the migration creates "
                "ix_customers_email; then build the index concurrently.",
                NOW - 3 * DAY + 60_000,
            ),
        ],
    )
    write_claude_session(
        root,
        "2b2b2b2b-0000-4000-8000-000000000002",
        OTHER,
        [
            ("user", "make the navbar sticky when the page scrolls", NOW - 5 * DAY),
            ("assistant", "position: sticky with top: 0 on the header.", NOW - 5 * DAY + 1),
        ],
    )
    write_claude_session(
        root,
        "3c3c3c3c-0000-4000-8000-000000000003",
        APP,
        [
            ("user", "bump the stripe sdk and rerun the checkout tests", NOW - 9 * DAY),
            ("assistant", "Bumped stripe to 11.2; checkout tests pass.", NOW - 9 * DAY + 1),
        ],
    )


def index(root: Path, cache: Path) -> None:
    with HistoryService.open(cache, [root.resolve()]) as service:
        service.index()


def environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("CONVODEX_", "XDG_CONFIG"))
    }
    env.update(
        {
            "CONVODEX_HOME": str(tmp_path / "home"),
            "CONVODEX_CACHE_HOME": str(tmp_path / "default-cache"),
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "HOME": str(tmp_path / "user-home"),
        }
    )
    env.update(extra)
    # A busy machine must not fail a test that is about what is recalled: a generous
    # limit here; the default one is what test_a_stdin_that_never_closes… is about.
    settings = tmp_path / "config" / "convodex" / "config.toml"
    if not settings.exists():
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text(f"[recall]\ntimeout_ms = {PATIENT_MS}\n", "utf-8")
    return env


PATIENT_MS = 10_000


def hook_input(prompt: str, **fields: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "session_id": CURRENT,
        "transcript_path": f"/home/dev/.claude/projects/-home-dev-src-shop/{CURRENT}.jsonl",
        "cwd": APP,
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    }
    data.update(fields)
    return data


def run_hook(
    tmp_path: Path, cache: Path, stdin: bytes | dict[str, Any], **env: str
) -> subprocess.CompletedProcess[bytes]:
    raw = stdin if isinstance(stdin, bytes) else json.dumps(stdin).encode("utf-8")
    return subprocess.run(
        [sys.executable, "-m", "convodex", "recall", "--cache-dir", str(cache)],
        input=raw,
        capture_output=True,
        env=environment(tmp_path, **env),
        timeout=60,
        check=False,
    )


def context_of(done: subprocess.CompletedProcess[bytes]) -> str:
    assert done.returncode == 0 and done.stderr == b""
    answer = json.loads(done.stdout)
    assert set(answer) == {"hookSpecificOutput"}
    output = answer["hookSpecificOutput"]
    assert output["hookEventName"] == "UserPromptSubmit"
    context = output["additionalContext"]
    assert isinstance(context, str)
    return context


def receipts(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "home" / "recall" / "receipts.jsonl"
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def test_a_related_prompt_recalls_the_past_answer_within_budget(
    root: Path, cache_dir: Path, tmp_path: Path
) -> None:
    history(root)
    index(root, cache_dir)
    prompt = "the migration broke again on ix_customers_email, duplicate key"
    context = context_of(run_hook(tmp_path, cache_dir, hook_input(prompt)))
    assert context.startswith(recall_block.OPEN + "\n")
    assert context.endswith(recall_block.CLOSE)
    assert len(context.encode("utf-8")) <= 2048
    assert f"[ref {PAST}#0]" in context
    assert "claude-code" in context and "Deduplicate customers" in context
    # Nothing unrelated rides along: only the session that holds the answer.
    assert "navbar" not in context and "stripe" not in context
    [receipt] = receipts(tmp_path)
    assert receipt["outcome"] == "injected" and receipt["refs"] == [f"{PAST}#0"]
    assert receipt["sessionId"] == CURRENT and receipt["bytes"] == len(context.encode())
    assert "ix_customers_email" not in json.dumps(receipt)  # never the prompt's text


def test_an_unrelated_prompt_injects_nothing(root: Path, cache_dir: Path, tmp_path: Path) -> None:
    history(root)
    index(root, cache_dir)
    for prompt in (
        "write a haiku about autumn leaves falling on a quiet lake",
        "please fix the test in this file and run it again",
        "ok thanks",
    ):
        done = run_hook(tmp_path, cache_dir, hook_input(prompt))
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert [r["outcome"] for r in receipts(tmp_path)] == ["nothing"] * 3


def test_the_current_session_is_never_recalled(root: Path, cache_dir: Path, tmp_path: Path) -> None:
    history(root)
    index(root, cache_dir)
    prompt = "the migration broke again on ix_customers_email, duplicate key"
    done = run_hook(tmp_path, cache_dir, hook_input(prompt, session_id=PAST))
    assert (done.returncode, done.stdout) == (0, b"")


def test_an_earlier_recall_block_is_never_recalled_nor_indexed_as_user_text(
    root: Path, cache_dir: Path, tmp_path: Path
) -> None:
    """The transcript holds recall's own earlier block: in the user's message (as some
    agents record hook context) and as Claude Code's hook attachment. Its words must
    be found nowhere, and the prompt that would match them recalls nothing."""
    block = recall_block.wrap(
        'Past moments …\n1. "zeppelin ballast calibration" (claude-code)\n'
        "   zeppelin ballast calibration torque tables [ref 9f9f9f9f#3]"
    )
    path = write_claude_session(
        root,
        "4d4d4d4d-0000-4000-8000-000000000004",
        APP,
        [
            ("user", f"{block}\nrename the invoice pdf generator", NOW - DAY),
            ("assistant", "Renamed it to InvoiceRenderer.", NOW - DAY + 1),
        ],
    )
    with open(path, "a", encoding="utf-8") as handle:
        attachment = {
            "type": "attachment",
            "uuid": "att-1",
            "parentUuid": "4d4d4d4d-0000-4000-8000-000000000004-1",
            "sessionId": "4d4d4d4d-0000-4000-8000-000000000004",
            "cwd": APP,
            "timestamp": iso(NOW - DAY + 2),
            "attachment": {
                "type": "hook_additional_context",
                "hookName": "UserPromptSubmit",
                "hookEvent": "UserPromptSubmit",
                "content": [block],
            },
        }
        handle.write(json.dumps(attachment) + "\n")
    index(root, cache_dir)
    with HistoryService.open(cache_dir, [root.resolve()]) as service:
        from convodex.catalog.plan import SearchRequest

        page = service.search(SearchRequest(query="zeppelin", kinds=["user_text"]))
        assert page.hits == []
        kept = service.search(SearchRequest(query="invoice pdf", kinds=["user_text"]))
        assert [hit.session_title for hit in kept.hits] == ["rename the invoice pdf generator"]
    done = run_hook(tmp_path, cache_dir, hook_input("zeppelin ballast calibration torque"))
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")


def test_a_missing_catalog_prints_nothing_and_creates_nothing(
    cache_dir: Path, tmp_path: Path
) -> None:
    done = run_hook(tmp_path, cache_dir, hook_input("the ix_customers_email migration again"))
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert not cache_dir.exists()


LOCKER = """
import sys
from convodex.sqlite import sqlite3
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA locking_mode = EXCLUSIVE")
db.execute("BEGIN EXCLUSIVE")
db.execute("UPDATE catalog_meta SET value = value WHERE key = 'revision'")
print("locked", flush=True)
sys.stdin.read()
db.execute("ROLLBACK")
"""


def test_a_catalog_locked_by_another_process_prints_nothing(
    root: Path, cache_dir: Path, tmp_path: Path
) -> None:
    history(root)
    index(root, cache_dir)
    from convodex import config

    locker = subprocess.Popen(
        [sys.executable, "-c", LOCKER, str(config.catalog_path(cache_dir))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert locker.stdout is not None and locker.stdout.readline() == b"locked\n"
        prompt = "the migration broke again on ix_customers_email, duplicate key"
        done = run_hook(tmp_path, cache_dir, hook_input(prompt))
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
        [receipt] = receipts(tmp_path)
        assert receipt["outcome"] in ("error", "timeout")
        assert receipt["millis"] < 10_000  # it gave up; it did not wait for the lock
    finally:
        assert locker.stdin is not None and locker.stdout is not None
        locker.stdin.close()
        locker.wait(30)
        locker.stdout.close()
    # Once the lock is gone the same prompt recalls again.
    assert PAST in context_of(run_hook(tmp_path, cache_dir, hook_input(prompt)))


def test_a_stdin_that_never_closes_ends_at_the_timeout(cache_dir: Path, tmp_path: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-m", "convodex", "recall", "--cache-dir", str(cache_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environment(tmp_path),
    )
    try:
        status = child.wait(60)  # stdin stays open: only the watchdog can end it
    finally:
        assert child.stdin is not None and child.stdout is not None and child.stderr is not None
        child.stdin.close()
        out, err = child.stdout.read(), child.stderr.read()
        child.stdout.close()
        child.stderr.close()
    assert (status, out, err) == (0, b"", b"")
    assert [r["outcome"] for r in receipts(tmp_path)] == ["timeout"]


@pytest.mark.parametrize(
    "raw",
    [b"", b"not json", b"[1, 2]", b'{"hook_event_name": 7}', b"\xff\xfe"],
)
def test_bad_hook_input_prints_nothing(
    raw: bytes, root: Path, cache_dir: Path, tmp_path: Path
) -> None:
    done = run_hook(tmp_path, cache_dir, raw)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")


def test_session_start_injects_nothing_without_a_prompt(
    root: Path, cache_dir: Path, tmp_path: Path
) -> None:
    history(root)
    index(root, cache_dir)
    start = hook_input("", hook_event_name="SessionStart", source="startup")
    del start["prompt"]
    done = run_hook(tmp_path, cache_dir, start)
    assert (done.returncode, done.stdout) == (0, b"")


PROMPT = "the migration broke again on ix_customers_email, duplicate key"


def test_switches_turn_recall_off(root: Path, cache_dir: Path, tmp_path: Path) -> None:
    history(root)
    index(root, cache_dir)
    assert PAST in context_of(run_hook(tmp_path, cache_dir, hook_input(PROMPT)))

    # One session: the environment the agent was started with.
    done = run_hook(tmp_path, cache_dir, hook_input(PROMPT), CONVODEX_RECALL="0")
    assert (done.returncode, done.stdout) == (0, b"")

    # One project: a .convodex.toml in the project or a directory above it.
    project = tmp_path / "work" / "shop"
    (project / "src").mkdir(parents=True)
    (tmp_path / "work" / ".convodex.toml").write_text("[recall]\nenabled = false\n", "utf-8")
    done = run_hook(tmp_path, cache_dir, hook_input(PROMPT, cwd=str(project / "src")))
    assert (done.returncode, done.stdout) == (0, b"")

    # Everywhere: config.toml.
    settings = tmp_path / "config" / "convodex" / "config.toml"
    settings.write_text(f"[recall]\nenabled = false\ntimeout_ms = {PATIENT_MS}\n", "utf-8")
    done = run_hook(tmp_path, cache_dir, hook_input(PROMPT))
    assert (done.returncode, done.stdout) == (0, b"")
    assert [r["outcome"] for r in receipts(tmp_path)][1:] == ["off", "off", "off"]


def test_max_bytes_bounds_the_block(root: Path, cache_dir: Path, tmp_path: Path) -> None:
    history(root)
    index(root, cache_dir)
    settings = tmp_path / "config" / "convodex" / "config.toml"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(f"[recall]\nmax_bytes = 400\ntimeout_ms = {PATIENT_MS}\n", "utf-8")
    context = context_of(run_hook(tmp_path, cache_dir, hook_input(PROMPT)))
    assert len(context.encode("utf-8")) <= 400 and f"[ref {PAST}#0]" in context

    settings.write_text(f"[recall]\nmax_bytes = 256\ntimeout_ms = {PATIENT_MS}\n", "utf-8")
    done = run_hook(tmp_path, cache_dir, hook_input(PROMPT))
    assert (done.returncode, done.stdout) == (0, b"")  # no item fits: nothing, not half


def test_secrets_in_recalled_moments_are_redacted(
    root: Path, cache_dir: Path, tmp_path: Path
) -> None:
    key = "sk-proj-" + "Q7w" * 12
    history(root)
    write_claude_session(
        root,
        "5e5e5e5e-0000-4000-8000-000000000005",
        APP,
        [
            ("user", "the billing webhook rejects our signature header", NOW - DAY),
            ("assistant", f"Set STRIPE_TOKEN={key} and the billing webhook verifies.", NOW),
        ],
    )
    index(root, cache_dir)
    context = context_of(run_hook(tmp_path, cache_dir, hook_input("billing webhook signature")))
    assert key not in context and "[redacted]" in context


def test_recall_log_lists_every_run_without_prompts(
    root: Path, cache_dir: Path, tmp_path: Path
) -> None:
    history(root)
    index(root, cache_dir)
    run_hook(tmp_path, cache_dir, hook_input(PROMPT))
    run_hook(tmp_path, cache_dir, hook_input("write a haiku about autumn leaves"))
    run_hook(tmp_path, cache_dir, hook_input(PROMPT), CONVODEX_RECALL="off")
    env = environment(tmp_path)
    listed = subprocess.run(
        [sys.executable, "-m", "convodex", "recall", "--log", "--json"],
        capture_output=True,
        env=env,
        timeout=60,
        check=True,
    )
    runs = json.loads(listed.stdout)
    assert [r["outcome"] for r in runs] == ["injected", "nothing", "off"]
    assert runs[0]["refs"] == [f"{PAST}#0"] and runs[0]["bytes"] > 0
    text = subprocess.run(
        [sys.executable, "-m", "convodex", "recall", "--log"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    ).stdout
    assert "1 of 3 runs injected context" in text and f"{PAST}#0" in text
    for shown in (listed.stdout.decode(), text):
        assert "haiku" not in shown and "ix_customers_email" not in shown


# The console script's entry point in a real process, saying on stderr at exit whether
# click was loaded.
CLICK_PROBE = (
    "import atexit, sys\n"
    "atexit.register(lambda: print('click loaded:', 'click' in sys.modules, file=sys.stderr))\n"
    "from convodex.__main__ import main\n"
    "sys.argv[0] = 'convodex'\n"
    "main()\n"
)


def test_the_hook_answers_before_click_loads_and_the_rest_is_the_clis(
    root: Path, cache_dir: Path, tmp_path: Path
) -> None:
    """The hook runs before every prompt: with no service it answers without importing
    click and the CLI (half of its time), with the same block and receipt; ``--log``
    and a bad option are still the click command's."""
    history(root)
    index(root, cache_dir)
    prompt = "the migration broke again on ix_customers_email, duplicate key"

    def probe(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, "-c", CLICK_PROBE, *args],
            input=stdin,
            capture_output=True,
            env=environment(tmp_path),
            timeout=60,
            check=False,
        )

    raw = json.dumps(hook_input(prompt)).encode()
    done = probe("recall", "--cache-dir", str(cache_dir), stdin=raw)
    assert done.returncode == 0 and done.stderr == b"click loaded: False\n"
    assert done.stdout == run_hook(tmp_path, cache_dir, raw).stdout
    assert f"[ref {PAST}#0]".encode() in done.stdout
    first, second = receipts(tmp_path)
    assert first["outcome"] == second["outcome"] == "injected"
    logged = probe("recall", "--log")
    assert logged.returncode == 0 and logged.stderr == b"click loaded: True\n"
    assert b"2 of 2 runs injected context" in logged.stdout
    wrong = probe("recall", "--agent", "nobody", stdin=raw)
    assert wrong.returncode == 2 and b"click loaded: True" in wrong.stderr
    assert b"nobody" in wrong.stderr


WRITER = """
import sys
from convodex.sqlite import sqlite3
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
db.execute("UPDATE catalog_meta SET value = value WHERE key = 'revision'")
print("writing", flush=True)
sys.stdin.read()
db.execute("ROLLBACK")
"""


def test_the_hook_recalls_while_another_process_writes_the_catalog(
    root: Path, cache_dir: Path, tmp_path: Path
) -> None:
    """Readers never wait for a writer (WAL): the hook answers beside an indexer's
    open write transaction, as a search does."""
    history(root)
    index(root, cache_dir)
    from convodex import config

    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(config.catalog_path(cache_dir))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline() == b"writing\n"
        prompt = "the migration broke again on ix_customers_email, duplicate key"
        assert PAST in context_of(run_hook(tmp_path, cache_dir, hook_input(prompt)))
    finally:
        assert writer.stdin is not None and writer.stdout is not None
        writer.stdin.close()
        writer.wait(30)
        writer.stdout.close()
