-- Compactions of a session (issue 16): the view every later model call starts from. A
-- summary stands for every message up to `summary_through`; tool results up to
-- `stubbed_through` are sent as stubs. The stored messages themselves are never changed.
CREATE TABLE session_compactions (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id      TEXT NOT NULL REFERENCES sessions(id),
    summary         TEXT,
    summary_through INTEGER NOT NULL,
    stubbed_through INTEGER NOT NULL,
    -- how many stored messages the summary and the stubs stand for, for the chat's marker
    summarised      INTEGER NOT NULL,
    stubbed         INTEGER NOT NULL,
    created_at      TEXT NOT NULL
);
CREATE INDEX session_compactions_by_session ON session_compactions(session_id, id);

-- Every turn, from its start: one still open at start-up was cut off by a stop or a crash.
CREATE TABLE turns (
    id          TEXT PRIMARY KEY,
    agent_id    TEXT NOT NULL REFERENCES agents(id),
    session_id  TEXT NOT NULL REFERENCES sessions(id),
    started_at  TEXT NOT NULL,
    ended_at    TEXT,
    -- reply | iteration_cap | cancelled | failed | interrupted
    ended       TEXT
);
CREATE INDEX turns_open ON turns(ended_at) WHERE ended_at IS NULL;

-- Every model call: what it sent (the compaction it started from, the first stored message
-- after it, its estimate), and what the provider counted.
CREATE TABLE model_calls (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    turn_id          TEXT NOT NULL,
    agent_id         TEXT NOT NULL,
    session_id       TEXT NOT NULL,
    provider         TEXT NOT NULL,
    model            TEXT NOT NULL,
    -- reply | summary
    purpose          TEXT NOT NULL,
    compaction_id    INTEGER,
    first_seq        INTEGER,
    messages         INTEGER NOT NULL,
    estimated_tokens INTEGER NOT NULL,
    input_tokens     INTEGER NOT NULL,
    output_tokens    INTEGER NOT NULL,
    cached_tokens    INTEGER NOT NULL,
    -- ok, or the error's kind
    outcome          TEXT NOT NULL,
    created_at       TEXT NOT NULL
);
CREATE INDEX model_calls_by_session ON model_calls(session_id, id);

-- Context windows learned from providers' refusals, for models nobody configured.
CREATE TABLE model_windows (
    provider   TEXT NOT NULL,
    model      TEXT NOT NULL,
    tokens     INTEGER NOT NULL,
    learned_at TEXT NOT NULL,
    PRIMARY KEY (provider, model)
);

-- Async agent_send deliveries in flight: a restart delivers a reply already written, retries
-- an interrupted turn once, then tells the sender it was interrupted.
CREATE TABLE agent_deliveries (
    id          TEXT PRIMARY KEY,
    from_agent  TEXT NOT NULL,
    reply_to    TEXT NOT NULL REFERENCES sessions(id),
    to_agent    TEXT NOT NULL,
    session_id  TEXT NOT NULL REFERENCES sessions(id),
    message     TEXT NOT NULL,
    depth       INTEGER NOT NULL,
    chain       TEXT NOT NULL,
    attempts    INTEGER NOT NULL,
    -- the text for the sender once the receiver's turn ended
    reply       TEXT,
    created_at  TEXT NOT NULL
);

-- Agents spawned for one workflow step: hidden from default lists, removed after
-- [kernel] ephemeral_retention_hours once stopped.
ALTER TABLE agents ADD COLUMN ephemeral INTEGER NOT NULL DEFAULT 0;
