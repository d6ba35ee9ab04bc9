-- The owner inbox (spec §14 notify_owner): notes for the daemon's operators from agents and
-- from the daemon itself (budget pauses). Never part of any chat history. One inbox for all
-- operators; each reader's read state is their own.
CREATE TABLE inbox_notes (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    at          TEXT NOT NULL,
    source      TEXT NOT NULL,   -- agent (notify_owner) or budget
    agent_id    TEXT,
    agent_name  TEXT,
    reason      TEXT NOT NULL,
    summary     TEXT NOT NULL,
    urgency     TEXT NOT NULL,   -- low, normal, high, critical
    telegram    TEXT             -- the fan-out to [notify] telegram_channel: NULL (not sent), ok, or why it failed
);
CREATE INDEX inbox_notes_by_agent ON inbox_notes(agent_id, id);

CREATE TABLE inbox_reads (
    note_id  INTEGER NOT NULL REFERENCES inbox_notes(id) ON DELETE CASCADE,
    reader   TEXT NOT NULL,      -- operator:NAME, token:NAME or cli
    read_at  TEXT NOT NULL,
    PRIMARY KEY (note_id, reader)
);
