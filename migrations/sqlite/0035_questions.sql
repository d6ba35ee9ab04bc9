-- The questions `ask_user` turns wait on (issue 43): in the database, so that every daemon of
-- a cluster lists them and takes their answers, and the asking daemon is woken with it. A
-- row lives while its turn waits; the rows of a daemon that stopped or died are removed by
-- the daemon that takes its work over.
CREATE TABLE questions (
    id TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL,
    daemon_id TEXT NOT NULL,
    -- The question as JSON, as GET /api/questions shows it.
    question TEXT NOT NULL,
    -- Where a question asked on a channel waits: its answer is the next message there from
    -- the person asked (user_id; any member when NULL).
    channel TEXT,
    chat TEXT,
    user_id TEXT,
    -- The answer as JSON, once given.
    answer TEXT
);
CREATE INDEX questions_agent ON questions (agent_id);
CREATE INDEX questions_conversation ON questions (channel, chat);
CREATE INDEX questions_daemon ON questions (daemon_id);
