-- 0005: reserved. Another branch (request records) adds its 0005 at the
-- same time; this empty file keeps this branch's numbers gap-free and goes
-- when the two are merged.
SELECT 1;
