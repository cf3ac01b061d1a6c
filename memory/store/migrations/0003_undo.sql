-- 0003: undo. Every file change a tool makes is backed up before it happens
-- (undo_backups), grouped by turn: one user message to the agent the user
-- talks to (undo_turns); sub-agents' changes belong to their parent's turn.
-- File contents are stored once per sha256 (undo_blobs). An undo, redo or
-- rewind is itself an undo_actions row whose own changes are backups too,
-- so it can be taken back. Every undo_* row goes with its session (ON DELETE
-- CASCADE); a blob goes with the last backup that needs it (trigger below).

CREATE TABLE undo_turns (
    id         INTEGER PRIMARY KEY,
    session_id TEXT    NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    persona    TEXT    NOT NULL DEFAULT '',
    message_id INTEGER NOT NULL DEFAULT 0, -- messages.id of the user message as first stored: where a fork cuts
    prompt     TEXT    NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL
);
CREATE INDEX undo_turns_session ON undo_turns(session_id, id);

-- Content-addressed file contents (or a symlink's target).
CREATE TABLE undo_blobs (
    hash TEXT    PRIMARY KEY, -- sha256, hex
    size INTEGER NOT NULL,
    data BLOB    NOT NULL
);

CREATE TABLE undo_actions (
    id           INTEGER PRIMARY KEY,
    session_id   TEXT    NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    kind         TEXT    NOT NULL CHECK (kind IN ('undo', 'rewind', 'redo')),
    turns        TEXT    NOT NULL DEFAULT '[]', -- JSON array of the undo_turns ids it took back
    reverts      INTEGER REFERENCES undo_actions(id) ON DELETE CASCADE, -- redo: the action it took back
    reverted_by  INTEGER REFERENCES undo_actions(id) ON DELETE SET NULL, -- set when a redo took this one back
    fork_session TEXT    NOT NULL DEFAULT '', -- rewind: the session forked at the turn
    created_at   INTEGER NOT NULL
);
CREATE INDEX undo_actions_session ON undo_actions(session_id, id);

-- One file change. Exactly one of turn_id (a tool's change) and action_id
-- (an undo's change) is set. before_* is the state before the change
-- (before_hash names the stored content; 'unknown' when a command changed
-- a file whose earlier content was never seen); after_* is what Polly left,
-- so an undo can tell a later outside edit from its own.
CREATE TABLE undo_backups (
    id          INTEGER PRIMARY KEY,
    session_id  TEXT    NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    turn_id     INTEGER REFERENCES undo_turns(id) ON DELETE CASCADE,
    action_id   INTEGER REFERENCES undo_actions(id) ON DELETE CASCADE,
    agent       TEXT    NOT NULL DEFAULT '',
    call_id     TEXT    NOT NULL DEFAULT '',
    tool        TEXT    NOT NULL DEFAULT '',
    path        TEXT    NOT NULL, -- absolute path written (a symlink's target)
    link        TEXT    NOT NULL DEFAULT '', -- the symlink the tool was given, when it followed one
    before_kind TEXT    NOT NULL CHECK (before_kind IN ('file', 'missing', 'symlink', 'unknown')),
    before_hash TEXT    REFERENCES undo_blobs(hash),
    before_mode INTEGER NOT NULL DEFAULT 0,
    after_kind  TEXT    NOT NULL CHECK (after_kind IN ('file', 'missing', 'symlink', 'unknown')),
    after_hash  TEXT    NOT NULL DEFAULT '',
    after_mode  INTEGER NOT NULL DEFAULT 0,
    reverted_by INTEGER REFERENCES undo_actions(id) ON DELETE SET NULL,
    created_at  INTEGER NOT NULL,
    CHECK ((turn_id IS NULL) <> (action_id IS NULL)),
    CHECK ((before_kind IN ('file', 'symlink')) = (before_hash IS NOT NULL))
);
CREATE INDEX undo_backups_path ON undo_backups(session_id, path, id);
CREATE INDEX undo_backups_turn ON undo_backups(turn_id) WHERE turn_id IS NOT NULL;
CREATE INDEX undo_backups_action ON undo_backups(action_id) WHERE action_id IS NOT NULL;
CREATE INDEX undo_backups_reverted ON undo_backups(reverted_by) WHERE reverted_by IS NOT NULL;
CREATE INDEX undo_backups_blob ON undo_backups(before_hash) WHERE before_hash IS NOT NULL;

-- A blob no backup needs any more goes with the last backup that did (also
-- when a session is deleted: cascaded deletes fire triggers).
CREATE TRIGGER undo_backups_blob_gc AFTER DELETE ON undo_backups
WHEN old.before_hash IS NOT NULL BEGIN
    DELETE FROM undo_blobs WHERE hash = old.before_hash
        AND NOT EXISTS (SELECT 1 FROM undo_backups WHERE before_hash = old.before_hash);
END;
