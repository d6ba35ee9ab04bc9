-- Every change an operator (dashboard) or an API token made, whatever its outcome: who, what,
-- on what, and how it ended. Tool calls have their own log (`audit`).
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
