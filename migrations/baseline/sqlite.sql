-- The schema SQLite's migrations 0001–0046 make, laid at once on a fresh database
-- (kernel/src/db/baseline.rs). Written by a test, never by hand: after a new migration,
-- KENNEL_WRITE_BASELINE=1 cargo test -p kennel-kernel --lib db::baseline
CREATE TABLE agent_types (
    name        TEXT PRIMARY KEY,
    manifest    TEXT NOT NULL,             -- validated manifest, JSON
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
, made_by TEXT);
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
, ephemeral INTEGER NOT NULL DEFAULT 0, paused_until TEXT, pause_reason TEXT, budget_lifted_at TEXT);
CREATE TABLE sessions (
    id          TEXT PRIMARY KEY,
    agent_id    TEXT NOT NULL REFERENCES agents(id),
    label       TEXT,
    created_at  TEXT NOT NULL
, provenance TEXT);
CREATE INDEX sessions_agent ON sessions(agent_id, created_at);
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
CREATE TABLE session_messages (
    session_id  TEXT NOT NULL REFERENCES sessions(id),
    seq         INTEGER NOT NULL,
    message     TEXT NOT NULL,             -- llm::Message as JSON: role, content, tool calls
    created_at  TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE TABLE operator_sessions (
    token_hash  TEXT PRIMARY KEY,
    operator    TEXT NOT NULL REFERENCES operators(name),
    csrf        TEXT NOT NULL,             -- the token every form of this sign-in must carry
    created_at  TEXT NOT NULL,
    expires_at  TEXT NOT NULL
);
CREATE TABLE trigger_state (
    agent_id    TEXT NOT NULL REFERENCES agents(id),
    trigger_key TEXT NOT NULL,             -- "<index>:<event pattern>" in the agent's manifest
    fires       INTEGER NOT NULL,
    last_fired  TEXT NOT NULL,
    PRIMARY KEY (agent_id, trigger_key)
);
CREATE TABLE workflows (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    description TEXT NOT NULL,
    steps       TEXT NOT NULL,             -- JSON array of steps
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE TABLE workflow_runs (
    id          TEXT PRIMARY KEY,
    workflow_id TEXT NOT NULL,             -- kept after the workflow is deleted, for history
    inputs      TEXT NOT NULL,
    status      TEXT NOT NULL,             -- running | succeeded | failed
    output      TEXT,
    error       TEXT,
    steps       TEXT NOT NULL,             -- JSON array: each step's agent, prompt, output, timing
    started_at  TEXT NOT NULL,
    finished_at TEXT
, daemon_id TEXT);
CREATE INDEX workflow_runs_by_workflow ON workflow_runs(workflow_id, started_at);
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
, owner TEXT, daemon_id TEXT);
CREATE TABLE tasks (
    id           TEXT PRIMARY KEY,          -- UUIDv7: orders by creation
    title        TEXT NOT NULL,
    body         TEXT NOT NULL,
    assignee     TEXT,                      -- agent id, or NULL for anyone
    priority     INTEGER NOT NULL,          -- 0 (lowest) to 9 (highest)
    status       TEXT NOT NULL,             -- pending | claimed | done | failed | cancelled
    claimed_by   TEXT,
    claimed_at   TEXT,
    retries      INTEGER NOT NULL DEFAULT 0,
    result       TEXT,
    posted_by    TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    completed_at TEXT
, changed_by TEXT);
CREATE INDEX tasks_claimable ON tasks(status, priority DESC, id);
CREATE TABLE task_events (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id  TEXT NOT NULL,
    at       TEXT NOT NULL,
    status   TEXT NOT NULL,                 -- the status it moved to
    actor    TEXT,                          -- who claimed it, or NULL
    retries  INTEGER NOT NULL
);
CREATE INDEX task_events_by_task ON task_events(task_id, id);
CREATE TRIGGER task_posted AFTER INSERT ON tasks BEGIN
    INSERT INTO task_events (task_id, at, status, actor, retries) VALUES (NEW.id, NEW.created_at, NEW.status, NEW.posted_by, NEW.retries);
END;
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
, lineage TEXT);
CREATE INDEX schedules_due ON schedules(next_fire) WHERE state = 'active';
CREATE INDEX schedules_by_agent ON schedules(agent_id, id);
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
, daemon_id TEXT);
CREATE INDEX schedule_fires_by_schedule ON schedule_fires(schedule_id, id);
CREATE TABLE schedule_seeds (
    agent_id TEXT PRIMARY KEY REFERENCES agents(id)
);
CREATE TABLE cached_tables_version (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL
);
CREATE TRIGGER agent_types_inserted AFTER INSERT ON agent_types BEGIN UPDATE cached_tables_version SET version = version + 1; END;
CREATE TRIGGER agent_types_updated AFTER UPDATE ON agent_types BEGIN UPDATE cached_tables_version SET version = version + 1; END;
CREATE TRIGGER agent_types_deleted AFTER DELETE ON agent_types BEGIN UPDATE cached_tables_version SET version = version + 1; END;
CREATE TRIGGER agents_inserted AFTER INSERT ON agents BEGIN UPDATE cached_tables_version SET version = version + 1; END;
CREATE TRIGGER agents_updated AFTER UPDATE ON agents BEGIN UPDATE cached_tables_version SET version = version + 1; END;
CREATE TRIGGER agents_deleted AFTER DELETE ON agents BEGIN UPDATE cached_tables_version SET version = version + 1; END;
CREATE TRIGGER api_tokens_inserted AFTER INSERT ON api_tokens BEGIN UPDATE cached_tables_version SET version = version + 1; END;
CREATE TRIGGER api_tokens_updated AFTER UPDATE ON api_tokens BEGIN UPDATE cached_tables_version SET version = version + 1; END;
CREATE TRIGGER api_tokens_deleted AFTER DELETE ON api_tokens BEGIN UPDATE cached_tables_version SET version = version + 1; END;
CREATE TABLE artifact_owners (
    agent_id    TEXT NOT NULL,
    artifact_id TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    PRIMARY KEY (agent_id, artifact_id)
);
CREATE UNIQUE INDEX agents_running_name ON agents(name) WHERE status = 'running';
CREATE INDEX a2a_tasks_listing ON a2a_tasks(agent_id, owner, updated_at DESC, id DESC);
CREATE TABLE canvases (
    agent_id   TEXT NOT NULL,
    version    INTEGER NOT NULL,
    title      TEXT NOT NULL,
    html       TEXT NOT NULL,
    bytes      INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (agent_id, version)
);
CREATE TABLE session_failures (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    after_seq  INTEGER NOT NULL,
    kind       TEXT NOT NULL,
    message    TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX session_failures_by_session ON session_failures(session_id, after_seq);
CREATE TABLE operator_actions (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    at      TEXT NOT NULL,
    actor   TEXT NOT NULL,   -- operator:NAME | token:NAME | cli
    action  TEXT NOT NULL,   -- agent.stop, type.update, … (or METHOD /route for an unnamed one)
    subject TEXT,            -- the agent, type, task, schedule or token acted on
    outcome TEXT NOT NULL,   -- ok | an error kind | an HTTP status in words
    detail  TEXT
);
CREATE INDEX operator_actions_by_actor ON operator_actions(actor, id);
CREATE INDEX operator_actions_by_action ON operator_actions(action, id);
CREATE INDEX sessions_label ON sessions(label, created_at);
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
CREATE TABLE turns (
    id          TEXT PRIMARY KEY,
    agent_id    TEXT NOT NULL REFERENCES agents(id),
    session_id  TEXT NOT NULL REFERENCES sessions(id),
    started_at  TEXT NOT NULL,
    ended_at    TEXT,
    -- reply | iteration_cap | cancelled | failed | interrupted
    ended       TEXT
, daemon_id TEXT);
CREATE INDEX turns_open ON turns(ended_at) WHERE ended_at IS NULL;
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
, cache_write_tokens INTEGER NOT NULL DEFAULT 0, usage_estimated INTEGER NOT NULL DEFAULT 0);
CREATE INDEX model_calls_by_session ON model_calls(session_id, id);
CREATE TABLE model_windows (
    provider   TEXT NOT NULL,
    model      TEXT NOT NULL,
    tokens     INTEGER NOT NULL,
    learned_at TEXT NOT NULL,
    PRIMARY KEY (provider, model)
);
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
, daemon_id TEXT, taint TEXT);
CREATE INDEX model_calls_by_time ON model_calls(created_at);
CREATE INDEX model_calls_by_agent ON model_calls(agent_id, created_at);
CREATE TABLE memory_kv (
    agent_id   TEXT NOT NULL,
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL, provenance TEXT,
    PRIMARY KEY (agent_id, key)
);
CREATE TABLE memories (
    id           TEXT PRIMARY KEY,
    agent_id     TEXT NOT NULL,
    content      TEXT NOT NULL,
    category     TEXT NOT NULL,
    -- How it came: `tool` (memory_semantic_add), `turn` (auto-memorize), `operator`.
    source       TEXT NOT NULL,
    confidence   REAL NOT NULL,
    hits         INTEGER NOT NULL DEFAULT 0,
    created_at   TEXT NOT NULL,
    accessed_at  TEXT NOT NULL,
    embedder     TEXT NOT NULL,
    embedding    BLOB NOT NULL,
    forgotten_at TEXT,
    forgotten_by TEXT,
    merged_into  TEXT
);
CREATE INDEX memories_by_agent ON memories(agent_id, created_at);
CREATE TABLE knowledge_entities (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id    TEXT NOT NULL,
    name        TEXT NOT NULL,
    entity_type TEXT NOT NULL,
    attributes  TEXT NOT NULL,   -- a JSON object
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    UNIQUE (agent_id, name)
);
CREATE INDEX knowledge_entities_by_agent ON knowledge_entities(agent_id, id);
CREATE TABLE knowledge_relations (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id      TEXT NOT NULL,
    from_id       INTEGER NOT NULL REFERENCES knowledge_entities(id),
    to_id         INTEGER NOT NULL REFERENCES knowledge_entities(id),
    relation_type TEXT NOT NULL,
    weight        REAL NOT NULL,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL,
    UNIQUE (from_id, to_id, relation_type)
);
CREATE INDEX knowledge_relations_to ON knowledge_relations(to_id);
CREATE INDEX knowledge_relations_by_agent ON knowledge_relations(agent_id, id);
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
CREATE TABLE skill_history (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    skill        TEXT NOT NULL,
    version      INTEGER NOT NULL,
    op           TEXT NOT NULL,   -- create, update, patch, write_file, remove_file, rollback, delete, restore
    actor        TEXT NOT NULL,   -- who: "agent NAME (ID)" or "operator NAME"
    at           TEXT NOT NULL,
    content_hash TEXT NOT NULL,   -- sha256 of the manifest and body after the operation
    diff         TEXT NOT NULL,   -- unified diff of what changed (the body, or the support file)
    detail       TEXT,            -- the file of a file operation, the strategy of a patch, the version rolled back to
    manifest     TEXT NOT NULL,   -- the manifest (TOML) after the operation
    body         TEXT NOT NULL, agent_id TEXT,   -- the body after the operation
    UNIQUE (skill, version)
);
CREATE TABLE channel_inbound (
    channel      TEXT NOT NULL,
    message_id   TEXT NOT NULL,
    chat_id      TEXT NOT NULL,
    chat_title   TEXT,
    is_group     INTEGER NOT NULL,
    user_id      TEXT NOT NULL,
    display_name TEXT NOT NULL,
    username     TEXT,
    text         TEXT NOT NULL,
    received_at  TEXT NOT NULL,
    state        TEXT NOT NULL,   -- pending, answered, delivered (deliver_only), failed
    detail       TEXT,            -- why it failed
    PRIMARY KEY (channel, message_id)
);
CREATE INDEX channel_inbound_pending ON channel_inbound(state) WHERE state = 'pending';
CREATE INDEX channel_inbound_recent ON channel_inbound(channel, received_at);
CREATE TABLE channel_conversations (
    channel    TEXT NOT NULL,
    chat_id    TEXT NOT NULL,
    title      TEXT,
    is_group   INTEGER NOT NULL,
    last_at    TEXT NOT NULL,
    PRIMARY KEY (channel, chat_id)
);
CREATE TABLE channel_members (
    channel      TEXT NOT NULL,
    chat_id      TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    display_name TEXT NOT NULL,
    username     TEXT,
    last_seen    TEXT NOT NULL,
    PRIMARY KEY (channel, chat_id, user_id)
);
CREATE TABLE channel_outbound (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    channel  TEXT NOT NULL,
    chat_id  TEXT NOT NULL,
    kind     TEXT NOT NULL,       -- text, image, file, poll
    summary  TEXT NOT NULL,       -- the text, a caption or file name, a poll's question
    sent_by  TEXT NOT NULL,       -- reply, agent:NAME, schedule:ID, deliver_only
    at       TEXT NOT NULL,
    outcome  TEXT NOT NULL        -- ok, or why it failed
);
CREATE INDEX channel_outbound_recent ON channel_outbound(channel, id);
CREATE TABLE inbox_notes (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    at          TEXT NOT NULL,
    source      TEXT NOT NULL,   -- agent (notify_owner) or budget
    agent_id    TEXT,
    agent_name  TEXT,
    reason      TEXT NOT NULL,
    summary     TEXT NOT NULL,
    urgency     TEXT NOT NULL,   -- low, normal, high, critical
    telegram    TEXT             -- the fan-out to [notify] telegram_channel: NULL (not sent), ok, or why it failed
, email TEXT);
CREATE INDEX inbox_notes_by_agent ON inbox_notes(agent_id, id);
CREATE TABLE inbox_reads (
    note_id  INTEGER NOT NULL REFERENCES inbox_notes(id) ON DELETE CASCADE,
    reader   TEXT NOT NULL,      -- operator:NAME, token:NAME or cli
    read_at  TEXT NOT NULL,
    PRIMARY KEY (note_id, reader)
);
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
CREATE TABLE leases (
    name        TEXT PRIMARY KEY,
    holder      TEXT NOT NULL REFERENCES daemons(id),
    acquired_at TEXT NOT NULL,
    expires_at  TEXT NOT NULL
);
CREATE INDEX leases_by_holder ON leases(holder);
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
, cancelled INTEGER NOT NULL DEFAULT 0);
CREATE INDEX cluster_turns_queued ON cluster_turns(agent_id, created_at) WHERE state <> 'done';
CREATE TABLE mcp_offers (
    server     TEXT PRIMARY KEY,
    daemon_id  TEXT NOT NULL,         -- the daemon running the server
    offer      TEXT NOT NULL,         -- its handshake and tools, schemas included (JSON)
    updated_at TEXT NOT NULL
);
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
CREATE TABLE agent_bindings (
    binding  TEXT PRIMARY KEY,        -- channel:NAME | a2a:NAME
    name     TEXT NOT NULL,           -- the agent's name in config.toml when it was bound
    agent_id TEXT NOT NULL,
    bound_at TEXT NOT NULL
);
CREATE TABLE skill_proposals (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    skill        TEXT NOT NULL,
    op           TEXT NOT NULL,   -- create, update, patch or rollback
    base_version INTEGER NOT NULL,
    agent_id     TEXT NOT NULL,
    agent_name   TEXT NOT NULL,
    at           TEXT NOT NULL,
    reason       TEXT NOT NULL,   -- why it is a proposal and not a change
    diff         TEXT NOT NULL,
    detail       TEXT,            -- the strategy of a patch, the version rolled back to
    manifest     TEXT NOT NULL,
    body         TEXT NOT NULL,
    state        TEXT NOT NULL,   -- pending, accepted or rejected
    decided_by   TEXT,
    decided_at   TEXT,
    version      INTEGER          -- the skill's version an accepted proposal made
);
CREATE INDEX skill_proposals_pending ON skill_proposals(state, id);
CREATE INDEX skill_proposals_by_agent ON skill_proposals(agent_id, state);
CREATE INDEX channel_inbound_by_time ON channel_inbound(received_at);
CREATE INDEX channel_outbound_by_time ON channel_outbound(at);
CREATE INDEX media_jobs_by_time ON media_jobs(updated_at);
CREATE INDEX a2a_tasks_by_time ON a2a_tasks(updated_at);
CREATE TABLE questions (
    id TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL,
    daemon_id TEXT NOT NULL,
    -- The question as JSON, as GET /api/questions shows it.
    question TEXT NOT NULL,
    -- Where a question asked on a channel waits: its answer is the next message there from
    -- the person asked (user_id; any member when NULL).
    channel TEXT,
    chat TEXT,
    user_id TEXT,
    -- The answer as JSON, once given.
    answer TEXT
);
CREATE INDEX questions_agent ON questions (agent_id);
CREATE INDEX questions_conversation ON questions (channel, chat);
CREATE INDEX questions_daemon ON questions (daemon_id);
CREATE TABLE usage_days (
    day                TEXT NOT NULL,   -- YYYY-MM-DD, UTC
    agent_id           TEXT NOT NULL,
    session_id         TEXT NOT NULL,
    provider           TEXT NOT NULL,
    model              TEXT NOT NULL,
    calls              INTEGER NOT NULL,
    input_tokens       INTEGER NOT NULL,
    output_tokens      INTEGER NOT NULL,
    cached_tokens      INTEGER NOT NULL,
    cache_write_tokens INTEGER NOT NULL, estimated_calls INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (day, agent_id, session_id, provider, model)
);
CREATE INDEX operator_sessions_by_expiry ON operator_sessions(expires_at);
CREATE TRIGGER operator_sessions_deleted AFTER DELETE ON operator_sessions BEGIN UPDATE cached_tables_version SET version = version + 1; END;
CREATE TRIGGER task_changed AFTER UPDATE OF status, assignee ON tasks BEGIN
    INSERT INTO task_events (task_id, at, status, actor, retries) VALUES (NEW.id, NEW.updated_at, NEW.status, COALESCE(NEW.changed_by, NEW.claimed_by, NEW.assignee), NEW.retries);
END;
CREATE TABLE approvals (
    id TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL,
    agent TEXT NOT NULL,
    session_id TEXT,
    turn_id TEXT,
    -- The daemon whose turn waits: it is woken when another daemon takes the decision.
    daemon_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    -- The exact arguments as JSON: what the person approves.
    arguments TEXT NOT NULL,
    -- The turn's provenance labels as JSON: why it counts as tainted.
    provenance TEXT NOT NULL,
    rule TEXT NOT NULL,
    reason TEXT NOT NULL,
    requested_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    -- pending, approved, denied, expired
    status TEXT NOT NULL DEFAULT 'pending',
    decided_by TEXT,
    decided_at TEXT,
    note TEXT,
    allow_until TEXT
, parked TEXT, resumed_by TEXT, outcome TEXT, resumed_at TEXT, owner_code TEXT);
CREATE INDEX approvals_status ON approvals (status, agent_id);
CREATE INDEX approvals_standing ON approvals (agent_id, tool, rule, allow_until);
CREATE INDEX approvals_parked ON approvals (status, resumed_at) WHERE parked IS NOT NULL;
CREATE TABLE approval_targets (
    agent_id TEXT NOT NULL,
    target TEXT NOT NULL,
    first_at TEXT NOT NULL,
    PRIMARY KEY (agent_id, target)
);
INSERT INTO "cached_tables_version" VALUES (1, 0);
