-- Model calls whose usage is Waymark's estimate (the provider reported none, an empty one or
-- null fields): the turn's token counts are then partly estimated, and its record says so.
ALTER TABLE turns ADD COLUMN estimated_calls INTEGER NOT NULL DEFAULT 0 CHECK (estimated_calls >= 0);
