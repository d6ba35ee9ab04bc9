-- Parked approvals (issue 48): a turn with no person present (a schedule, the API, a trigger,
-- another agent) does not wait in memory for a decision; its call is parked here and the turn
-- ends. When the call is decided or expires, the daemon holding the agent resumes the session:
-- it runs the approved call once, then a turn that tells the model how it went.
-- How to resume the turn, as JSON (caller, channel, depth, chain); NULL: a turn waits in memory.
ALTER TABLE approvals ADD COLUMN parked TEXT;
-- The daemon resuming it (claimed once); released when that daemon dies before it finished.
ALTER TABLE approvals ADD COLUMN resumed_by TEXT;
-- What the resumed turn is told (the call's result, or why it was not made): written before
-- the turn starts, so a daemon that takes the resume over never runs the call twice.
ALTER TABLE approvals ADD COLUMN outcome TEXT;
-- When the resumed turn ended.
ALTER TABLE approvals ADD COLUMN resumed_at TEXT;
CREATE INDEX approvals_parked ON approvals (status, resumed_at) WHERE parked IS NOT NULL;
