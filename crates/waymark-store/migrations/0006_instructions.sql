-- The project instructions (AGENTS.md files) a session took when it started: the files as a
-- JSON list of InstructionFile, and the text the model sees. Sessions from before this have
-- no row and run without instructions, as they always did.

CREATE TABLE session_instructions (
    session_id TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    files TEXT NOT NULL,
    text TEXT NOT NULL
) WITHOUT ROWID;
