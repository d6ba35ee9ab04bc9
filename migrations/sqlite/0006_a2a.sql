-- A2A: remote agent cards this daemon discovered, and tasks other clients sent its agents.
CREATE TABLE a2a_remotes (
    id          TEXT PRIMARY KEY,
    url         TEXT NOT NULL UNIQUE,      -- the base URL the card was found under
    card        TEXT NOT NULL,             -- the agent card as JSON
    discovered_at TEXT NOT NULL
);

CREATE TABLE a2a_tasks (
    id          TEXT PRIMARY KEY,
    agent_id    TEXT NOT NULL REFERENCES agents(id),
    context_id  TEXT NOT NULL,
    state       TEXT NOT NULL,             -- TASK_STATE_WORKING, TASK_STATE_COMPLETED, …
    request     TEXT NOT NULL,             -- the user message as sent (JSON)
    reply       TEXT,
    error       TEXT,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
