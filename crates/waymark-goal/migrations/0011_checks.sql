-- The commands that define a goal done (G-49), in the order they run. Each run's result is
-- a `goal.check` event in the session's log.
CREATE TABLE goal_checks (
    goal_id TEXT NOT NULL REFERENCES goals(id) ON DELETE CASCADE,
    position INTEGER NOT NULL CHECK (position >= 0),
    command TEXT NOT NULL,
    PRIMARY KEY (goal_id, position)
);
