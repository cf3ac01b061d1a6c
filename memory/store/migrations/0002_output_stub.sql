-- The one-line stub a stale tool output shrinks to in the context, made
-- once when the result is stored so the context policy needs no work per
-- message.
ALTER TABLE messages ADD COLUMN output_stub TEXT NOT NULL DEFAULT '';
