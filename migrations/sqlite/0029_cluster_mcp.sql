-- A stdio MCP server runs on one daemon of a cluster, the holder of the lease `mcp:<server>`
-- (issue 27). The holder writes what the server offers here, so every daemon offers the same
-- tools; the other daemons' calls to it go through `cluster_calls`.
CREATE TABLE mcp_offers (
    server     TEXT PRIMARY KEY,
    daemon_id  TEXT NOT NULL,         -- the daemon running the server
    offer      TEXT NOT NULL,         -- its handshake and tools, schemas included (JSON)
    updated_at TEXT NOT NULL
);

-- A request for the holder of `lease` (an MCP tool call, a resource read): written by the
-- daemon asking, run once by the holder, its result written back. A request whose runner
-- dies is not run again (a tool call may have had effects): it fails with why.
CREATE TABLE cluster_calls (
    id          TEXT PRIMARY KEY,
    lease       TEXT NOT NULL,
    asked_by    TEXT NOT NULL,         -- the daemon waiting for the result
    request     TEXT NOT NULL,         -- JSON
    state       TEXT NOT NULL,         -- queued | running | done
    run_by      TEXT,
    result      TEXT,                  -- {"ok": value} | {"error": {kind, message}} (JSON)
    created_at  TEXT NOT NULL,
    finished_at TEXT
);
CREATE INDEX cluster_calls_queued ON cluster_calls(lease, created_at) WHERE state <> 'done';
