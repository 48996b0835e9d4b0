-- What an active goal waits for (the `wait` tool, G-47), as JSON; NULL when it does not wait.
ALTER TABLE goals ADD COLUMN wait TEXT;
