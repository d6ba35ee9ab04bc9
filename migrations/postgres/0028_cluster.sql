-- Several daemons on one database (issue 27). Each run of a daemon is a row: a new id per
-- start, its heartbeat moved every third of `[cluster] lease_ms`. A daemon whose heartbeat is
-- older than the lease, or that stopped, is dead; the first live daemon to notice reaps it
-- (`reaped_at`): its fires and turns are marked interrupted, its A2A tasks failed, its
-- agent_send deliveries and its leases taken over.
CREATE TABLE daemons (
    id           TEXT COLLATE "C" PRIMARY KEY,
    host         TEXT COLLATE "C" NOT NULL,
    pid          BIGINT NOT NULL,
    listen       TEXT COLLATE "C" NOT NULL,         -- the address its API serves on, as configured
    version      TEXT COLLATE "C" NOT NULL,
    started_at   TEXT COLLATE "C" NOT NULL,
    heartbeat_at TEXT COLLATE "C" NOT NULL,
    stopped_at   TEXT COLLATE "C",                  -- a clean stop
    reaped_at    TEXT COLLATE "C",                  -- when a live daemon took over its work
    reaped_by    TEXT COLLATE "C"
);
CREATE INDEX daemons_unreaped ON daemons(heartbeat_at) WHERE reaped_at IS NULL;

-- Things one daemon of the cluster holds at a time: `agent:<id>` (the daemon that runs the
-- agent's turns), `channel:<name>` (a poller the platform allows once). Renewed with the
-- holder's heartbeat; an expired lease is anyone's.
CREATE TABLE leases (
    name        TEXT COLLATE "C" PRIMARY KEY,
    holder      TEXT COLLATE "C" NOT NULL REFERENCES daemons(id) DEFERRABLE,
    acquired_at TEXT COLLATE "C" NOT NULL,
    expires_at  TEXT COLLATE "C" NOT NULL
);
CREATE INDEX leases_by_holder ON leases(holder);

-- A turn asked of an agent whose lease another daemon holds: written here, run by the holder
-- (or whoever holds the lease next), its result written back for the asker.
CREATE TABLE cluster_turns (
    id          TEXT COLLATE "C" PRIMARY KEY,
    agent_id    TEXT COLLATE "C" NOT NULL REFERENCES agents(id) ON DELETE CASCADE DEFERRABLE,
    asked_by    TEXT COLLATE "C" NOT NULL,         -- the daemon waiting for the result
    request     TEXT COLLATE "C" NOT NULL,         -- the turn request (JSON)
    state       TEXT COLLATE "C" NOT NULL,         -- queued | running | done
    run_by      TEXT COLLATE "C",                  -- the daemon running it
    attempts    BIGINT NOT NULL DEFAULT 0, -- times taken (a second is a retry after its runner died)
    result      TEXT COLLATE "C",                  -- {"ok": TurnResult} | {"error": {kind, message}} (JSON)
    created_at  TEXT COLLATE "C" NOT NULL,
    finished_at TEXT COLLATE "C"
);
CREATE INDEX cluster_turns_queued ON cluster_turns(agent_id, created_at) WHERE state <> 'done';

-- Whose work a row is: the daemon run that started it.
ALTER TABLE turns ADD COLUMN daemon_id TEXT COLLATE "C";
ALTER TABLE schedule_fires ADD COLUMN daemon_id TEXT COLLATE "C";
ALTER TABLE a2a_tasks ADD COLUMN daemon_id TEXT COLLATE "C";
ALTER TABLE agent_deliveries ADD COLUMN daemon_id TEXT COLLATE "C";
