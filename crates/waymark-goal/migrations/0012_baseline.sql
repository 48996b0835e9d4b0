-- Every run of a goal's checks (G-49): the pass counts on the gauge and the burn-down. The
-- run flagged `baseline` was made when the goal started; the weakened-check verdict compares
-- later runs with it (G-51).
CREATE TABLE goal_check_runs (
    id INTEGER PRIMARY KEY,
    goal_id TEXT NOT NULL REFERENCES goals(id) ON DELETE CASCADE,
    command TEXT NOT NULL,
    at INTEGER NOT NULL,
    baseline INTEGER NOT NULL DEFAULT 0 CHECK (baseline IN (0, 1)),
    exit_code INTEGER,
    passed INTEGER CHECK (passed IS NULL OR passed >= 0),
    failed INTEGER CHECK (failed IS NULL OR failed >= 0)
);
CREATE INDEX goal_check_runs_goal ON goal_check_runs (goal_id, id);

-- The goal's baseline: when it was taken, and what the last completion claim found weakened
-- since (a JSON array of plain sentences).
CREATE TABLE goal_baselines (
    goal_id TEXT PRIMARY KEY REFERENCES goals(id) ON DELETE CASCADE,
    taken_at INTEGER NOT NULL,
    weakened TEXT NOT NULL DEFAULT '[]'
);

-- The workspace's test files and protected files when the goal started: what each held
-- (tests, skip markers, assertions), its hash, and its text when small (the reviewer's diff).
CREATE TABLE goal_baseline_files (
    goal_id TEXT NOT NULL REFERENCES goals(id) ON DELETE CASCADE,
    path TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    tests INTEGER NOT NULL CHECK (tests >= 0),
    skips INTEGER NOT NULL CHECK (skips >= 0),
    asserts INTEGER NOT NULL CHECK (asserts >= 0),
    is_test INTEGER NOT NULL CHECK (is_test IN (0, 1)),
    protected INTEGER NOT NULL CHECK (protected IN (0, 1)),
    content TEXT,
    PRIMARY KEY (goal_id, path)
);
