-- A dashboard sign-in ended by another process (`kennel operator passwd|remove` deletes that
-- operator's sessions) ends in the running daemon too: deleting a session moves the counter
-- the change watcher reads, so the daemon reads the sessions again. Sign-ins made (inserts)
-- need no reload: only the daemon that made one serves it on SQLite.
CREATE TRIGGER operator_sessions_deleted AFTER DELETE ON operator_sessions BEGIN UPDATE cached_tables_version SET version = version + 1; END;
