-- The team hub (SPEC S6): revocable tokens, teams, sessions shared with a team, and
-- the facts a synced session brings (machine, agent, project, last activity).

ALTER TABLE accounts ADD COLUMN revoked_at INTEGER;  -- a revoked account's token is 401

CREATE TABLE teams (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL
);
CREATE TABLE team_members (
    team_id TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    added_at INTEGER NOT NULL,
    PRIMARY KEY (team_id, account_id)
);
CREATE INDEX team_members_account ON team_members (account_id);

-- the team a session is shared with (its members read it in team scope), or NULL
ALTER TABLE sessions ADD COLUMN team_id TEXT REFERENCES teams(id);
ALTER TABLE sessions ADD COLUMN machine TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN agent TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN project TEXT NOT NULL DEFAULT '';
-- journal-maintained: the newest entry's created_at (NULL: none yet)
ALTER TABLE sessions ADD COLUMN updated_at INTEGER;
-- sync: the digest of the local session last stored here (NULL: not synced)
ALTER TABLE sessions ADD COLUMN sync_digest TEXT;
-- sync: set when the local session was deleted; the key then stays deleted
ALTER TABLE sessions ADD COLUMN deleted_at INTEGER;
CREATE INDEX sessions_team ON sessions (team_id) WHERE team_id IS NOT NULL;
CREATE INDEX sessions_recent ON sessions (owner_id, updated_at DESC, id DESC);
UPDATE sessions SET updated_at =
    (SELECT MAX(e.created_at) FROM entries e WHERE e.session_id = sessions.id);

-- Journal-maintained, as personal_owner: the session's team. A team-scope search walks
-- the team's entries newest first through this index.
ALTER TABLE entries ADD COLUMN team_id TEXT;
CREATE INDEX entries_team_recent ON entries (team_id, created_at DESC, row_id DESC)
    WHERE team_id IS NOT NULL AND role IN ('user', 'assistant') AND NOT meta AND NOT discarded;
