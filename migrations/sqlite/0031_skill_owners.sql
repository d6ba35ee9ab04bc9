-- Skills have owners (issue 42). The agent whose change a history row records (NULL: a
-- person, or an accepted proposal, which an operator vetted): a skill's maker is its last
-- `create` row's. Rows from before this column carry the agent's id in their label,
-- "agent NAME (ID)".
ALTER TABLE skill_history ADD COLUMN agent_id TEXT;
UPDATE skill_history SET agent_id = substr(actor, length(actor) - 36, 36)
    WHERE actor LIKE 'agent % (%)' AND length(actor) > 40;

-- An agent's change to a skill it may not change itself (one an operator made, or another
-- agent; one other agents load): kept here until an operator accepts or rejects it, and in
-- no prompt before. `manifest` and `body` are the skill as the change would leave it,
-- `base_version` the version it was made against (0: no skill yet), `diff` from that.
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
