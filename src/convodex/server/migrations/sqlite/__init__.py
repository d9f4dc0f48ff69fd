"""SQLite migrations (embedded default)."""
