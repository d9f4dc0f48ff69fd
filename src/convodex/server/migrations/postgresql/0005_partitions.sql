-- Declarative partitioning of the journal and its projection (SPEC S6): entries (which
-- hold the projected text and ranked tokens, so both move together) become a table
-- partitioned by HASH (session_id) into 16 partitions.
--
-- Why by session and not by owner or team: every unique key of a partitioned table
-- must contain its partition key, and (session_id, seq) must stay unique across the
-- instance (concurrent appends rely on it); an owner or team key would have to be
-- part of it, and channel entries have no owner. A session's entries stay together
-- (one partition per session: appends, rewrites and forks touch one partition), and
-- the per-owner and per-team newest-first indexes exist in every partition, so an
-- account or team search reads a bounded slice of each.

DROP VIEW search_rows;
ALTER TABLE entries RENAME TO entries_unpartitioned;
ALTER INDEX entries_shown_recent RENAME TO entries_unpartitioned_shown_recent;
ALTER INDEX entries_unprojected RENAME TO entries_unpartitioned_unprojected;
ALTER INDEX entries_text_trgm RENAME TO entries_unpartitioned_text_trgm;
ALTER INDEX entries_personal_recent RENAME TO entries_unpartitioned_personal_recent;
ALTER INDEX entries_team_recent RENAME TO entries_unpartitioned_team_recent;
ALTER INDEX entries_tokens RENAME TO entries_unpartitioned_tokens;

CREATE TABLE entries (
    row_id BIGINT GENERATED ALWAYS AS IDENTITY,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON UPDATE CASCADE ON DELETE CASCADE,
    seq BIGINT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    parent_seq BIGINT,
    role TEXT NOT NULL,
    payload TEXT NOT NULL,
    payload_hash TEXT NOT NULL,
    meta BOOLEAN NOT NULL DEFAULT FALSE,
    discarded BOOLEAN NOT NULL DEFAULT FALSE,
    on_branch BOOLEAN NOT NULL DEFAULT FALSE,
    projected BOOLEAN NOT NULL DEFAULT FALSE,
    text TEXT,
    personal_owner TEXT,
    team_id TEXT,
    tokens tsvector,
    PRIMARY KEY (row_id, session_id),
    UNIQUE (session_id, seq)
) PARTITION BY HASH (session_id);

CREATE TABLE entries_p00 PARTITION OF entries FOR VALUES WITH (MODULUS 16, REMAINDER 0);
CREATE TABLE entries_p01 PARTITION OF entries FOR VALUES WITH (MODULUS 16, REMAINDER 1);
CREATE TABLE entries_p02 PARTITION OF entries FOR VALUES WITH (MODULUS 16, REMAINDER 2);
CREATE TABLE entries_p03 PARTITION OF entries FOR VALUES WITH (MODULUS 16, REMAINDER 3);
CREATE TABLE entries_p04 PARTITION OF entries FOR VALUES WITH (MODULUS 16, REMAINDER 4);
CREATE TABLE entries_p05 PARTITION OF entries FOR VALUES WITH (MODULUS 16, REMAINDER 5);
CREATE TABLE entries_p06 PARTITION OF entries FOR VALUES WITH (MODULUS 16, REMAINDER 6);
CREATE TABLE entries_p07 PARTITION OF entries FOR VALUES WITH (MODULUS 16, REMAINDER 7);
CREATE TABLE entries_p08 PARTITION OF entries FOR VALUES WITH (MODULUS 16, REMAINDER 8);
CREATE TABLE entries_p09 PARTITION OF entries FOR VALUES WITH (MODULUS 16, REMAINDER 9);
CREATE TABLE entries_p10 PARTITION OF entries FOR VALUES WITH (MODULUS 16, REMAINDER 10);
CREATE TABLE entries_p11 PARTITION OF entries FOR VALUES WITH (MODULUS 16, REMAINDER 11);
CREATE TABLE entries_p12 PARTITION OF entries FOR VALUES WITH (MODULUS 16, REMAINDER 12);
CREATE TABLE entries_p13 PARTITION OF entries FOR VALUES WITH (MODULUS 16, REMAINDER 13);
CREATE TABLE entries_p14 PARTITION OF entries FOR VALUES WITH (MODULUS 16, REMAINDER 14);
CREATE TABLE entries_p15 PARTITION OF entries FOR VALUES WITH (MODULUS 16, REMAINDER 15);

INSERT INTO entries (row_id, session_id, seq, created_at, parent_seq, role, payload,
        payload_hash, meta, discarded, on_branch, projected, text, personal_owner, team_id,
        tokens)
    OVERRIDING SYSTEM VALUE
    SELECT row_id, session_id, seq, created_at, parent_seq, role, payload, payload_hash, meta,
        discarded, on_branch, projected, text, personal_owner, team_id, tokens
    FROM entries_unpartitioned;
SELECT setval(pg_get_serial_sequence('entries', 'row_id'),
    GREATEST((SELECT MAX(row_id) FROM entries), 1));
DROP TABLE entries_unpartitioned;

-- The same indexes as before, now one per partition.
CREATE INDEX entries_shown_recent ON entries (created_at DESC, row_id DESC)
    WHERE role IN ('user', 'assistant') AND NOT meta AND NOT discarded;
CREATE INDEX entries_unprojected ON entries (created_at DESC, row_id DESC)
    WHERE NOT projected AND role IN ('user', 'assistant') AND NOT meta AND NOT discarded;
CREATE INDEX entries_text_trgm ON entries USING gin (text gin_trgm_ops) WHERE text IS NOT NULL;
CREATE INDEX entries_personal_recent ON entries (personal_owner, created_at DESC, row_id DESC)
    WHERE personal_owner IS NOT NULL
        AND role IN ('user', 'assistant') AND NOT meta AND NOT discarded;
CREATE INDEX entries_team_recent ON entries (team_id, created_at DESC, row_id DESC)
    WHERE team_id IS NOT NULL AND role IN ('user', 'assistant') AND NOT meta AND NOT discarded;
CREATE INDEX entries_tokens ON entries USING gin (tokens) WHERE tokens IS NOT NULL;

CREATE VIEW search_rows AS
    SELECT row_id, session_id, seq, created_at, text FROM entries WHERE text IS NOT NULL;
