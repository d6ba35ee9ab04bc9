-- Who cancelled a task (issue 47): the cancelling operator, token or CLI is written on the
-- row with the change, and the history's trigger names them. Every other change clears it,
-- so the history keeps naming the claimant or assignee as before.
ALTER TABLE tasks ADD COLUMN changed_by TEXT;
DROP TRIGGER task_changed;
CREATE TRIGGER task_changed AFTER UPDATE OF status, assignee ON tasks BEGIN
    INSERT INTO task_events (task_id, at, status, actor, retries) VALUES (NEW.id, NEW.updated_at, NEW.status, COALESCE(NEW.changed_by, NEW.claimed_by, NEW.assignee), NEW.retries);
END;
