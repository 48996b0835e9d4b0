-- Plan mode: one plan per entry into plan mode, its revisions (content in blobs), and the
-- per-session state of the reminder cadence.

CREATE TABLE plans (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    status TEXT NOT NULL
        CHECK (status IN ('drafting', 'awaiting_approval', 'approved', 'rejected', 'withdrawn', 'left')),
    revisions INTEGER NOT NULL DEFAULT 0,
    -- Reminder cadence: plan turns so far, the last turn counted, whether the next plan turn
    -- gets the full reminder (after the user interjects) and which kind the last turn got.
    plan_turns INTEGER NOT NULL DEFAULT 0,
    last_turn_id INTEGER,
    full_reminder_due INTEGER NOT NULL DEFAULT 0,
    last_reminder TEXT CHECK (last_reminder IN ('full', 'short')),
    created_at INTEGER NOT NULL,
    ended_at INTEGER
);
CREATE INDEX plans_session ON plans (session_id, created_at);

CREATE TABLE plan_revisions (
    plan_id TEXT NOT NULL REFERENCES plans(id),
    version INTEGER NOT NULL,
    blob_key TEXT NOT NULL REFERENCES blobs(key),
    sha256 TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    author TEXT NOT NULL CHECK (author IN ('model', 'user')),
    truncated INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (plan_id, version)
) WITHOUT ROWID;

ALTER TABLE sessions ADD COLUMN current_plan_id TEXT REFERENCES plans(id);
-- The first turn after leaving plan mode gets one exit reminder: 'due' until a turn takes
-- it, then that turn's id (so a resumed turn gets it again).
ALTER TABLE sessions ADD COLUMN exit_reminder TEXT;
