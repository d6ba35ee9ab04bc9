-- Agents' subprocesses (spec §10): one row per process_start, written when the child runs and
-- finished when it ends. Output lives in memory only. `run_id` is the daemon run that
-- started it, `owner_pid`/`owner_ticks` that daemon; at start the reaper kills groups a run
-- no longer running left recorded as running (`ended_at` NULL), when `pgid`, `start_ticks`
-- and `boot_id` (or, the leader gone, a member's `KENNEL_PROCESS=marker`) name the same group.
CREATE TABLE processes (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id    TEXT NOT NULL,
    run_id      TEXT NOT NULL,
    command     TEXT NOT NULL,
    cwd         TEXT NOT NULL,
    pgid        INTEGER NOT NULL,
    start_ticks INTEGER NOT NULL,
    boot_id     TEXT NOT NULL,
    marker      TEXT NOT NULL,
    owner_pid   INTEGER NOT NULL,
    owner_ticks INTEGER NOT NULL,
    started_at  TEXT NOT NULL,
    ended_at    TEXT,
    exit_code   INTEGER,
    signal      INTEGER,
    ended       TEXT
);
CREATE INDEX processes_by_agent ON processes(agent_id, id);
CREATE INDEX processes_running ON processes(ended_at, run_id);
