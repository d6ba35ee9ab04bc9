-- Stored workflows and their runs (spec §7).
CREATE TABLE workflows (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    description TEXT NOT NULL,
    steps       TEXT NOT NULL,             -- JSON array of steps
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);

CREATE TABLE workflow_runs (
    id          TEXT PRIMARY KEY,
    workflow_id TEXT NOT NULL,             -- kept after the workflow is deleted, for history
    inputs      TEXT NOT NULL,
    status      TEXT NOT NULL,             -- running | succeeded | failed
    output      TEXT,
    error       TEXT,
    steps       TEXT NOT NULL,             -- JSON array: each step's agent, prompt, output, timing
    started_at  TEXT NOT NULL,
    finished_at TEXT
);
CREATE INDEX workflow_runs_by_workflow ON workflow_runs(workflow_id, started_at);
