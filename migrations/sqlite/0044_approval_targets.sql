-- Where each agent has sent (issue 48, `when = "new_target"`): a channel chat or member, a
-- remote agent, a web host. A tainted turn's call to a target not here waits for a person;
-- once let through, the target is here.
CREATE TABLE approval_targets (
    agent_id TEXT NOT NULL,
    target TEXT NOT NULL,
    first_at TEXT NOT NULL,
    PRIMARY KEY (agent_id, target)
);
