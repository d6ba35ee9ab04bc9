-- Which daemon runs a workflow run (issue 43): a run still `running` when its daemon stopped
-- or died is failed by the daemon that takes over its work, not left running for ever.
-- Older rows have none: the first daemon to start takes them over.
ALTER TABLE workflow_runs ADD COLUMN daemon_id TEXT;
