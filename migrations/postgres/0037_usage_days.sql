-- Model calls rolled up by day (issue 43): past `[retention] model_calls_days`, each call's
-- tokens are added to its day's line here (per agent, session, provider and model) and its
-- row is deleted. The Usage page and budgets read both tables.
CREATE TABLE usage_days (
    day                TEXT COLLATE "C" NOT NULL,   -- YYYY-MM-DD, UTC
    agent_id           TEXT COLLATE "C" NOT NULL,
    session_id         TEXT COLLATE "C" NOT NULL,
    provider           TEXT COLLATE "C" NOT NULL,
    model              TEXT COLLATE "C" NOT NULL,
    calls              BIGINT NOT NULL,
    input_tokens       BIGINT NOT NULL,
    output_tokens      BIGINT NOT NULL,
    cached_tokens      BIGINT NOT NULL,
    cache_write_tokens BIGINT NOT NULL,
    PRIMARY KEY (day, agent_id, session_id, provider, model)
);
