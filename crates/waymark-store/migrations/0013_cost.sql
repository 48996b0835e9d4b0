-- What model calls cost (G-31): each turn's spend in micro-dollars and the calls whose
-- model had no price (their cost is unknown), and the spend of every session on this
-- machine per local day (`limits.daily_cost_usd`).
ALTER TABLE turns ADD COLUMN cost_micros INTEGER NOT NULL DEFAULT 0 CHECK (cost_micros >= 0);
ALTER TABLE turns ADD COLUMN unpriced_calls INTEGER NOT NULL DEFAULT 0 CHECK (unpriced_calls >= 0);
-- Calls made before costs were counted have no price: their cost is unknown, not $0.
UPDATE turns SET unpriced_calls = steps;

CREATE TABLE spend_days (
    day TEXT PRIMARY KEY CHECK (length(day) = 10),
    cost_micros INTEGER NOT NULL DEFAULT 0 CHECK (cost_micros >= 0),
    unpriced_calls INTEGER NOT NULL DEFAULT 0 CHECK (unpriced_calls >= 0)
) WITHOUT ROWID;
