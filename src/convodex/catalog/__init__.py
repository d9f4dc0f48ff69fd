"""The local SQLite FTS5 projection of session transcripts: disposable, tokens only."""
