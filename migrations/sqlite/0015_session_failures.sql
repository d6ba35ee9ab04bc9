-- A turn that failed (the provider unreachable, a key missing, …): kept with its session, after
-- the message it left unanswered, so a chat reopened later shows why nothing answered.
CREATE TABLE session_failures (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    after_seq  INTEGER NOT NULL,
    kind       TEXT NOT NULL,
    message    TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX session_failures_by_session ON session_failures(session_id, after_seq);
