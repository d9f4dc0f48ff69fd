-- Baseline schema of the conversation server on SQLite (SPEC S1, S2).
-- The journal tables are authoritative; search_rows and search_fts are a projection
-- that every journal mutation refreshes in its own transaction.

CREATE TABLE accounts (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    is_admin INTEGER NOT NULL DEFAULT 0,
    -- sha256 of the bearer token; the token itself is shown once and never stored
    token_hash TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL
);

CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    owner_id TEXT NOT NULL REFERENCES accounts(id),
    kind TEXT NOT NULL CHECK (kind IN ('personal', 'channel')),
    title TEXT NOT NULL DEFAULT '',
    -- microseconds since the Unix epoch, UTC
    created_at INTEGER NOT NULL,
    forked_from TEXT,
    -- a fork is searchable only once every entry has been copied
    fork_state TEXT NOT NULL DEFAULT 'complete' CHECK (fork_state IN ('copying', 'complete')),
    cleared_at INTEGER,
    -- the active branch is the chain from this entry to the root
    head_seq INTEGER
);
CREATE INDEX sessions_owner ON sessions (owner_id);

CREATE TABLE entries (
    -- global and never reused (AUTOINCREMENT): it breaks created_at ties in cursors
    row_id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON UPDATE CASCADE ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    parent_seq INTEGER,
    role TEXT NOT NULL,
    -- the original JSON text, byte for byte, and its sha256
    payload TEXT NOT NULL,
    payload_hash TEXT NOT NULL,
    meta INTEGER NOT NULL DEFAULT 0,
    discarded INTEGER NOT NULL DEFAULT 0,
    -- journal-maintained: this entry lies on the chain from head_seq to the root
    on_branch INTEGER NOT NULL DEFAULT 0,
    -- journal-maintained: the projection has seen this entry (a row or no row is
    -- deliberate); 0 marks entries written before or around the projection
    projected INTEGER NOT NULL DEFAULT 0,
    UNIQUE (session_id, seq)
);
-- newest-first candidates for raw JSON matching of shown roles
CREATE INDEX entries_shown_recent ON entries (created_at DESC, row_id DESC)
    WHERE role IN ('user', 'assistant') AND NOT meta AND NOT discarded;
-- the (normally empty) set of shown-role entries the projection never saw
CREATE INDEX entries_unprojected ON entries (created_at DESC, row_id DESC)
    WHERE NOT projected AND role IN ('user', 'assistant') AND NOT meta AND NOT discarded;

CREATE TABLE search_rows (
    row_id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    text TEXT NOT NULL,
    FOREIGN KEY (session_id, seq) REFERENCES entries (session_id, seq)
        ON UPDATE CASCADE ON DELETE CASCADE
);
CREATE UNIQUE INDEX search_rows_entry ON search_rows (session_id, seq);
CREATE INDEX search_rows_recent ON search_rows (created_at DESC, row_id DESC);

-- Trigram index over search_rows.text; case_sensitive 0 folds Unicode case.
CREATE VIRTUAL TABLE search_fts USING fts5 (
    text, content = 'search_rows', content_rowid = 'row_id',
    tokenize = 'trigram case_sensitive 0'
);
CREATE TRIGGER search_rows_ai AFTER INSERT ON search_rows BEGIN
    INSERT INTO search_fts (rowid, text) VALUES (new.row_id, new.text);
END;
CREATE TRIGGER search_rows_ad AFTER DELETE ON search_rows BEGIN
    INSERT INTO search_fts (search_fts, rowid, text) VALUES ('delete', old.row_id, old.text);
END;
CREATE TRIGGER search_rows_au AFTER UPDATE OF text ON search_rows BEGIN
    INSERT INTO search_fts (search_fts, rowid, text) VALUES ('delete', old.row_id, old.text);
    INSERT INTO search_fts (rowid, text) VALUES (new.row_id, new.text);
END;
