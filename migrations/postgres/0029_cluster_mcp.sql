-- A stdio MCP server runs on one daemon of a cluster, the holder of the lease `mcp:<server>`
-- (issue 27). The holder writes what the server offers here, so every daemon offers the same
-- tools; the other daemons' calls to it go through `cluster_calls`.
CREATE TABLE mcp_offers (
    server     TEXT COLLATE "C" PRIMARY KEY,
    daemon_id  TEXT COLLATE "C" NOT NULL,         -- the daemon running the server
    offer      TEXT COLLATE "C" NOT NULL,         -- its handshake and tools, schemas included (JSON)
    updated_at TEXT COLLATE "C" NOT NULL
);

-- A request for the holder of `lease` (an MCP tool call, a resource read): written by the
-- daemon asking, run once by the holder, its result written back. A request whose runner
-- dies is not run again (a tool call may have had effects): it fails with why.
CREATE TABLE cluster_calls (
    id          TEXT COLLATE "C" PRIMARY KEY,
    lease       TEXT COLLATE "C" NOT NULL,
    asked_by    TEXT COLLATE "C" NOT NULL,         -- the daemon waiting for the result
    request     TEXT COLLATE "C" NOT NULL,         -- JSON
    state       TEXT COLLATE "C" NOT NULL,         -- queued | running | done
    run_by      TEXT COLLATE "C",
    result      TEXT COLLATE "C",                  -- {"ok": value} | {"error": {kind, message}} (JSON)
    created_at  TEXT COLLATE "C" NOT NULL,
    finished_at TEXT COLLATE "C"
);
CREATE INDEX cluster_calls_queued ON cluster_calls(lease, created_at) WHERE state <> 'done';
