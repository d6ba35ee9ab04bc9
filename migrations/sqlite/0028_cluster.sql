-- Several daemons on one database (issue 27). Each run of a daemon is a row: a new id per
-- start, its heartbeat moved every third of `[cluster] lease_ms`. A daemon whose heartbeat is
-- older than the lease, or that stopped, is dead; the first live daemon to notice reaps it
-- (`reaped_at`): its fires and turns are marked interrupted, its A2A tasks failed, its
-- agent_send deliveries and its leases taken over.
CREATE TABLE daemons (
    id           TEXT PRIMARY KEY,
    host         TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    listen       TEXT NOT NULL,         -- the address its API serves on, as configured
    version      TEXT NOT NULL,
    started_at   TEXT NOT NULL,
    heartbeat_at TEXT NOT NULL,
    stopped_at   TEXT,                  -- a clean stop
    reaped_at    TEXT,                  -- when a live daemon took over its work
    reaped_by    TEXT
);
CREATE INDEX daemons_unreaped ON daemons(heartbeat_at) WHERE reaped_at IS NULL;

-- Things one daemon of the cluster holds at a time: `agent:<id>` (the daemon that runs the
-- agent's turns), `channel:<name>` (a poller the platform allows once). Renewed with the
-- holder's heartbeat; an expired lease is anyone's.
CREATE TABLE leases (
    name        TEXT PRIMARY KEY,
    holder      TEXT NOT NULL REFERENCES daemons(id),
    acquired_at TEXT NOT NULL,
    expires_at  TEXT NOT NULL
);
CREATE INDEX leases_by_holder ON leases(holder);

-- A turn asked of an agent whose lease another daemon holds: written here, run by the holder
-- (or whoever holds the lease next), its result written back for the asker.
CREATE TABLE cluster_turns (
    id          TEXT PRIMARY KEY,
    agent_id    TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    asked_by    TEXT NOT NULL,         -- the daemon waiting for the result
    request     TEXT NOT NULL,         -- the turn request (JSON)
    state       TEXT NOT NULL,         -- queued | running | done
    run_by      TEXT,                  -- the daemon running it
    attempts    INTEGER NOT NULL DEFAULT 0, -- times taken (a second is a retry after its runner died)
    result      TEXT,                  -- {"ok": TurnResult} | {"error": {kind, message}} (JSON)
    created_at  TEXT NOT NULL,
    finished_at TEXT
);
CREATE INDEX cluster_turns_queued ON cluster_turns(agent_id, created_at) WHERE state <> 'done';

-- Whose work a row is: the daemon run that started it.
ALTER TABLE turns ADD COLUMN daemon_id TEXT;
ALTER TABLE schedule_fires ADD COLUMN daemon_id TEXT;
ALTER TABLE a2a_tasks ADD COLUMN daemon_id TEXT;
ALTER TABLE agent_deliveries ADD COLUMN daemon_id TEXT;
