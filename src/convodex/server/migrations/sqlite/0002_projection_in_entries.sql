-- The projection moves into the journal row it projects (SPEC S2). An append then
-- writes one row instead of two (the separate search_rows table with its own two
-- indexes made an append 2.4-3.5x as expensive as the journal alone); the projected
-- text still changes in the same statement, hence the same transaction, as the entry.
-- search_rows stays, as a view with the columns S2 names.

ALTER TABLE entries ADD COLUMN text TEXT;  -- shown text; NULL = the entry has no search row
UPDATE entries SET text = (SELECT r.text FROM search_rows r WHERE r.row_id = entries.row_id)
    WHERE row_id IN (SELECT row_id FROM search_rows);

DROP TRIGGER search_rows_ai;
DROP TRIGGER search_rows_ad;
DROP TRIGGER search_rows_au;
DROP TABLE search_fts;
DROP INDEX search_rows_entry;
DROP INDEX search_rows_recent;
DROP TABLE search_rows;

CREATE VIEW search_rows AS
    SELECT row_id, session_id, seq, created_at, text FROM entries WHERE text IS NOT NULL;

-- Trigram index over the search rows; case_sensitive 0 folds Unicode case.
CREATE VIRTUAL TABLE search_fts USING fts5 (
    text, content = 'search_rows', content_rowid = 'row_id',
    tokenize = 'trigram case_sensitive 0'
);

-- FTS5 writes a new index segment at every commit, which alone cost more than the
-- whole journal write. So the index takes new rows in batches: rows with row_id at
-- or below indexed_through are in search_fts, newer ones are read directly by the
-- search (at most CATCH_UP rows, the newest) until an append indexes the batch.
CREATE TABLE search_fts_state (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    indexed_through INTEGER NOT NULL
);
INSERT INTO search_fts_state (id, indexed_through)
    SELECT 1, COALESCE(MAX(row_id), 0) FROM entries;
INSERT INTO search_fts (rowid, text) SELECT row_id, text FROM entries WHERE text IS NOT NULL;

CREATE TRIGGER entries_text_ai AFTER INSERT ON entries
WHEN new.text IS NOT NULL AND new.row_id <= (SELECT indexed_through FROM search_fts_state)
BEGIN
    INSERT INTO search_fts (rowid, text) VALUES (new.row_id, new.text);
END;
-- Every 256 row ids an append indexes the rows before it (not itself: the trigger
-- above may run after this one and must then still see it as pending).
CREATE TRIGGER entries_text_catch_up AFTER INSERT ON entries
WHEN new.text IS NOT NULL
    AND new.row_id >= (SELECT indexed_through FROM search_fts_state) + 256
BEGIN
    INSERT INTO search_fts (rowid, text)
        SELECT row_id, text FROM entries
        WHERE row_id > (SELECT indexed_through FROM search_fts_state)
            AND row_id < new.row_id AND text IS NOT NULL;
    UPDATE search_fts_state SET indexed_through = new.row_id - 1;
END;
CREATE TRIGGER entries_text_au AFTER UPDATE OF text ON entries
WHEN old.row_id <= (SELECT indexed_through FROM search_fts_state)
BEGIN
    INSERT INTO search_fts (search_fts, rowid, text)
        SELECT 'delete', old.row_id, old.text WHERE old.text IS NOT NULL;
    INSERT INTO search_fts (rowid, text) SELECT new.row_id, new.text WHERE new.text IS NOT NULL;
END;
CREATE TRIGGER entries_text_ad AFTER DELETE ON entries
WHEN old.text IS NOT NULL AND old.row_id <= (SELECT indexed_through FROM search_fts_state)
BEGIN
    INSERT INTO search_fts (search_fts, rowid, text) VALUES ('delete', old.row_id, old.text);
END;

-- Journal-maintained: the session's owner while the session is personal, else NULL.
-- An account-scope search walks an owner's entries newest first through this index,
-- so each round trip reads a bounded number of rows, however many the owner has.
ALTER TABLE entries ADD COLUMN personal_owner TEXT;
UPDATE entries SET personal_owner =
    (SELECT s.owner_id FROM sessions s WHERE s.id = entries.session_id AND s.kind = 'personal');
CREATE INDEX entries_personal_recent ON entries (personal_owner, created_at DESC, row_id DESC)
    WHERE personal_owner IS NOT NULL
        AND role IN ('user', 'assistant') AND NOT meta AND NOT discarded;
