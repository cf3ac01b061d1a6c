-- 0001: the first schema. Times are unix milliseconds (UTC), booleans 0/1.
-- Strings that mean "none" are stored as '' unless a column is a foreign key
-- or the NULL itself carries meaning (error, exit_code, cost, summary_id).

CREATE TABLE sessions (
    id         TEXT    PRIMARY KEY,
    parent_id  TEXT    REFERENCES sessions(id) ON DELETE CASCADE,
    persona    TEXT    NOT NULL DEFAULT '',
    title      TEXT    NOT NULL DEFAULT '',
    cwd        TEXT    NOT NULL DEFAULT '',
    model      TEXT    NOT NULL DEFAULT '',
    status     TEXT    NOT NULL DEFAULT 'active'
               CHECK (status IN ('active', 'done', 'failed', 'interrupted')),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX sessions_parent ON sessions(parent_id);
CREATE INDEX sessions_updated ON sessions(updated_at);

CREATE TABLE agents (
    session_id TEXT    NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    persona    TEXT    NOT NULL,
    state      TEXT    NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (session_id, persona)
) WITHOUT ROWID;

-- A tool call. Its whole output is in output_chunks; preview is what went
-- into the model's context.
CREATE TABLE tool_executions (
    id           INTEGER PRIMARY KEY,
    session_id   TEXT    NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    persona      TEXT    NOT NULL DEFAULT '',
    call_id      TEXT    NOT NULL DEFAULT '',
    tool         TEXT    NOT NULL,
    arguments    TEXT    NOT NULL DEFAULT '',
    preview      TEXT    NOT NULL DEFAULT '',
    status       TEXT    NOT NULL
                 CHECK (status IN ('ok', 'error', 'denied', 'interrupted')),
    exit_code    INTEGER,
    duration_ms  INTEGER NOT NULL DEFAULT 0,
    output_chars INTEGER NOT NULL DEFAULT 0, -- characters (runes)
    output_lines INTEGER NOT NULL DEFAULT 0,
    output_bytes INTEGER NOT NULL DEFAULT 0,
    created_at   INTEGER NOT NULL
);
CREATE INDEX tool_executions_session ON tool_executions(session_id, id);

-- The whole output, cut into chunks of at most chunkChars characters (Go),
-- at whitespace so no word is split. A slice reads only the chunks it covers
-- instead of the whole value, and FTS5's snippet(), whose cost grows with the
-- square of the matches in a document, works on one chunk.
-- AUTOINCREMENT: ids are never reused, which the deferred indexing relies on.
CREATE TABLE output_chunks (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    exec_id INTEGER NOT NULL REFERENCES tool_executions(id) ON DELETE CASCADE,
    start   INTEGER NOT NULL, -- character offset of text in the whole output
    text    TEXT    NOT NULL
);
CREATE UNIQUE INDEX output_chunks_order ON output_chunks(exec_id, start);

-- The index is only correct if indexed text never changes.
CREATE TRIGGER output_chunks_immutable BEFORE UPDATE ON output_chunks BEGIN
    SELECT RAISE(ABORT, 'output chunks are immutable');
END;

-- External-content FTS5 index over the chunks (the text is stored once).
-- Indexing 1 MB takes ~55 ms here, far above the 10 ms an offload may cost,
-- so chunks are indexed after the insert, in id order, by
-- Store.IndexOutputs (in the background and before each search).
-- fts_state.indexed_upto is the highest chunk id in the index; the delete
-- trigger touches the index only for chunks at or below it.
CREATE VIRTUAL TABLE output_fts USING fts5(
    text,
    content = 'output_chunks',
    content_rowid = 'id',
    tokenize = 'porter unicode61'
);

CREATE TABLE fts_state (
    name         TEXT    PRIMARY KEY,
    indexed_upto INTEGER NOT NULL
);
INSERT INTO fts_state (name, indexed_upto) VALUES ('output_chunks', 0);

CREATE TRIGGER output_chunks_fts_ad AFTER DELETE ON output_chunks
WHEN old.id <= (SELECT indexed_upto FROM fts_state WHERE name = 'output_chunks') BEGIN
    INSERT INTO output_fts(output_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;

CREATE TABLE summaries (
    id                INTEGER PRIMARY KEY,
    session_id        TEXT    NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    persona           TEXT    NOT NULL,
    content           TEXT    NOT NULL,
    tokens_before     INTEGER NOT NULL DEFAULT 0,
    tokens_after      INTEGER NOT NULL DEFAULT 0,
    messages_replaced INTEGER NOT NULL DEFAULT 0,
    archive_path      TEXT    NOT NULL DEFAULT '',
    heuristic         INTEGER NOT NULL DEFAULT 0,
    created_at        INTEGER NOT NULL
);
CREATE INDEX summaries_session ON summaries(session_id, persona, id);

CREATE TABLE messages (
    id           INTEGER PRIMARY KEY,
    session_id   TEXT    NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    persona      TEXT    NOT NULL,
    seq          INTEGER NOT NULL,
    role         TEXT    NOT NULL,
    kind         TEXT    NOT NULL DEFAULT '',
    content      TEXT    NOT NULL DEFAULT '',
    tool_calls   TEXT,  -- JSON array of chat.ToolCall, NULL when none
    tool_call_id TEXT    NOT NULL DEFAULT '',
    tool_name    TEXT    NOT NULL DEFAULT '',
    exec_id      INTEGER REFERENCES tool_executions(id) ON DELETE SET NULL,
    output_chars INTEGER, -- NULL means the message has no chat.Output
    output_lines INTEGER,
    offloaded    INTEGER NOT NULL DEFAULT 0,
    failed       INTEGER NOT NULL DEFAULT 0,
    tokens       INTEGER NOT NULL DEFAULT 0,
    summary_id   INTEGER REFERENCES summaries(id), -- set = archived
    created_at   INTEGER NOT NULL
);
CREATE UNIQUE INDEX messages_order ON messages(session_id, persona, seq);
CREATE INDEX messages_exec ON messages(exec_id) WHERE exec_id IS NOT NULL;
CREATE INDEX messages_summary ON messages(summary_id) WHERE summary_id IS NOT NULL;

CREATE TABLE llm_calls (
    id                INTEGER PRIMARY KEY,
    session_id        TEXT    NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    persona           TEXT    NOT NULL DEFAULT '',
    model             TEXT    NOT NULL DEFAULT '',
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    cached_tokens     INTEGER NOT NULL DEFAULT 0,
    latency_ms        INTEGER NOT NULL DEFAULT 0,
    attempts          INTEGER NOT NULL DEFAULT 1,
    error             TEXT,
    error_kind        TEXT,
    cost              REAL,
    created_at        INTEGER NOT NULL
);
CREATE INDEX llm_calls_session ON llm_calls(session_id, persona);

CREATE TABLE permission_decisions (
    id         INTEGER PRIMARY KEY,
    session_id TEXT    REFERENCES sessions(id) ON DELETE CASCADE,
    tool       TEXT    NOT NULL,
    kind       TEXT    NOT NULL DEFAULT '',
    target     TEXT    NOT NULL DEFAULT '',
    decision   TEXT    NOT NULL CHECK (decision IN ('allow', 'deny')),
    scope      TEXT    NOT NULL CHECK (scope IN ('once', 'session', 'rule', 'mode')),
    reason     TEXT    NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL
);
CREATE INDEX permission_decisions_session ON permission_decisions(session_id, id);

-- Leads: domain and email are normalized (lower case) and stored as '' when
-- unknown, never NULL, because UNIQUE treats NULLs as distinct and would let
-- the same company be inserted twice.
CREATE TABLE leads (
    id           INTEGER PRIMARY KEY,
    list         TEXT    NOT NULL,
    company      TEXT    NOT NULL DEFAULT '',
    website      TEXT    NOT NULL DEFAULT '',
    domain       TEXT    NOT NULL DEFAULT '',
    contact_name TEXT    NOT NULL DEFAULT '',
    title        TEXT    NOT NULL DEFAULT '',
    email        TEXT    NOT NULL DEFAULT '',
    phone        TEXT    NOT NULL DEFAULT '',
    source_url   TEXT    NOT NULL CHECK (source_url <> ''),
    notes        TEXT    NOT NULL DEFAULT '',
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    UNIQUE (list, domain, email)
);
