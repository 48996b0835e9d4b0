-- Compactions: older history summarized to fit the model's context window. The model sees
-- the newest one's summary (with the files touched and the pinned messages, kept verbatim)
-- in place of every history row up to `upto`; the rows themselves stay, for the transcript.

CREATE TABLE compactions (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    turn_id INTEGER REFERENCES turns (id),
    upto INTEGER NOT NULL,
    summary TEXT NOT NULL,
    files TEXT NOT NULL,
    pinned TEXT NOT NULL,
    before_tokens INTEGER NOT NULL,
    after_tokens INTEGER NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX compactions_session ON compactions (session_id, id);
