-- How often each [[trigger]] of each agent has fired, for max_fires and cooldown_secs.
CREATE TABLE trigger_state (
    agent_id    TEXT NOT NULL REFERENCES agents(id),
    trigger_key TEXT NOT NULL,             -- "<index>:<event pattern>" in the agent's manifest
    fires       INTEGER NOT NULL,
    last_fired  TEXT NOT NULL,
    PRIMARY KEY (agent_id, trigger_key)
);
