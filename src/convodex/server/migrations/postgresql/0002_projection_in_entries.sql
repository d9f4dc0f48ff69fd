-- The projection moves into the journal row it projects (SPEC S2). An append then
-- writes one row instead of two (the separate search_rows table, with its own
-- indexes and a second statement, made an append 1.5-1.8x as expensive as the
-- journal alone); the projected text still changes in the same statement, hence the
-- same transaction, as the entry. search_rows stays, as a view with the columns S2
-- names.

ALTER TABLE entries ADD COLUMN text TEXT;  -- shown text; NULL = the entry has no search row
UPDATE entries e SET text = r.text FROM search_rows r WHERE r.row_id = e.row_id;
DROP TABLE search_rows;

CREATE VIEW search_rows AS
    SELECT row_id, session_id, seq, created_at, text FROM entries WHERE text IS NOT NULL;

CREATE INDEX entries_text_trgm ON entries USING gin (text gin_trgm_ops) WHERE text IS NOT NULL;

-- Journal-maintained: the session's owner while the session is personal, else NULL.
-- An account-scope search walks an owner's entries newest first through this index,
-- so each round trip reads a bounded number of rows, however many the owner has.
ALTER TABLE entries ADD COLUMN personal_owner TEXT;
UPDATE entries SET personal_owner =
    (SELECT s.owner_id FROM sessions s WHERE s.id = entries.session_id AND s.kind = 'personal');
CREATE INDEX entries_personal_recent ON entries (personal_owner, created_at DESC, row_id DESC)
    WHERE personal_owner IS NOT NULL
        AND role IN ('user', 'assistant') AND NOT meta AND NOT discarded;
