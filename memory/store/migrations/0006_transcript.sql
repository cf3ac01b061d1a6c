-- 0006 (issue 29): what the transcript showed, so a resumed session shows
-- it again. tool_executions.diff: the diff an edit made ('' for calls
-- that changed no file, and for executions stored before this). messages.label:
-- what a user message showed instead of its content (the draft as typed,
-- long pastes as tokens; a command as typed), '' when the content itself.
ALTER TABLE tool_executions ADD COLUMN diff TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN label TEXT NOT NULL DEFAULT '';
-- The model the user chose for a persona with /model in a session, so
-- resuming the session talks to it again.
CREATE TABLE session_models (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    persona    TEXT NOT NULL,
    model      TEXT NOT NULL,
    PRIMARY KEY (session_id, persona)
);
