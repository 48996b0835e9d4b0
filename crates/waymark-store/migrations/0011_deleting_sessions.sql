-- Version 11: a session the user deletes takes its log with it. The log stays append-only
-- while its session exists; once the session's row is gone (deleted in the same
-- transaction, the foreign keys checked at commit), its events may go too.
DROP TRIGGER events_no_delete;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
WHEN EXISTS (SELECT 1 FROM sessions WHERE id = OLD.session_id)
BEGIN
    SELECT RAISE(ABORT, 'events are append-only');
END;
