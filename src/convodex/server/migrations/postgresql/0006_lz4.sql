-- The journal's payloads and projected texts are compressed with lz4 instead of pglz
-- when PostgreSQL compresses them (a row over ~2 kB). Rows already stored keep pglz
-- (both read the same). A partition does not follow its parent's setting: each is
-- set. A server built without lz4 (or older than PostgreSQL 14) keeps pglz.
DO $$
DECLARE
    part regclass;
BEGIN
    FOR part IN SELECT 'entries'::regclass UNION ALL
        SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'entries'::regclass
    LOOP
        EXECUTE format('ALTER TABLE %s ALTER COLUMN payload SET COMPRESSION lz4', part);
        EXECUTE format('ALTER TABLE %s ALTER COLUMN text SET COMPRESSION lz4', part);
    END LOOP;
EXCEPTION WHEN feature_not_supported OR syntax_error THEN
    NULL;
END
$$;
