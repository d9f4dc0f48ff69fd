"""Every source format by its name (the agent name filters use), loaded on first use.

Search reads only the formats of its hits; detection in ``discover`` needs them all.
Keeping the table here lets a search, and the CLI start-up, import only what it
reads instead of every reader.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import os

    from convodex.sources.base import FileStat, SourceFormat

# format name -> the module that defines it (as NAME/FORMAT, or in its FORMATS table).
MODULES = {
    "session_log": "session_log",
    "dag": "dag",
    "claude_code": "claude_code",
    "codex": "codex",
    "gemini": "gemini",
    "chat_export": "chat_export",
    "qwen": "qwen",
    "copilot_cli": "copilot_cli",
    "copilot_vscode": "copilot_vscode",
    "droid": "droid",
    "pi": "pi",
    "cline": "cline",
    "roo_code": "cline",
    "kilo_code": "cline",
    "opencode": "opencode",
    "cursor": "cursor",
    "cursor_ide": "cursor_ide",
    "aider": "aider",
    "trae": "forks",
    "iflow": "forks",
    "openclaw": "forks",
    "mistral_vibe": "vibe",
    "grok": "grok",
    "amp": "amp",
    "kimi": "kimi",
    "antigravity": "antigravity",
    "kiro": "kiro",
    "kiro_ide": "kiro",
    "hermes": "hermes",
    "goose": "goose",
    "zed": "zed",
}


class _Formats(Mapping[str, "SourceFormat"]):
    """A read-only mapping whose values are imported when first asked for."""

    def __init__(self) -> None:
        self._loaded: dict[str, SourceFormat] = {}

    def __getitem__(self, name: str) -> SourceFormat:
        fmt = self._loaded.get(name)
        if fmt is None:
            fmt = self._loaded[name] = _defined(name)
        return fmt

    def __iter__(self) -> Iterator[str]:
        return iter(MODULES)

    def __len__(self) -> int:
        return len(MODULES)

    def __contains__(self, name: object) -> bool:
        return name in MODULES


def _defined(name: str) -> SourceFormat:
    """The format ``name`` as its module defines it: in the module's ``FORMATS`` table
    (a module of several formats), else as its ``FORMAT``; anything but a
    ``SourceFormat`` of that name is a reader's mistake, named at once."""
    from convodex.sources.base import SourceFormat

    module = vars(importlib.import_module(f"convodex.sources.{MODULES[name]}"))
    table = module.get("FORMATS")
    fmt = table.get(name) if isinstance(table, dict) and name in table else module.get("FORMAT")
    if not isinstance(fmt, SourceFormat) or fmt.name != name:
        raise TypeError(f"convodex.sources.{MODULES[name]} defines no SourceFormat {name!r}")
    return fmt


FORMATS: Mapping[str, SourceFormat] = _Formats()

# Formats whose fingerprint is more than their file's stat (a database and its -wal,
# a session and its message files): their ``stat`` is their own. Every other source is
# fingerprinted without importing its reader (``fingerprint``); a test holds this set
# to the formats that override ``SourceFormat.stat``.
OWN_STAT = frozenset({"aider", "opencode", "cursor", "cursor_ide", "hermes", "goose", "zed"})


def fingerprint(fmt: str, path: str | os.PathLike[str]) -> FileStat:
    """``source_stat``, importing the format's reader only when its stat is its own:
    the freshness check stats every known source before a search."""
    if fmt in OWN_STAT:
        return source_stat(fmt, path)
    from convodex.sources.base import FileStat

    return FileStat.of(path)


def source_stat(fmt: str, path: str | os.PathLike[str]) -> FileStat:
    """A source's fingerprint (its format's ``stat`` hook, else its file's stat): what
    scans compare with the stored checkpoint, and search with the indexed one."""
    from pathlib import Path

    return FORMATS[fmt].stat(Path(path))
