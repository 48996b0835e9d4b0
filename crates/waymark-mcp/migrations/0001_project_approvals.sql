-- What the user decided about a project's `.mcp.json`: per folder and exact content (its
-- SHA-256), so any change to the file asks again.
CREATE TABLE mcp_project_decisions (
    folder TEXT NOT NULL,
    sha256 TEXT NOT NULL CHECK (length(sha256) = 64),
    approved INTEGER NOT NULL CHECK (approved IN (0, 1)),
    decided_at INTEGER NOT NULL,
    PRIMARY KEY (folder, sha256)
);
