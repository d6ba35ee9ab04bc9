-- Approvals (issue 48): a call a rule sends to a person waits as a row here until an operator
-- or the CLI decides it, or it times out; the row stays as the record of who decided what.
-- An approval "for N minutes" lets the same agent's calls of the same tool under the same
-- rule through until allow_until.
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
);
CREATE INDEX approvals_status ON approvals (status, agent_id);
CREATE INDEX approvals_standing ON approvals (agent_id, tool, rule, allow_until);
-- What untrusted sources each session's model has read, as JSON labels (NULL: none).
ALTER TABLE sessions ADD COLUMN provenance TEXT;
-- The provenance labels an async agent_send's sender had (JSON; NULL: none): the receiver's
-- turn starts with them, so a page cannot act through a second agent.
ALTER TABLE agent_deliveries ADD COLUMN taint TEXT;
