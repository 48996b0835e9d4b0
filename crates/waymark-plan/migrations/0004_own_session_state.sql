-- Plan mode's state of a session lives in plan mode's own table, not in the core's sessions
-- table. The old columns are emptied; `exit_reminder` goes, and `current_plan_id` stays
-- behind, always NULL, because SQLite drops no column that references another table.

CREATE TABLE plan_sessions (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id),
    current_plan_id TEXT REFERENCES plans(id),
    exit_reminder TEXT
) WITHOUT ROWID;

INSERT INTO plan_sessions (session_id, current_plan_id, exit_reminder)
    SELECT id, current_plan_id, exit_reminder FROM sessions
    WHERE current_plan_id IS NOT NULL OR exit_reminder IS NOT NULL;

UPDATE sessions SET current_plan_id = NULL WHERE current_plan_id IS NOT NULL;
ALTER TABLE sessions DROP COLUMN exit_reminder;
