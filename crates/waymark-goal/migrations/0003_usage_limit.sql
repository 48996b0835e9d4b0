-- A goal stopped by a provider's usage limit: when the limit resets and whether the runtime
-- resumes it then (JSON of the wire type `UsageLimit`; NULL in any other status), and how
-- many automatic resumes it has had since a turn last got through.

ALTER TABLE goals ADD COLUMN usage_limit TEXT;
ALTER TABLE goals ADD COLUMN limit_resumes INTEGER NOT NULL DEFAULT 0 CHECK (limit_resumes >= 0);
