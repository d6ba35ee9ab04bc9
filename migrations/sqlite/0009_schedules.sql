-- Schedules (spec §11): one-shot turns and cron jobs, from manifests ([[cron]]) and from the
-- schedule tools, in one store. The scheduler reads due rows straight from here, so what it
-- fires is always what is stored.
CREATE TABLE schedules (
    id          TEXT PRIMARY KEY,          -- UUIDv7
    agent_id    TEXT NOT NULL REFERENCES agents(id),
    kind        TEXT NOT NULL,             -- once | cron
    origin      TEXT NOT NULL,             -- manifest | runtime
    expression  TEXT,                      -- cron: 5-field expression
    timezone    TEXT,                      -- cron: IANA name, NULL = UTC
    run_at      TEXT,                      -- once: when it fires
    prompt      TEXT NOT NULL,
    channel     TEXT,
    state       TEXT NOT NULL,             -- active | paused | done
    next_fire   TEXT,                      -- set while active (RFC 3339 UTC, millis)
    created_by  TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE INDEX schedules_due ON schedules(next_fire) WHERE state = 'active';
CREATE INDEX schedules_by_agent ON schedules(agent_id, id);

-- Each fire: when it was due, when it started, how it ended. `missed_slots` counts fire
-- times that passed unfired (the daemon was down) and were folded into this one fire.
CREATE TABLE schedule_fires (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    schedule_id  TEXT NOT NULL REFERENCES schedules(id) ON DELETE CASCADE,
    due_at       TEXT NOT NULL,
    fired_at     TEXT NOT NULL,
    finished_at  TEXT,                     -- when the turn ended (it may wait for a free slot first)
    outcome      TEXT NOT NULL,            -- running | ok | failed | skipped | interrupted
    detail       TEXT,
    session_id   TEXT,
    duration_ms  INTEGER,                  -- how long the turn itself took
    missed_slots INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX schedule_fires_by_schedule ON schedule_fires(schedule_id, id);

-- Agents whose manifest [[cron]] blocks have been copied into `schedules`. Copied once, so
-- a manifest job an operator deleted does not come back at the next start.
CREATE TABLE schedule_seeds (
    agent_id TEXT PRIMARY KEY REFERENCES agents(id)
);
