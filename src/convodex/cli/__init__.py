"""The ``convodex`` command: click groups, one module per command group; thin."""

from convodex.cli.main import main

__all__ = ["main"]
