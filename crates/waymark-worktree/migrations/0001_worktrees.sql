-- The git worktree a session works in (G-34): made from the main checkout `repo` at
-- `base_commit` on branch `branch` (`waymark/<name>`), to be merged into `base_branch`.
CREATE TABLE worktrees (
    session_id TEXT PRIMARY KEY REFERENCES sessions (id),
    name TEXT NOT NULL,
    branch TEXT NOT NULL,
    path TEXT NOT NULL,
    repo TEXT NOT NULL,
    base_branch TEXT NOT NULL,
    base_commit TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'merged', 'discarded')),
    included TEXT NOT NULL DEFAULT '[]',
    created_at INTEGER NOT NULL
) WITHOUT ROWID;
