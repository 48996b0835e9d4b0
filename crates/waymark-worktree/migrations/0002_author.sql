-- The user's git identity when the worktree was made, before the agent ran: the merge's
-- commits carry it, whatever the project's shared settings say by then (the agent can write
-- them). Rows from before have none, and the merge reads the settings as they are.
ALTER TABLE worktrees ADD COLUMN author_name TEXT;
ALTER TABLE worktrees ADD COLUMN author_email TEXT;
