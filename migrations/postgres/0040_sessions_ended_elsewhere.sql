-- SQLite's 0040 makes a deleted dashboard sign-in move the cached-tables counter. On
-- PostgreSQL `operator_sessions_cached_notify` (0038) already tells every daemon of any change
-- to the sessions; nothing to add, and the numbering stays one per SQLite migration.
SELECT 1;
