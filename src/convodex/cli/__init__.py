"""The ``convodex`` command: click groups, one module per command group; thin.

The group is ``convodex.cli.main.main``; this package imports nothing itself, so a
no-op ``index`` (``noop_index``) answers from here without click."""
