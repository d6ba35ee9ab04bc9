-- The task board (spec §5). Claims are one UPDATE … RETURNING, so concurrent claimers never
-- get the same task; every status change is logged to task_events by a trigger, in the same
-- statement.
CREATE TABLE tasks (
    id           TEXT PRIMARY KEY,          -- UUIDv7: orders by creation
    title        TEXT NOT NULL,
    body         TEXT NOT NULL,
    assignee     TEXT,                      -- agent id, or NULL for anyone
    priority     INTEGER NOT NULL,          -- 0 (lowest) to 9 (highest)
    status       TEXT NOT NULL,             -- pending | claimed | done | failed | cancelled
    claimed_by   TEXT,
    claimed_at   TEXT,
    retries      INTEGER NOT NULL DEFAULT 0,
    result       TEXT,
    posted_by    TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    completed_at TEXT
);
CREATE INDEX tasks_claimable ON tasks(status, priority DESC, id);
CREATE INDEX tasks_claimed_at ON tasks(status, claimed_at);

CREATE TABLE task_events (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id  TEXT NOT NULL,
    at       TEXT NOT NULL,
    status   TEXT NOT NULL,                 -- the status it moved to
    actor    TEXT,                          -- who claimed it, or NULL
    retries  INTEGER NOT NULL
);
CREATE INDEX task_events_by_task ON task_events(task_id, id);

CREATE TRIGGER task_posted AFTER INSERT ON tasks BEGIN
    INSERT INTO task_events (task_id, at, status, actor, retries) VALUES (NEW.id, NEW.created_at, NEW.status, NEW.posted_by, NEW.retries);
END;
CREATE TRIGGER task_changed AFTER UPDATE OF status, assignee ON tasks BEGIN
    INSERT INTO task_events (task_id, at, status, actor, retries) VALUES (NEW.id, NEW.updated_at, NEW.status, COALESCE(NEW.claimed_by, NEW.assignee), NEW.retries);
END;
