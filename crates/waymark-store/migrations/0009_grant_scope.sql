-- A grant may belong to a scope that an extension owns and ends (NULL: the session's). The
-- extension that marked grants its own way before moves them over in its own migrations.

ALTER TABLE grants ADD COLUMN scope TEXT CHECK (scope IS NULL OR length(scope) BETWEEN 1 AND 64);
