-- Thread goals: the current goal of a session with its budgets, usage and the counters of
-- the breaker and verifier, plus the queue of upcoming goals.

CREATE TABLE goals (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    objective TEXT NOT NULL,
    criteria TEXT,
    status TEXT NOT NULL
        CHECK (status IN ('active', 'paused', 'blocked', 'complete', 'budget_limited', 'usage_limited')),
    reason TEXT NOT NULL,
    actor TEXT NOT NULL CHECK (actor IN ('user', 'model', 'runtime', 'system')),
    revision INTEGER NOT NULL DEFAULT 1,
    token_budget INTEGER CHECK (token_budget IS NULL OR token_budget > 0),
    turn_budget INTEGER CHECK (turn_budget IS NULL OR turn_budget > 0),
    time_budget_ms INTEGER CHECK (time_budget_ms IS NULL OR time_budget_ms > 0),
    tokens_used INTEGER NOT NULL DEFAULT 0 CHECK (tokens_used >= 0),
    turns_used INTEGER NOT NULL DEFAULT 0 CHECK (turns_used >= 0),
    active_ms INTEGER NOT NULL DEFAULT 0 CHECK (active_ms >= 0),
    continuations INTEGER NOT NULL DEFAULT 0,
    repeated_replies INTEGER NOT NULL DEFAULT 0,
    toolless_turns INTEGER NOT NULL DEFAULT 0,
    last_reply TEXT,
    completion_claimed INTEGER NOT NULL DEFAULT 0,
    not_met_count INTEGER NOT NULL DEFAULT 0,
    last_gaps TEXT,
    grace_used INTEGER NOT NULL DEFAULT 0,
    summary_due INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    cleared_at INTEGER
);
CREATE INDEX goals_session ON goals (session_id, created_at);

CREATE TABLE goal_queue (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    objective TEXT NOT NULL,
    created_at INTEGER NOT NULL
);

ALTER TABLE sessions ADD COLUMN current_goal_id TEXT REFERENCES goals(id);

-- What a turn did for a goal: which goal and revision it worked on, the model's proposal
-- (`update_goal` status), and whether it was the summary turn after a budget stop.
ALTER TABLE turns ADD COLUMN goal_id TEXT REFERENCES goals(id);
ALTER TABLE turns ADD COLUMN goal_revision INTEGER;
ALTER TABLE turns ADD COLUMN goal_proposal TEXT;
ALTER TABLE turns ADD COLUMN goal_summary INTEGER NOT NULL DEFAULT 0;

-- Tail insertion looks up the session's highest queue position; goals queue a message per turn.
CREATE INDEX messages_position ON messages (session_id, queue_pos);
