-- Ranked search (SPEC S6): the project's own normalized tokens (L3) of each search row,
-- written by the journal in the same statement as its text, and an FTS5 index over
-- them kept by triggers (so in the same transaction as the journal change).
-- Entries written before this migration have no tokens: literal mode still finds them.

ALTER TABLE entries ADD COLUMN tokens TEXT;  -- space-separated tokens; NULL = no row

CREATE VIRTUAL TABLE ranked_fts USING fts5 (
    tokens, content = 'entries', content_rowid = 'row_id',
    tokenize = "ascii tokenchars '_'"
);
CREATE TRIGGER entries_tokens_ai AFTER INSERT ON entries WHEN new.tokens IS NOT NULL
BEGIN
    INSERT INTO ranked_fts (rowid, tokens) VALUES (new.row_id, new.tokens);
END;
CREATE TRIGGER entries_tokens_au AFTER UPDATE OF tokens ON entries
BEGIN
    INSERT INTO ranked_fts (ranked_fts, rowid, tokens)
        SELECT 'delete', old.row_id, old.tokens WHERE old.tokens IS NOT NULL;
    INSERT INTO ranked_fts (rowid, tokens) SELECT new.row_id, new.tokens
        WHERE new.tokens IS NOT NULL;
END;
CREATE TRIGGER entries_tokens_ad AFTER DELETE ON entries WHEN old.tokens IS NOT NULL
BEGIN
    INSERT INTO ranked_fts (ranked_fts, rowid, tokens) VALUES ('delete', old.row_id, old.tokens);
END;
