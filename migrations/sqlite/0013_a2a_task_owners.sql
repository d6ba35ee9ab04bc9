-- Whose an A2A task is: `token:NAME` (the API token that sent it) or `anonymous` (a caller of
-- a public agent without one). Tasks from before this column have none: only callers with a
-- token may read them, and no one lists them.
ALTER TABLE a2a_tasks ADD COLUMN owner TEXT;

-- ListTasks: one agent's tasks of one owner, most recently updated first.
CREATE INDEX a2a_tasks_listing ON a2a_tasks(agent_id, owner, updated_at DESC, id DESC);
