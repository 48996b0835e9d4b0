-- What the user decided about a project's hooks: per folder and exact content of its
-- settings files (one SHA-256 over them all), so any change to them asks again.
CREATE TABLE hooks_project_decisions (
    folder TEXT NOT NULL,
    sha256 TEXT NOT NULL CHECK (length(sha256) = 64),
    approved INTEGER NOT NULL CHECK (approved IN (0, 1)),
    decided_at INTEGER NOT NULL,
    PRIMARY KEY (folder, sha256)
);
