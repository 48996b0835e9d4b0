-- A model call's most possible cost (its input and its bounded output), held against its
-- day from before the call is sent until it is charged (G-33): every process's limits see the
-- calls in flight, and a process killed mid-call leaves its hold counted; the session's next
-- open charges it to the call's turn.
CREATE TABLE spend_holds (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id),
    turn_id INTEGER REFERENCES turns (id),
    day TEXT NOT NULL CHECK (length(day) = 10),
    cost_micros INTEGER NOT NULL CHECK (cost_micros >= 0)
);
CREATE INDEX spend_holds_session ON spend_holds (session_id);
-- What a session spent outside any turn (a compaction between turns): its total counts it.
ALTER TABLE sessions ADD COLUMN loose_cost_micros INTEGER NOT NULL DEFAULT 0 CHECK (loose_cost_micros >= 0);
ALTER TABLE sessions ADD COLUMN loose_unpriced_calls INTEGER NOT NULL DEFAULT 0 CHECK (loose_unpriced_calls >= 0);
