"""Wiring convodex into agents (SPEC L18): one module per agent says where its config
files are, what convodex adds to them and which hook contract it follows; ``engine``
edits them round-trip (``jsonc`` for JSON and JSON with comments, tomlkit for TOML),
atomically, idempotently, with a backup (``files``)."""
