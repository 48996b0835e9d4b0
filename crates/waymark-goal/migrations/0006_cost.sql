-- A goal's cost budget and spend (G-32), in micro-dollars; calls whose model had no price
-- are counted apart (the goal's cost is then not fully known).
ALTER TABLE goals ADD COLUMN cost_budget_micros INTEGER
    CHECK (cost_budget_micros IS NULL OR cost_budget_micros > 0);
ALTER TABLE goals ADD COLUMN cost_used_micros INTEGER NOT NULL DEFAULT 0
    CHECK (cost_used_micros >= 0);
ALTER TABLE goals ADD COLUMN cost_unpriced_calls INTEGER NOT NULL DEFAULT 0
    CHECK (cost_unpriced_calls >= 0);
