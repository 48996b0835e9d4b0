-- The time a turn spends parked: waiting on the user's answer (a permission question, a
-- questionnaire), and with no process running it while it waits. A goal's time budget counts
-- none of it (G-6): `parked_ms` sums the waits that ended, `parked_at` is when the current
-- one began (NULL while the turn runs).
ALTER TABLE turns ADD COLUMN parked_ms INTEGER NOT NULL DEFAULT 0 CHECK (parked_ms >= 0);
ALTER TABLE turns ADD COLUMN parked_at INTEGER;
