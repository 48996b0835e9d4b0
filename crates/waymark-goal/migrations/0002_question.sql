-- What the worker asked when it reported the goal blocked (update_goal status "blocked"):
-- shown with a reply box until the goal moves on. Older goals have none.

ALTER TABLE goals ADD COLUMN question TEXT;
