-- Comments the user attached to lines of a plan revision when asking for changes (PM-25):
-- the lines as they were (`quote`), so later revisions can tell whether the passage changed.

CREATE TABLE plan_comments (
    id INTEGER PRIMARY KEY,
    plan_id TEXT NOT NULL REFERENCES plans(id),
    version INTEGER NOT NULL CHECK (version >= 1),
    start_line INTEGER NOT NULL CHECK (start_line >= 1),
    end_line INTEGER NOT NULL CHECK (end_line >= start_line),
    quote TEXT NOT NULL,
    text TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX plan_comments_plan ON plan_comments (plan_id, version);
