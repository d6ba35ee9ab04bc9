-- Who cancelled a task (issue 47), as SQLite's 0041: written on the row with the change and
-- named by the history's trigger; every other change clears it.
ALTER TABLE tasks ADD COLUMN changed_by TEXT;
CREATE OR REPLACE FUNCTION task_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO task_events (task_id, at, status, actor, retries)
    VALUES (NEW.id, NEW.updated_at, NEW.status, COALESCE(NEW.changed_by, NEW.claimed_by, NEW.assignee), NEW.retries);
    RETURN NULL;
END;
$$;
