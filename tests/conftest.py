"""Shared fixtures: real session files in tmp roots, a real catalog, the real CLI."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from convodex.catalog.db import Catalog, open_catalog
from helpers import CliRun

pytest_plugins = ["skips", "pytester"]


def pytest_configure(config: pytest.Config) -> None:
    """Embeddings off and the model's cache in a temporary folder for the whole run,
    before any fixture: fixtures of a module or session scope (a generated corpus
    indexed once) run before the autouse one below, and must not embed, nor use the
    developer's own cache."""
    os.environ["CONVODEX_SEMANTIC"] = "off"
    os.environ["CONVODEX_MODEL_CACHE"] = tempfile.mkdtemp(prefix="convodex-models-")


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(os.environ.get("CONVODEX_MODEL_CACHE", ""), ignore_errors=True)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "sessions"
    path.mkdir()
    return path


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    return tmp_path / "cache"


@pytest.fixture
def catalog(cache_dir: Path) -> Iterator[Catalog]:
    with open_catalog(cache_dir) as cat:
        yield cat


@pytest.fixture(scope="session")
def model_cache() -> Path:
    """Where the semantic model's distilled table is kept: once for the whole run (its
    distillation is the slow part, and the same for every test)."""
    return Path(os.environ["CONVODEX_MODEL_CACHE"])


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_cache: Path) -> None:
    """Never touch the developer's real data or cache dirs."""
    monkeypatch.setenv("CONVODEX_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CONVODEX_MODEL_CACHE", str(model_cache))
    # Embeddings are pinned like the accelerators: off unless a test turns them on
    # (``tests/catalog/test_hybrid.py``), so every other test sees lexical search.
    monkeypatch.setenv("CONVODEX_SEMANTIC", "off")
    monkeypatch.setenv("CONVODEX_CACHE_HOME", str(tmp_path / "default-cache"))
    # Other agents' default roots hang off the home directory.
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    # Services of the warm path listen here: none of the developer's is ever asked.
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    for name in (
        "CLAUDE_CONFIG_DIR",
        "CODEX_HOME",
        "QWEN_HOME",
        "PI_CODING_AGENT_DIR",
        # OpenCode's data, VS Code-family user folders (the Cursor editor's among them)
        # and convodex's config.toml follow XDG (APPDATA on Windows).
        "XDG_DATA_HOME",
        "XDG_CONFIG_HOME",
        "APPDATA",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(params=["off", "on"])
def accelerators(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Run a behaviour test twice: with no accelerator (the core alone) and with every
    one at work however small the test's history (``Accelerators.eager``: the helper
    process on every index run, a band for every frequent word, searches split); the
    answers must be the same. Services and the CLI read the environment; direct
    searches and index runs use ``helpers.speed``."""
    import helpers
    from convodex.catalog.speed.settings import EAGER, Accelerators
    from convodex.catalog.speed.wing import Wing

    on = request.param == "on"
    monkeypatch.setenv("CONVODEX_ACCELERATORS", EAGER if on else "off")
    wing = Wing(Accelerators.eager() if on else Accelerators())
    helpers.SPEED.append(wing)
    try:
        yield request.param
    finally:
        helpers.SPEED.remove(wing)
        wing.close()


@pytest.fixture
def cli(cache_dir: Path) -> CliRun:
    """Run the real CLI with this test's cache dir; returns click's Result."""
    from convodex.cli.main import main

    def run(*args: str, cache: bool = True) -> Result:
        argv = list(args)
        if cache:
            argv += ["--cache-dir", str(cache_dir)]
        return CliRunner().invoke(main, argv, catch_exceptions=False)

    return run
