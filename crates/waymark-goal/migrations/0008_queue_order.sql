-- The user reorders the goal queue (G-46): line order is `position`, then the id.
ALTER TABLE goal_queue ADD COLUMN position INTEGER NOT NULL DEFAULT 0;
UPDATE goal_queue SET position = id;
