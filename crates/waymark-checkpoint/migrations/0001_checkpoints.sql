-- Checkpoints of a session's workspace. The files themselves are git objects in a private
-- store in the session's folder (`checkpoints/`); a row names the tree, where the
-- conversation stood (every turn below `before_turn` but the `hidden` ones), what changed
-- since the checkpoint before it and what was left out.

CREATE TABLE checkpoints (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id),
    seq INTEGER NOT NULL CHECK (seq >= 1),
    turn_id INTEGER REFERENCES turns (id),
    call_id TEXT,
    tool TEXT,
    trigger TEXT NOT NULL CHECK (trigger IN ('turn_start', 'before_tool', 'rewind')),
    tree TEXT NOT NULL CHECK (length(tree) = 40),
    before_turn INTEGER NOT NULL,
    hidden TEXT NOT NULL DEFAULT '[]',
    changed TEXT NOT NULL DEFAULT '[]',
    skipped TEXT NOT NULL DEFAULT '[]',
    created_at INTEGER NOT NULL,
    UNIQUE (session_id, seq)
);
CREATE INDEX checkpoints_turn ON checkpoints (session_id, turn_id);
