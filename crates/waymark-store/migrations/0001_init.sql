-- Waymark schema, version 1: sessions, queue, turns, history, questionnaires, blobs and the
-- append-only event log.

CREATE TABLE workspaces (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL
);

CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    workspace_id INTEGER NOT NULL REFERENCES workspaces(id),
    title TEXT,
    model TEXT,
    interaction_mode TEXT NOT NULL DEFAULT 'default'
        CHECK (interaction_mode IN ('default', 'plan')),
    permission_mode TEXT NOT NULL DEFAULT 'ask'
        CHECK (permission_mode IN ('ask', 'auto-edit', 'auto', 'read-only')),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    lease_owner TEXT,
    lease_pid INTEGER,
    lease_heartbeat INTEGER
);

CREATE TABLE messages (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    source TEXT NOT NULL CHECK (source IN ('user', 'goal', 'questionnaire', 'system')),
    text TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'dropped')),
    queue_pos INTEGER NOT NULL,
    idempotency_key TEXT,
    admitted_at INTEGER NOT NULL,
    UNIQUE (session_id, idempotency_key)
);
CREATE INDEX messages_queue ON messages (session_id, status, queue_pos);

CREATE TABLE turns (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    message_id INTEGER NOT NULL REFERENCES messages(id),
    status TEXT NOT NULL CHECK (status IN ('running', 'parked', 'finished')),
    reason TEXT CHECK (reason IN ('completed', 'terminated', 'aborted', 'step_capped', 'error')),
    error_code TEXT,
    error_message TEXT,
    steps INTEGER NOT NULL DEFAULT 0,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cached_tokens INTEGER NOT NULL DEFAULT 0,
    started_at INTEGER NOT NULL,
    ended_at INTEGER,
    CHECK ((status = 'finished') = (reason IS NOT NULL))
);
CREATE INDEX turns_session ON turns (session_id, status);

-- What the model sees: user messages, assistant replies (with tool calls), tool results.
CREATE TABLE history (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    turn_id INTEGER REFERENCES turns(id),
    kind TEXT NOT NULL CHECK (kind IN ('user', 'assistant', 'tool_result')),
    body TEXT NOT NULL
);
CREATE INDEX history_session ON history (session_id, id);

CREATE TABLE questionnaires (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    turn_id INTEGER REFERENCES turns(id),
    kind TEXT NOT NULL
        CHECK (kind IN ('permission', 'plan_entry', 'plan_approval', 'goal_approval')),
    payload TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'answered', 'withdrawn')),
    answer TEXT,
    created_at INTEGER NOT NULL,
    answered_at INTEGER
);
CREATE INDEX questionnaires_session ON questionnaires (session_id, status);

CREATE TABLE permission_grants (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    tool TEXT NOT NULL,
    prefix TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (session_id, tool, prefix)
) WITHOUT ROWID;

CREATE TABLE blobs (
    key TEXT PRIMARY KEY,
    sha256 TEXT NOT NULL,
    bytes BLOB NOT NULL,
    created_at INTEGER NOT NULL
);

CREATE TABLE events (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    ts INTEGER NOT NULL,
    type TEXT NOT NULL,
    json TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;

-- The log is append-only and its per-session sequence has no gaps.
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN
    SELECT RAISE(ABORT, 'events are append-only');
END;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN
    SELECT RAISE(ABORT, 'events are append-only');
END;
CREATE TRIGGER events_contiguous BEFORE INSERT ON events
WHEN NEW.seq <> (SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE session_id = NEW.session_id)
BEGIN
    SELECT RAISE(ABORT, 'event seq must be contiguous');
END;
