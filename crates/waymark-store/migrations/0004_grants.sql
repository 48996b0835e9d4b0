-- Grants say what they cover: a whole file tool, one exact command line, or a command
-- prefix; grants given in plan mode are marked so that leaving plan mode ends them.

CREATE TABLE grants (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    tool TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('tool', 'exact', 'prefix')),
    pattern TEXT NOT NULL DEFAULT '',
    plan_mode INTEGER NOT NULL DEFAULT 0 CHECK (plan_mode IN (0, 1)),
    PRIMARY KEY (session_id, tool, kind, pattern)
) WITHOUT ROWID;

INSERT INTO grants (session_id, tool, kind, pattern)
    SELECT session_id, tool, CASE WHEN prefix = '' THEN 'tool' ELSE 'prefix' END, prefix
    FROM permission_grants;

DROP TABLE permission_grants;
