-- A wait's check command as it runs (the `wait` JSON shows it redacted), and how many waits
-- the agent began in a row with no other turn between them (G-47).
ALTER TABLE goals ADD COLUMN wait_command TEXT;
ALTER TABLE goals ADD COLUMN waits_in_row INTEGER NOT NULL DEFAULT 0 CHECK (waits_in_row >= 0);
