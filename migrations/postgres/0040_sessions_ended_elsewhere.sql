-- A dashboard sign-in ended by another process (`kennel operator passwd|remove` deletes that
-- operator's sessions) moves the cached-tables counter, as SQLite's 0040 does, so every
-- daemon reads the sessions again (`operator_sessions_cached_notify`, 0038, already tells
-- them through LISTEN; the counter keeps the two schemas alike).
CREATE TRIGGER operator_sessions_deleted AFTER DELETE ON operator_sessions FOR EACH ROW EXECUTE FUNCTION cached_tables_version_bump();
