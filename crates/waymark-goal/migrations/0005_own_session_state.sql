-- A session's current goal and what a turn did for a goal live in the goal extension's own
-- tables, not in the core's sessions and turns tables. The old columns are emptied; those
-- that reference another table (`current_goal_id`, `goal_id`) stay behind, always NULL,
-- because SQLite drops no such column, and the others go.

CREATE TABLE goal_sessions (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id),
    current_goal_id TEXT REFERENCES goals(id)
) WITHOUT ROWID;

INSERT INTO goal_sessions (session_id, current_goal_id)
    SELECT id, current_goal_id FROM sessions WHERE current_goal_id IS NOT NULL;

CREATE TABLE goal_turns (
    turn_id INTEGER PRIMARY KEY REFERENCES turns(id),
    goal_id TEXT REFERENCES goals(id),
    revision INTEGER CHECK (revision IS NULL OR revision >= 0),
    proposal TEXT,
    summary INTEGER NOT NULL DEFAULT 0 CHECK (summary IN (0, 1))
);

INSERT INTO goal_turns (turn_id, goal_id, revision, proposal, summary)
    SELECT id, goal_id, goal_revision, goal_proposal, goal_summary FROM turns
    WHERE goal_id IS NOT NULL OR goal_proposal IS NOT NULL OR goal_summary != 0;

UPDATE sessions SET current_goal_id = NULL WHERE current_goal_id IS NOT NULL;
UPDATE turns SET goal_id = NULL WHERE goal_id IS NOT NULL;
ALTER TABLE turns DROP COLUMN goal_revision;
ALTER TABLE turns DROP COLUMN goal_proposal;
ALTER TABLE turns DROP COLUMN goal_summary;
