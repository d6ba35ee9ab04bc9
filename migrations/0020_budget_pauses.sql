-- An agent paused for going over a daily budget (issue 17): until the budget's next reset,
-- or until an operator lifts the pause (then the budget counts from that moment).
ALTER TABLE agents ADD COLUMN paused_until TEXT;
ALTER TABLE agents ADD COLUMN pause_reason TEXT;
ALTER TABLE agents ADD COLUMN budget_lifted_at TEXT;
