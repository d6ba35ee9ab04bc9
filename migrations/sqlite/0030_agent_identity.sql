-- Agents act as each other no more (issue 42). A channel or an A2A exposure is bound to an
-- agent's id the first time its configured name is resolved; a later agent of that name
-- inherits nothing.
CREATE TABLE agent_bindings (
    binding  TEXT PRIMARY KEY,        -- channel:NAME | a2a:NAME
    name     TEXT NOT NULL,           -- the agent's name in config.toml when it was bound
    agent_id TEXT NOT NULL,
    bound_at TEXT NOT NULL
);

-- The agent that made a type with agent_type_create (NULL: an operator).
ALTER TABLE agent_types ADD COLUMN made_by TEXT;

-- A schedule made in a turn keeps that turn's depth, chain and conversation (JSON; NULL for an
-- operator's or a manifest's): its fires run one level deeper and answer only there.
ALTER TABLE schedules ADD COLUMN lineage TEXT;
