"""The tree a bench compares this one with (``--base``): a checkout directory, or a git
revision of this repository (``HEAD~1``, ``main``) exported to a temporary directory, so
an A/B needs no second worktree. Imports nothing of convodex."""

from __future__ import annotations

import atexit
import shutil
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def baseline(spec: str, parts: tuple[str, ...] = ("src",)) -> Path:
    """A directory whose ``src/convodex`` is the base's (run with ``PYTHONPATH=DIR/src``);
    ``parts``: the top-level folders of a revision exported (its ``bench`` too, to run its
    own scripts)."""
    given = Path(spec).expanduser()
    if given.is_dir():
        if not (given / "src" / "convodex").is_dir():
            raise SystemExit(f"error: --base {spec} is not a convodex checkout")
        return given.resolve()
    rev = subprocess.run(
        ["git", "-C", str(HERE), "rev-parse", "--verify", "--quiet", f"{spec}^{{commit}}"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    if not rev:
        raise SystemExit(f"error: --base {spec} is neither a checkout nor a git revision")
    out = Path(tempfile.mkdtemp(prefix=f"convodex-base-{rev[:10]}-"))
    atexit.register(shutil.rmtree, out, True)
    archive = subprocess.run(
        ["git", "-C", str(HERE), "archive", rev, *parts], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
    print(f"base: {spec} = {rev[:10]} (exported to {out})")
    return out
