-- Baseline schema of the conversation server on PostgreSQL (SPEC S1, S2).
-- The journal tables are authoritative; search_rows is a projection that every
-- journal mutation refreshes in its own transaction.

CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE accounts (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    is_admin BOOLEAN NOT NULL DEFAULT FALSE,
    -- sha256 of the bearer token; the token itself is shown once and never stored
    token_hash TEXT NOT NULL UNIQUE,
    created_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    owner_id TEXT NOT NULL REFERENCES accounts(id),
    kind TEXT NOT NULL CHECK (kind IN ('personal', 'channel')),
    title TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL,
    forked_from TEXT,
    -- a fork is searchable only once every entry has been copied
    fork_state TEXT NOT NULL DEFAULT 'complete' CHECK (fork_state IN ('copying', 'complete')),
    cleared_at TIMESTAMPTZ,
    -- the active branch is the chain from this entry to the root
    head_seq BIGINT
);
CREATE INDEX sessions_owner ON sessions (owner_id);

CREATE TABLE entries (
    -- global and never reused: it breaks created_at ties in cursors
    row_id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON UPDATE CASCADE ON DELETE CASCADE,
    seq BIGINT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    parent_seq BIGINT,
    role TEXT NOT NULL,
    -- the original JSON text, byte for byte, and its sha256
    payload TEXT NOT NULL,
    payload_hash TEXT NOT NULL,
    meta BOOLEAN NOT NULL DEFAULT FALSE,
    discarded BOOLEAN NOT NULL DEFAULT FALSE,
    -- journal-maintained: this entry lies on the chain from head_seq to the root
    on_branch BOOLEAN NOT NULL DEFAULT FALSE,
    -- journal-maintained: the projection has seen this entry (a row or no row is
    -- deliberate); FALSE marks entries written before or around the projection
    projected BOOLEAN NOT NULL DEFAULT FALSE,
    UNIQUE (session_id, seq)
);
-- newest-first candidates for raw JSON matching of shown roles
CREATE INDEX entries_shown_recent ON entries (created_at DESC, row_id DESC)
    WHERE role IN ('user', 'assistant') AND NOT meta AND NOT discarded;
-- the (normally empty) set of shown-role entries the projection never saw
CREATE INDEX entries_unprojected ON entries (created_at DESC, row_id DESC)
    WHERE NOT projected AND role IN ('user', 'assistant') AND NOT meta AND NOT discarded;

CREATE TABLE search_rows (
    row_id BIGINT PRIMARY KEY,
    session_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    text TEXT NOT NULL,
    FOREIGN KEY (session_id, seq) REFERENCES entries (session_id, seq)
        ON UPDATE CASCADE ON DELETE CASCADE
);
CREATE UNIQUE INDEX search_rows_entry ON search_rows (session_id, seq);
CREATE INDEX search_rows_recent ON search_rows (created_at DESC, row_id DESC);
CREATE INDEX search_rows_text_trgm ON search_rows USING gin (text gin_trgm_ops);
