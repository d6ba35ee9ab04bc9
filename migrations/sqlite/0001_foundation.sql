-- Kernel foundation: agent types, agents, sessions, operators, API tokens, the audit log.
-- Timestamps are RFC 3339 UTC text; ids are UUIDv7 text. Portable SQL where possible.

CREATE TABLE agent_types (
    name        TEXT PRIMARY KEY,
    manifest    TEXT NOT NULL,             -- validated manifest, JSON
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);

CREATE TABLE agents (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    agent_type  TEXT NOT NULL,             -- the type it was made from (may since be deleted)
    manifest    TEXT NOT NULL,             -- the agent's own copy, grants included, JSON
    goal        TEXT,
    status      TEXT NOT NULL,             -- running | stopped
    parent_id   TEXT REFERENCES agents(id),
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
-- A running agent's name is unique; stopped agents keep theirs for history.
CREATE UNIQUE INDEX agents_running_name ON agents(name) WHERE status <> 'stopped';

CREATE TABLE sessions (
    id          TEXT PRIMARY KEY,
    agent_id    TEXT NOT NULL REFERENCES agents(id),
    label       TEXT,
    created_at  TEXT NOT NULL
);
CREATE INDEX sessions_agent ON sessions(agent_id, created_at);

-- Tools a lazy-mode session has loaded with tool_load (spec §1).
CREATE TABLE session_loaded_tools (
    session_id  TEXT NOT NULL REFERENCES sessions(id),
    tool        TEXT NOT NULL,
    loaded_at   TEXT NOT NULL,
    PRIMARY KEY (session_id, tool)
);

CREATE TABLE operators (
    name          TEXT PRIMARY KEY,
    password_hash TEXT NOT NULL,           -- argon2id PHC string
    created_at    TEXT NOT NULL
);

CREATE TABLE api_tokens (
    name        TEXT PRIMARY KEY,
    token_hash  TEXT NOT NULL UNIQUE,      -- sha256 of the token, hex; the token is never stored
    created_at  TEXT NOT NULL
);

CREATE TABLE audit (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    at          TEXT NOT NULL,
    agent_id    TEXT NOT NULL,
    session_id  TEXT,
    caller      TEXT NOT NULL,             -- agent | operator:NAME | token:NAME
    tool        TEXT NOT NULL,
    args_digest TEXT NOT NULL,             -- sha256 of the arguments, hex prefix
    outcome     TEXT NOT NULL,             -- ok | an error kind
    message     TEXT,
    duration_us INTEGER NOT NULL,
    artifact_id TEXT                       -- set when the result spilled
);
CREATE INDEX audit_agent ON audit(agent_id, id);
CREATE INDEX audit_tool ON audit(tool, id);
