-- Finding the sessions of one origin across agents (a task's wake-ups, for its history).
CREATE INDEX sessions_label ON sessions(label, created_at);
