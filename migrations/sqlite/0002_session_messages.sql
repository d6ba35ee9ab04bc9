-- Every message of a session, in order, exactly as the model saw it (spec: sessions persist).
CREATE TABLE session_messages (
    session_id  TEXT NOT NULL REFERENCES sessions(id),
    seq         INTEGER NOT NULL,
    message     TEXT NOT NULL,             -- llm::Message as JSON: role, content, tool calls
    created_at  TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
