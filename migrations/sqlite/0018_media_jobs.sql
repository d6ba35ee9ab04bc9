-- Media jobs a provider runs for a while (video_generate): kept so a restart loses none, and
-- so video_status can poll one, and download it, whenever the agent asks.
CREATE TABLE media_jobs (
    id            TEXT PRIMARY KEY,          -- the task_id the agent holds (UUIDv7)
    agent_id      TEXT NOT NULL REFERENCES agents(id),
    tool          TEXT NOT NULL,             -- video_generate
    provider      TEXT NOT NULL,             -- the [media.providers] name it was sent to
    prediction_id TEXT NOT NULL,             -- the provider's id for it
    status        TEXT NOT NULL,             -- starting | processing | succeeded | failed | canceled
    path          TEXT,                      -- the workspace file, once downloaded
    bytes         INTEGER,
    error         TEXT,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
);
CREATE INDEX media_jobs_by_agent ON media_jobs(agent_id, id);
