-- canvas_present: every version an agent presented, kept so older versions stay browsable.
CREATE TABLE canvases (
    agent_id   TEXT NOT NULL,
    version    INTEGER NOT NULL,
    title      TEXT NOT NULL,
    html       TEXT NOT NULL,
    bytes      INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (agent_id, version)
);
