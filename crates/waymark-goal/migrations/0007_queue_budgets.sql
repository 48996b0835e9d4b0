-- A queued goal keeps the budgets it was queued with (checked when it was queued, G-46).
ALTER TABLE goal_queue ADD COLUMN token_budget INTEGER CHECK (token_budget IS NULL OR token_budget > 0);
ALTER TABLE goal_queue ADD COLUMN turn_budget INTEGER CHECK (turn_budget IS NULL OR turn_budget > 0);
ALTER TABLE goal_queue ADD COLUMN time_budget_ms INTEGER CHECK (time_budget_ms IS NULL OR time_budget_ms > 0);
ALTER TABLE goal_queue ADD COLUMN cost_budget_micros INTEGER CHECK (cost_budget_micros IS NULL OR cost_budget_micros > 0);
