-- Approvals (issue 48): a call a rule sends to a person waits as a row here until an operator
-- or the CLI decides it, or it times out; the row stays as the record of who decided what.
-- An approval "for N minutes" lets the same agent's calls of the same tool under the same
-- rule through until allow_until.
CREATE TABLE approvals (
    id TEXT COLLATE "C" PRIMARY KEY,
    agent_id TEXT COLLATE "C" NOT NULL,
    agent TEXT COLLATE "C" NOT NULL,
    session_id TEXT COLLATE "C",
    turn_id TEXT COLLATE "C",
    -- The daemon whose turn waits: it is woken when another daemon takes the decision.
    daemon_id TEXT COLLATE "C" NOT NULL,
    tool TEXT COLLATE "C" NOT NULL,
    -- The exact arguments as JSON: what the person approves.
    arguments TEXT COLLATE "C" NOT NULL,
    -- The turn's provenance labels as JSON: why it counts as tainted.
    provenance TEXT COLLATE "C" NOT NULL,
    rule TEXT COLLATE "C" NOT NULL,
    reason TEXT COLLATE "C" NOT NULL,
    requested_at TEXT COLLATE "C" NOT NULL,
    expires_at TEXT COLLATE "C" NOT NULL,
    -- pending, approved, denied, expired
    status TEXT COLLATE "C" NOT NULL DEFAULT 'pending',
    decided_by TEXT COLLATE "C",
    decided_at TEXT COLLATE "C",
    note TEXT COLLATE "C",
    allow_until TEXT COLLATE "C"
);
CREATE INDEX approvals_status ON approvals (status, agent_id);
CREATE INDEX approvals_standing ON approvals (agent_id, tool, rule, allow_until);
-- What untrusted sources each session's model has read, as JSON labels (NULL: none).
ALTER TABLE sessions ADD COLUMN provenance TEXT COLLATE "C";
-- The provenance labels an async agent_send's sender had (JSON; NULL: none): the receiver's
-- turn starts with them, so a page cannot act through a second agent.
ALTER TABLE agent_deliveries ADD COLUMN taint TEXT COLLATE "C";
