-- Extensions (plan mode, goals, ...) own their tables and apply their own migrations; this
-- records how far each one got. Plan and goal tables used to be core migrations 2 and 3: a
-- database that has them counts as having the extensions' first migration.

CREATE TABLE extension_schema (
    name TEXT PRIMARY KEY,
    version INTEGER NOT NULL CHECK (version >= 0)
) WITHOUT ROWID;

INSERT INTO extension_schema (name, version)
    SELECT 'plan', 1 WHERE EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'plans');
INSERT INTO extension_schema (name, version)
    SELECT 'goal', 1 WHERE EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'goals');
