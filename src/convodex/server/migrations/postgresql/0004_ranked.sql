-- Ranked search (SPEC S6): the project's own normalized tokens (L3) of each search row
-- as a tsvector the journal writes itself (positions, no parser, no stemming), in the
-- same statement as its text, GIN-indexed: built-in full-text search, no extension.
-- Entries written before this migration have no tokens: literal mode still finds them.

ALTER TABLE entries ADD COLUMN tokens tsvector;  -- NULL = no search row
CREATE INDEX entries_tokens ON entries USING gin (tokens) WHERE tokens IS NOT NULL;
