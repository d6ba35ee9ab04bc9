-- A forwarded turn its asker cancelled (issue 43): the daemon running it, or the one that
-- takes it from the queue, stops it.
ALTER TABLE cluster_turns ADD COLUMN cancelled BIGINT NOT NULL DEFAULT 0;
