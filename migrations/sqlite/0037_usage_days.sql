-- Model calls rolled up by day (issue 43): past `[retention] model_calls_days`, each call's
-- tokens are added to its day's line here (per agent, session, provider and model) and its
-- row is deleted. The Usage page and budgets read both tables.
CREATE TABLE usage_days (
    day                TEXT NOT NULL,   -- YYYY-MM-DD, UTC
    agent_id           TEXT NOT NULL,
    session_id         TEXT NOT NULL,
    provider           TEXT NOT NULL,
    model              TEXT NOT NULL,
    calls              INTEGER NOT NULL,
    input_tokens       INTEGER NOT NULL,
    output_tokens      INTEGER NOT NULL,
    cached_tokens      INTEGER NOT NULL,
    cache_write_tokens INTEGER NOT NULL,
    PRIMARY KEY (day, agent_id, session_id, provider, model)
);
