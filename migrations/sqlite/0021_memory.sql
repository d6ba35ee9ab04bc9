-- Memory (issue 19): two stores, kept apart as the spec keeps them.

-- The key/value store: exact keys per agent.
CREATE TABLE memory_kv (
    agent_id   TEXT NOT NULL,
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (agent_id, key)
);

-- The semantic store. A memory is never deleted by an agent: forgetting sets
-- `forgotten_at`, a merge sets `merged_into` (the memory that replaced it), and only rows
-- with neither are searched or recalled. `embedding` is the vector of `embedder` (the
-- local embedder's sparse features, or a provider's dense floats), little-endian.
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
