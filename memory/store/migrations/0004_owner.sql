-- 0004: who made each session, and where (issue 25). A repository can ship
-- its own polly.db; only sessions this install made in this project are
-- continued or undone without the user's say-so. project is the project
-- path the session was made in (absolute, links resolved); owner is the
-- install's stamp over the session id and that path (agent/owner), '' for
-- sessions made before this migration or by anyone else.
ALTER TABLE sessions ADD COLUMN project TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN owner   TEXT NOT NULL DEFAULT '';
