-- waymark: rebuilds tables (run with foreign keys off, checked before commit)
-- Message sources and questionnaire kinds are named by the extensions that use them now: the
-- core tables check only their shape, and the store refuses, when it reads them, a value it
-- does not know.

CREATE TABLE messages_new (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    source TEXT NOT NULL CHECK (length(source) BETWEEN 1 AND 32),
    text TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'dropped')),
    queue_pos INTEGER NOT NULL,
    idempotency_key TEXT,
    admitted_at INTEGER NOT NULL,
    UNIQUE (session_id, idempotency_key)
);
INSERT INTO messages_new (id, session_id, source, text, status, queue_pos, idempotency_key, admitted_at)
    SELECT id, session_id, source, text, status, queue_pos, idempotency_key, admitted_at FROM messages;
DROP TABLE messages;
ALTER TABLE messages_new RENAME TO messages;
CREATE INDEX messages_queue ON messages (session_id, status, queue_pos);

CREATE TABLE questionnaires_new (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    turn_id INTEGER REFERENCES turns(id),
    kind TEXT NOT NULL CHECK (length(kind) BETWEEN 1 AND 32),
    payload TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'answered', 'withdrawn')),
    answer TEXT,
    created_at INTEGER NOT NULL,
    answered_at INTEGER
);
INSERT INTO questionnaires_new (id, session_id, turn_id, kind, payload, status, answer, created_at, answered_at)
    SELECT id, session_id, turn_id, kind, payload, status, answer, created_at, answered_at FROM questionnaires;
DROP TABLE questionnaires;
ALTER TABLE questionnaires_new RENAME TO questionnaires;
CREATE INDEX questionnaires_session ON questionnaires (session_id, status);
