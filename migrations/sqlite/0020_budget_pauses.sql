-- An agent paused for going over a daily budget (issue 17): until the budget's next reset,
-- or until an operator lifts the pause (then the budget counts from that moment).
ALTER TABLE agents ADD COLUMN paused_until TEXT;
ALTER TABLE agents ADD COLUMN pause_reason TEXT;
ALTER TABLE agents ADD COLUMN budget_lifted_at TEXT;
-- A budget reads the day's calls of one agent, or of all, at every turn's start.
CREATE INDEX model_calls_by_time ON model_calls(created_at);
CREATE INDEX model_calls_by_agent ON model_calls(agent_id, created_at);
