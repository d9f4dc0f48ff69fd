"""Catalog schema migrations: ordered functions, recorded, never edited once shipped.

The schema version is also kept in ``PRAGMA user_version`` so a newer file can be
recognised before any table is touched (SPEC L8).
"""

from __future__ import annotations

from collections.abc import Callable

from convodex.sqlite import sqlite3

Migration = Callable[[sqlite3.Connection], None]
MIGRATIONS: list[Migration] = []


def migration(fn: Migration) -> Migration:
    MIGRATIONS.append(fn)
    return fn


def execute_script(db: sqlite3.Connection, script: str) -> None:
    """Run statements one by one: ``executescript`` would commit the open transaction."""
    statement = ""
    for line in script.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            db.execute(statement)
            statement = ""
    if statement.strip():
        raise ValueError("incomplete SQL statement in migration")


@migration
def m001_initial(db: sqlite3.Connection) -> None:
    execute_script(
        db,
        """
        -- Small facts about the projection: tokenizer version, revision.
        CREATE TABLE catalog_meta (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );
        -- A root is a directory scanned for transcripts; scans carry a generation so
        -- only a completed scan may remove sources that disappeared.
        CREATE TABLE roots (
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL UNIQUE,
            scan_generation INTEGER NOT NULL DEFAULT 0,
            completed_generation INTEGER NOT NULL DEFAULT 0,
            last_completed_scan_at INTEGER
        );
        -- One transcript file. No titles or text: those are read from the source.
        -- The checkpoint columns describe exactly the rows committed with them.
        CREATE TABLE sources (
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL UNIQUE,
            root_id INTEGER NOT NULL REFERENCES roots(id) ON DELETE CASCADE,
            format TEXT NOT NULL,
            session_id TEXT NOT NULL,
            subagent INTEGER NOT NULL DEFAULT 0,
            archived INTEGER NOT NULL DEFAULT 0,
            last_activity_at INTEGER,
            byte_offset INTEGER NOT NULL DEFAULT 0,
            message_count INTEGER NOT NULL DEFAULT 0,
            size INTEGER,
            mtime_ns INTEGER,
            inode INTEGER,
            signature BLOB,
            -- 1 while the source needs (re)indexing: new, changed, hinted or queued by search.
            pending INTEGER NOT NULL DEFAULT 1,
            health TEXT NOT NULL DEFAULT 'ok'
                CHECK (health IN ('ok', 'stale', 'failed', 'missing')),
            error_class TEXT,
            line_errors INTEGER NOT NULL DEFAULT 0,
            seen_generation INTEGER NOT NULL DEFAULT 0,
            indexed_at INTEGER
        );
        CREATE INDEX sources_root ON sources(root_id);
        CREATE INDEX sources_pending ON sources(pending) WHERE pending = 1;
        -- Where each displayed message's record lives, for snippets and context:
        -- byte offsets and lengths packed per indexing batch (two little-endian u64
        -- per message), a few bytes a message instead of a row each.
        CREATE TABLE message_spans (
            source_id INTEGER NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
            first_index INTEGER NOT NULL,
            count INTEGER NOT NULL,
            spans BLOB NOT NULL,
            PRIMARY KEY (source_id, first_index)
        ) WITHOUT ROWID;
        -- Contentless: FTS5 keeps only the inverted index of tokens, never text.
        -- rowid = source_id << 32 | message_index << 8 | part_index << 3 | kind, so
        -- the tie order (source, message, part) is rowid order and the kind is known
        -- without a join. User, assistant, tool-input and tool-error documents:
        CREATE VIRTUAL TABLE documents USING fts5(
            tokens,
            content='', contentless_delete=1, detail=full,
            tokenize="ascii tokenchars '_'"
        );
        -- Tool output, the bulk of most histories and outside the default kinds, is
        -- kept apart so default searches never touch it, and without positions
        -- (detail=none), which keeps the catalog small and indexing fast. The price:
        -- no BM25 within tool output (every match scores 0 and follows the ranked
        -- kinds in tie order) and CJK runs match as required bigrams, not phrases.
        CREATE VIRTUAL TABLE outputs USING fts5(
            tokens,
            content='', contentless_delete=1, detail=none,
            tokenize="ascii tokenchars '_'"
        );
        -- A larger pending-terms hash means fewer, larger segments, and merging 16
        -- segments at a time instead of 4 does less rewriting while bulk indexing;
        -- measured on 210 MB: 19% faster, same file size, same query times.
        INSERT INTO documents(documents, rank) VALUES ('hashsize', 16777216);
        INSERT INTO outputs(outputs, rank) VALUES ('hashsize', 16777216);
        INSERT INTO documents(documents, rank) VALUES ('automerge', 16);
        INSERT INTO outputs(outputs, rank) VALUES ('automerge', 16);
        INSERT INTO documents(documents, rank) VALUES ('crisismerge', 64);
        INSERT INTO outputs(outputs, rank) VALUES ('crisismerge', 64);
        """,
    )


@migration
def m002_session_facts(db: sqlite3.Connection) -> None:
    execute_script(
        db,
        """
        -- Session facts for filters (L13) and readable hits (L14): metadata, never text.
        -- The workspace the session ran in (project filters, resume's directory).
        ALTER TABLE sources ADD COLUMN workspace TEXT;
        -- The first message's time, for time filters that a whole source can answer.
        ALTER TABLE sources ADD COLUMN first_activity_at INTEGER;
        -- The display index of the first user message: read at hydration as the
        -- title when the format has none (the catalog keeps no text).
        ALTER TABLE sources ADD COLUMN title_index INTEGER;
        -- One row per indexed message: its time for time filters and newest/oldest
        -- order. ``base`` is the first rowid of its documents
        -- (source_id << 32 | subagent << 31 | message_index << 8), so a document
        -- finds its message by ``rowid & -256``.
        CREATE TABLE messages (
            base INTEGER PRIMARY KEY,
            -- The message's own time, else its session's last activity at indexing.
            at INTEGER NOT NULL,
            -- 1 when ``at`` is the message's own time (hits show only those).
            timed INTEGER NOT NULL,
            -- Set when the message's session is not its source's (a file of many).
            session_key TEXT
        );
        -- Spans move to a rowid table: a WITHOUT ROWID table keeps at most about a
        -- quarter of a page in place, so each source's packed spans overflowed into
        -- pages of their own (10.4 of 96 MB on 210 MB of native sessions).
        CREATE TABLE spans (
            source_id INTEGER NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
            first_index INTEGER NOT NULL,
            count INTEGER NOT NULL,
            spans BLOB NOT NULL,
            UNIQUE (source_id, first_index)
        );
        DROP TABLE message_spans;
        """,
    )


@migration
def m003_slots(db: sqlite3.Connection) -> None:
    execute_script(
        db,
        """
        -- Compact rowids (``rowids``): a source's units live in slots of 128, numbered
        -- from one counter as rows are committed; slot k of a source holds its units
        -- 128k … 128k + 127.
        CREATE TABLE slots (
            slot INTEGER PRIMARY KEY,
            source_id INTEGER NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
            k INTEGER NOT NULL,
            UNIQUE (source_id, k)
        );
        -- The units a source's committed rows use (its next unit).
        ALTER TABLE sources ADD COLUMN unit_count INTEGER NOT NULL DEFAULT 0;
        -- One row per unit: a message takes one unit per four parts. ``base`` is the
        -- unit's first rowid, so a document finds its row by ``rowid & -32``.
        DROP TABLE messages;
        CREATE TABLE messages (
            base INTEGER PRIMARY KEY,
            -- The message's own time, else its session's last activity at indexing.
            at INTEGER NOT NULL,
            -- 1 when ``at`` is the message's own time (hits show only those).
            timed INTEGER NOT NULL,
            -- Set when the message's session is not its source's (a file of many).
            session_key TEXT,
            -- The message's index, and the first part index this unit holds.
            message INTEGER NOT NULL,
            first_part INTEGER NOT NULL
        );
        """,
    )


@migration
def m004_bands(db: sqlite3.Connection) -> None:
    execute_script(
        db,
        """
        -- Impact bands (``bands``): for a frequent word, the documents that can be on
        -- its first page while the average document length stays near ``avgdl``,
        -- packed as (rowid, tf, length) triples. Current while ``revision`` and
        -- ``totals`` (FTS5's record of row and token counts) are the catalog's.
        CREATE TABLE bands (
            term TEXT PRIMARY KEY,
            filter TEXT NOT NULL,
            revision INTEGER NOT NULL,
            totals BLOB NOT NULL,
            avgdl REAL NOT NULL,
            hits INTEGER NOT NULL,
            members BLOB NOT NULL
        );
        """,
    )


@migration
def m005_title_places(db: sqlite3.Connection) -> None:
    execute_script(
        db,
        """
        -- Where a session's own title is in its file, for readers that find it there
        -- (``title_at``): the record's offset and length, offset -1 when the file
        -- holds no title, NULL when unknown (read as before: the reader's ``info``).
        -- A place, never the text (L3): a hit reads that one record.
        ALTER TABLE sources ADD COLUMN title_offset INTEGER;
        ALTER TABLE sources ADD COLUMN title_length INTEGER;
        """,
    )


@migration
def m006_root_formats(db: sqlite3.Connection) -> None:
    execute_script(
        db,
        """
        -- The format declared for a root (``--root PATH:format``; NULL: detected per
        -- file): a scan that names the root by its path alone (a reindex, a helper
        -- process, a hint) reads it with the format it was declared with.
        ALTER TABLE roots ADD COLUMN format TEXT;
        """,
    )


@migration
def m007_vectors(db: sqlite3.Connection) -> None:
    execute_script(
        db,
        """
        -- Embeddings (L19, ``vectors``): derived data, one int8 vector per user or
        -- assistant text part (its direction: a unit vector scaled to its largest
        -- component), keyed by the part's document address and removed with it; never
        -- text.
        CREATE TABLE vectors (
            address INTEGER PRIMARY KEY,
            vec BLOB NOT NULL
        );
        -- How many of a source's messages have their vectors (the next one to embed).
        CREATE TABLE embedded (
            source_id INTEGER PRIMARY KEY REFERENCES sources(id) ON DELETE CASCADE,
            messages INTEGER NOT NULL
        );
        """,
    )


@migration
def m008_unknown_shapes(db: sqlite3.Connection) -> None:
    execute_script(
        db,
        """
        -- Format drift (``sources.drift``): the record and content-block types the
        -- source's reader did not know, a JSON object of counts by type name
        -- (``{"record:x": 3}``) of its last read from the start; NULL when there were
        -- none. Names only, never values.
        ALTER TABLE sources ADD COLUMN unknown_shapes TEXT;
        """,
    )


@migration
def m009_keyed_sessions(db: sqlite3.Connection) -> None:
    execute_script(
        db,
        """
        -- The sessions inside files of many (an Aider history's runs, a chat export's
        -- conversations, a Goose database's sessions), listed by ``recent`` as search
        -- groups them: only the messages that name a session of their own, with what a
        -- listing needs (its dates, messages) in the index itself.
        CREATE INDEX messages_keyed ON messages(session_key, at, timed, message)
            WHERE session_key IS NOT NULL;
        """,
    )
