-- 0005: what rebuilds each model request exactly (polly inspect, /context).
-- llm_calls.request is a JSON record (store.RequestRecord): the ids of the
-- stored messages sent, what was sent in place of a message when it was
-- shortened (a stale output's line, cut arguments), messages sent but
-- never stored (the task block, an "interrupted" result, a summarizer's
-- prompt) whole, and the hashes of the system prompt and of the tool set,
-- whose texts are stored once per session in context_texts. NULL for calls
-- made before this version.
ALTER TABLE llm_calls ADD COLUMN request TEXT;

CREATE TABLE context_texts (
    session_id TEXT    NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    hash       TEXT    NOT NULL, -- sha256 of text, hex
    kind       TEXT    NOT NULL, -- 'system' or 'tools'
    text       TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (session_id, hash)
) WITHOUT ROWID;
