-- 0004: reserved. Another branch (session ownership) adds its 0004 at the
-- same time; this empty file keeps this branch's numbers gap-free and goes
-- when the two are merged.
SELECT 1;
