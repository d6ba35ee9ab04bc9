-- Channels (spec §6): what chat platforms delivered, who spoke where, and what was sent.

-- Every inbound message, stored before the platform is answered. The key is the platform's
-- own message id, so a redelivered webhook finds its row and runs no second turn; a row still
-- `pending` when the daemon starts is answered then.
CREATE TABLE channel_inbound (
    channel      TEXT NOT NULL,
    message_id   TEXT NOT NULL,
    chat_id      TEXT NOT NULL,
    chat_title   TEXT,
    is_group     INTEGER NOT NULL,
    user_id      TEXT NOT NULL,
    display_name TEXT NOT NULL,
    username     TEXT,
    text         TEXT NOT NULL,
    received_at  TEXT NOT NULL,
    state        TEXT NOT NULL,   -- pending, answered, delivered (deliver_only), failed
    detail       TEXT,            -- why it failed
    PRIMARY KEY (channel, message_id)
);
CREATE INDEX channel_inbound_pending ON channel_inbound(state) WHERE state = 'pending';
CREATE INDEX channel_inbound_recent ON channel_inbound(channel, received_at);

-- Conversations the bridge has seen, and the roster of each group: people who spoke there.
CREATE TABLE channel_conversations (
    channel    TEXT NOT NULL,
    chat_id    TEXT NOT NULL,
    title      TEXT,
    is_group   INTEGER NOT NULL,
    last_at    TEXT NOT NULL,
    PRIMARY KEY (channel, chat_id)
);
CREATE TABLE channel_members (
    channel      TEXT NOT NULL,
    chat_id      TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    display_name TEXT NOT NULL,
    username     TEXT,
    last_seen    TEXT NOT NULL,
    PRIMARY KEY (channel, chat_id, user_id)
);

-- Everything sent: replies, channel_send, channel_dm, schedule deliveries.
CREATE TABLE channel_outbound (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    channel  TEXT NOT NULL,
    chat_id  TEXT NOT NULL,
    kind     TEXT NOT NULL,       -- text, image, file, poll
    summary  TEXT NOT NULL,       -- the text, a caption or file name, a poll's question
    sent_by  TEXT NOT NULL,       -- reply, agent:NAME, schedule:ID, deliver_only
    at       TEXT NOT NULL,
    outcome  TEXT NOT NULL        -- ok, or why it failed
);
CREATE INDEX channel_outbound_recent ON channel_outbound(channel, id);
