//! Sessions, their workspace, modes, lease and permission grants.

use super::{Grant, GrantKind, Result, StoreError as Error};
use rusqlite::{Connection, OptionalExtension, params};
use waymark_protocol::{InteractionMode, PermissionMode, SessionSummary};

/// A session as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRow {
    pub id: String,
    pub workspace: String,
    pub title: Option<String>,
    pub model: Option<String>,
    pub interaction_mode: InteractionMode,
    pub permission_mode: PermissionMode,
    pub created_at: i64,
    pub updated_at: i64,
}

/// Who drives a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub owner: String,
    pub pid: i64,
    pub heartbeat: i64,
}

const SESSION_COLUMNS: &str = "s.id, w.path, s.title, s.model, s.interaction_mode, \
     s.permission_mode, s.created_at, s.updated_at";

fn row_to_session(r: &rusqlite::Row<'_>) -> rusqlite::Result<SessionRow> {
    Ok(SessionRow {
        id: r.get(0)?,
        workspace: r.get(1)?,
        title: r.get(2)?,
        model: r.get(3)?,
        interaction_mode: super::enum_col(r, 4)?,
        permission_mode: super::enum_col(r, 5)?,
        created_at: r.get(6)?,
        updated_at: r.get(7)?,
    })
}

impl super::Tx<'_> {
    /// Creates a session in `workspace` (registering the workspace on first use).
    pub fn create_session(
        &mut self,
        id: &str,
        workspace: &str,
        model: Option<&str>,
        permission_mode: PermissionMode,
    ) -> Result<()> {
        let now = self.now();
        let c = self.conn();
        c.execute(
            "INSERT INTO workspaces (path, created_at) VALUES (?1, ?2) ON CONFLICT (path) DO NOTHING",
            params![workspace, now],
        )?;
        let ws: i64 = c.query_row(
            "SELECT id FROM workspaces WHERE path = ?1",
            [workspace],
            |r| r.get(0),
        )?;
        c.execute(
            "INSERT INTO sessions (id, workspace_id, model, permission_mode, created_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
            params![id, ws, model, permission_mode.as_str(), now],
        )?;
        Ok(())
    }

    /// Keeps the project instructions a session starts with (redacted, like all it stores).
    pub fn set_instructions(&mut self, id: &str, instructions: &super::Instructions) -> Result<()> {
        // Plain strings and numbers: serializing cannot fail.
        let files = serde_json::to_string(&instructions.files).unwrap_or_else(|_| "[]".into());
        let text = self.redact(&instructions.text);
        self.conn().execute(
            "INSERT INTO session_instructions (session_id, files, text) VALUES (?1, ?2, ?3)",
            params![id, files, text],
        )?;
        Ok(())
    }

    /// Takes the session's lease unless a live process holds it. `is_alive` tells whether a
    /// pid still runs; a lease whose heartbeat is older than `stale_ms` is taken over too.
    /// Returns the previous lease when one was taken over.
    pub fn acquire_lease(
        &mut self,
        id: &str,
        owner: &str,
        pid: i64,
        stale_ms: i64,
        is_alive: &dyn Fn(i64) -> bool,
    ) -> Result<Option<Lease>> {
        let now = self.now();
        let current = lease(self.conn(), id)?;
        if let Some(l) = &current
            && l.owner != owner
            && now - l.heartbeat < stale_ms
            && is_alive(l.pid)
        {
            return Err(Error::SessionBusy {
                id: id.to_string(),
                pid: l.pid,
            });
        }
        self.conn().execute(
            "UPDATE sessions SET lease_owner = ?2, lease_pid = ?3, lease_heartbeat = ?4 WHERE id = ?1",
            params![id, owner, pid, now],
        )?;
        Ok(current.filter(|l| l.owner != owner))
    }

    /// Refreshes the heartbeat; fails with `session_busy` if another owner took the lease.
    pub fn heartbeat(&mut self, id: &str, owner: &str) -> Result<()> {
        let now = self.now();
        let n = self.conn().execute(
            "UPDATE sessions SET lease_heartbeat = ?3 WHERE id = ?1 AND lease_owner = ?2",
            params![id, owner, now],
        )?;
        if n == 0 {
            let pid = lease(self.conn(), id)?.map(|l| l.pid).unwrap_or(0);
            return Err(Error::SessionBusy {
                id: id.to_string(),
                pid,
            });
        }
        Ok(())
    }

    /// Fencing: fails with `lease_lost` unless `owner` still holds the session's lease.
    /// Every write of an open session runs this first, in the same transaction.
    pub fn check_lease(&mut self, id: &str, owner: &str) -> Result<()> {
        let current: Option<(Option<String>, Option<i64>)> = self
            .conn()
            .prepare_cached("SELECT lease_owner, lease_pid FROM sessions WHERE id = ?1")?
            .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        match current {
            Some((Some(o), _)) if o == owner => Ok(()),
            Some((_, pid)) => Err(Error::LeaseLost {
                id: id.to_string(),
                pid: pid.unwrap_or(0),
            }),
            None => Err(Error::SessionNotFound(id.to_string())),
        }
    }

    /// Gives the lease up (only if still ours).
    pub fn release_lease(&mut self, id: &str, owner: &str) -> Result<()> {
        self.conn().execute(
            "UPDATE sessions SET lease_owner = NULL, lease_pid = NULL, lease_heartbeat = NULL
             WHERE id = ?1 AND lease_owner = ?2",
            params![id, owner],
        )?;
        Ok(())
    }

    pub fn set_interaction_mode(&mut self, id: &str, mode: InteractionMode) -> Result<()> {
        let now = self.now();
        self.conn().execute(
            "UPDATE sessions SET interaction_mode = ?2, updated_at = ?3 WHERE id = ?1",
            params![id, mode.as_str(), now],
        )?;
        Ok(())
    }

    pub fn set_permission_mode(&mut self, id: &str, mode: PermissionMode) -> Result<()> {
        let now = self.now();
        self.conn().execute(
            "UPDATE sessions SET permission_mode = ?2, updated_at = ?3 WHERE id = ?1",
            params![id, mode.as_str(), now],
        )?;
        Ok(())
    }

    pub fn set_model(&mut self, id: &str, model: &str) -> Result<()> {
        let now = self.now();
        self.conn().execute(
            "UPDATE sessions SET model = ?2, updated_at = ?3 WHERE id = ?1",
            params![id, model, now],
        )?;
        Ok(())
    }

    /// Sets the title once (from the first user message).
    pub fn set_title_if_missing(&mut self, id: &str, title: &str) -> Result<()> {
        let title = self.redact(title).into_owned();
        self.conn()
            .prepare_cached("UPDATE sessions SET title = ?2 WHERE id = ?1 AND title IS NULL")?
            .execute(params![id, title])?;
        Ok(())
    }

    pub fn touch_session(&mut self, id: &str) -> Result<()> {
        let now = self.now();
        self.conn()
            .prepare_cached("UPDATE sessions SET updated_at = ?2 WHERE id = ?1")?
            .execute(params![id, now])?;
        Ok(())
    }

    /// Records a grant; `scope` marks one that ends with that scope (its owner clears it).
    /// A grant given both within a scope and outside any stays for the session.
    pub fn add_grant(&mut self, id: &str, grant: &Grant, scope: Option<&str>) -> Result<()> {
        self.conn().execute(
            "INSERT INTO grants (session_id, tool, kind, pattern, scope) VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (session_id, tool, kind, pattern) DO UPDATE
                 SET scope = CASE WHEN grants.scope IS NULL OR excluded.scope IS NULL THEN NULL
                                  ELSE grants.scope END",
            params![id, grant.tool, grant.kind.as_str(), grant.pattern, scope],
        )?;
        Ok(())
    }

    /// Ends the grants of `scope`.
    pub fn drop_scoped_grants(&mut self, id: &str, scope: &str) -> Result<()> {
        self.conn().execute(
            "DELETE FROM grants WHERE session_id = ?1 AND scope = ?2",
            params![id, scope],
        )?;
        Ok(())
    }
}

/// One session by id.
pub fn get(conn: &Connection, id: &str) -> Result<Option<SessionRow>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions s JOIN workspaces w ON w.id = s.workspace_id
             WHERE s.id = ?1"
        ))?
        .query_row([id], row_to_session)
        .optional()?)
}

/// The session's lease, if held.
pub fn lease(conn: &Connection, id: &str) -> Result<Option<Lease>> {
    let row = conn
        .query_row(
            "SELECT lease_owner, lease_pid, lease_heartbeat FROM sessions WHERE id = ?1",
            [id],
            |r| {
                Ok((
                    r.get::<_, Option<String>>(0)?,
                    r.get::<_, Option<i64>>(1)?,
                    r.get::<_, Option<i64>>(2)?,
                ))
            },
        )
        .optional()?;
    match row {
        None => Err(Error::SessionNotFound(id.to_string())),
        Some((Some(owner), Some(pid), Some(heartbeat))) => Ok(Some(Lease {
            owner,
            pid,
            heartbeat,
        })),
        Some(_) => Ok(None),
    }
}

/// All sessions, newest activity first.
pub fn list(conn: &Connection) -> Result<Vec<SessionSummary>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT {SESSION_COLUMNS},
            (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id AND m.status = 'queued'),
            (SELECT q.id FROM questionnaires q WHERE q.session_id = s.id AND q.status = 'pending'
             ORDER BY q.created_at LIMIT 1)
         FROM sessions s JOIN workspaces w ON w.id = s.workspace_id
         ORDER BY s.updated_at DESC, s.id"
    ))?;
    let rows = stmt.query_map([], |r| {
        let s = row_to_session(r)?;
        Ok(SessionSummary {
            id: s.id,
            workspace: s.workspace,
            title: s.title,
            created_at: s.created_at,
            updated_at: s.updated_at,
            interaction_mode: s.interaction_mode,
            permission_mode: s.permission_mode,
            model: s.model,
            queued: r.get::<_, i64>(8)? as u64,
            pending_questionnaire: r.get(9)?,
            needs_you: None,
            worktree: None,
            project: None,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The sessions with a message the user sent, or a reply of the agent, whose text holds
/// `needle` (ASCII letters of either case; `%` and `_` are plain characters): at most
/// `limit` ids, newest activity first. An empty needle matches nothing.
pub fn search(conn: &Connection, needle: &str, limit: usize) -> Result<Vec<String>> {
    if needle.is_empty() {
        return Ok(Vec::new());
    }
    // The agent's replies are kept only in the history, as JSON: their text is searched,
    // not the JSON around it (a row that is not JSON is passed over, not an error).
    let mut stmt = conn.prepare_cached(
        "SELECT s.id FROM sessions s
         WHERE EXISTS (SELECT 1 FROM messages m
                       WHERE m.session_id = s.id AND m.source = 'user'
                         AND instr(lower(m.text), lower(?1)) > 0)
            OR EXISTS (SELECT 1 FROM history h
                       WHERE h.session_id = s.id AND h.kind = 'assistant'
                         AND instr(lower(CASE WHEN json_valid(h.body)
                                              THEN json_extract(h.body, '$.text') END),
                                   lower(?1)) > 0)
         ORDER BY s.updated_at DESC, s.id
         LIMIT ?2",
    )?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = stmt.query_map(params![needle, limit], |r| r.get::<_, String>(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The session's grants.
pub fn grants(conn: &Connection, id: &str) -> Result<Vec<Grant>> {
    let mut stmt = conn.prepare_cached(
        "SELECT tool, kind, pattern FROM grants WHERE session_id = ?1 ORDER BY tool, kind, pattern",
    )?;
    let rows = stmt.query_map([id], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (tool, kind, pattern) = row?;
        let kind = GrantKind::parse(&kind)
            .ok_or_else(|| Error::Corrupt(format!("grant kind `{kind}`")))?;
        out.push(Grant {
            tool,
            kind,
            pattern,
        });
    }
    Ok(out)
}

/// The project instructions a session took when it started (none for older sessions).
pub fn instructions(c: &Connection, id: &str) -> Result<Option<super::Instructions>> {
    let row = c
        .query_row(
            "SELECT files, text FROM session_instructions WHERE session_id = ?1",
            [id],
            |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)),
        )
        .optional()?;
    let Some((files, text)) = row else {
        return Ok(None);
    };
    let files = serde_json::from_str(&files)
        .map_err(|e| Error::Corrupt(format!("instruction files of session {id}: {e}")))?;
    Ok(Some(super::Instructions { files, text }))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::Store;
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    static N: AtomicU32 = AtomicU32::new(0);

    pub(crate) fn make_session(store: &Store) -> String {
        let id = format!("s{}", N.fetch_add(1, Ordering::Relaxed));
        store
            .write(10, |tx| {
                tx.create_session(&id, "/ws", None, PermissionMode::Ask)
            })
            .unwrap();
        id
    }

    #[test]
    fn create_get_and_list() {
        let store = Store::open_in_memory().unwrap();
        let id = make_session(&store);
        let s = store.read(|c| get(c, &id)).unwrap().unwrap();
        assert_eq!(s.workspace, "/ws");
        assert_eq!(s.interaction_mode, InteractionMode::Default);
        store
            .write(20, |tx| {
                tx.set_interaction_mode(&id, InteractionMode::Plan)?;
                tx.set_permission_mode(&id, PermissionMode::Auto)?;
                tx.set_title_if_missing(&id, "first")?;
                tx.set_title_if_missing(&id, "second")
            })
            .unwrap();
        let all = store.read(list).unwrap();
        let me = all.iter().find(|s| s.id == id).unwrap();
        assert_eq!(me.interaction_mode, InteractionMode::Plan);
        assert_eq!(me.permission_mode, PermissionMode::Auto);
        assert_eq!(me.title.as_deref(), Some("first"));
        assert!(store.read(|c| get(c, "nope")).unwrap().is_none());
    }

    #[test]
    fn live_lease_is_busy_stale_or_dead_is_taken_over() {
        let store = Store::open_in_memory().unwrap();
        let id = make_session(&store);
        let alive = |_pid: i64| true;
        let dead = |_pid: i64| false;
        store
            .write(1000, |tx| tx.acquire_lease(&id, "a", 1, 30_000, &alive))
            .unwrap();
        let busy = store.write(2000, |tx| tx.acquire_lease(&id, "b", 2, 30_000, &alive));
        assert_eq!(busy.err().unwrap().code(), "session_busy");
        // Same owner may re-acquire.
        store
            .write(2000, |tx| tx.acquire_lease(&id, "a", 1, 30_000, &alive))
            .unwrap();
        // Dead pid: taken over at once.
        let (prev, _) = store
            .write(3000, |tx| tx.acquire_lease(&id, "b", 2, 30_000, &dead))
            .unwrap();
        assert_eq!(prev.unwrap().owner, "a");
        // Old owner's heartbeat now fails.
        assert!(store.write(3500, |tx| tx.heartbeat(&id, "a")).is_err());
        // Stale heartbeat: taken over even if the pid looks alive.
        let (prev, _) = store
            .write(40_000, |tx| tx.acquire_lease(&id, "c", 3, 30_000, &alive))
            .unwrap();
        assert_eq!(prev.unwrap().pid, 2);
        store
            .write(41_000, |tx| tx.release_lease(&id, "c"))
            .unwrap();
        assert!(store.read(|c| lease(c, &id)).unwrap().is_none());
    }

    #[test]
    fn grants_are_deduplicated_and_scoped_grants_end() {
        use super::super::{Grant, GrantKind};
        let g = |tool: &str, kind, pattern: &str| Grant {
            tool: tool.into(),
            kind,
            pattern: pattern.into(),
        };
        let store = Store::open_in_memory().unwrap();
        let id = make_session(&store);
        store
            .write(1, |tx| {
                tx.add_grant(&id, &g("bash", GrantKind::Prefix, "cargo test"), None)?;
                tx.add_grant(&id, &g("bash", GrantKind::Prefix, "cargo test"), Some("x"))?;
                tx.add_grant(&id, &g("bash", GrantKind::Exact, "cargo test"), Some("x"))?;
                tx.add_grant(&id, &g("bash", GrantKind::Exact, "ls"), Some("y"))?;
                tx.add_grant(&id, &g("write", GrantKind::Tool, ""), None)
            })
            .unwrap();
        assert_eq!(
            store.read(|c| grants(c, &id)).unwrap(),
            vec![
                g("bash", GrantKind::Exact, "cargo test"),
                g("bash", GrantKind::Exact, "ls"),
                g("bash", GrantKind::Prefix, "cargo test"),
                g("write", GrantKind::Tool, ""),
            ]
        );
        // The prefix grant was also given outside the scope, so it stays; another scope's
        // grant stays until its own scope ends.
        store
            .write(2, |tx| tx.drop_scoped_grants(&id, "x"))
            .unwrap();
        assert_eq!(
            store.read(|c| grants(c, &id)).unwrap(),
            vec![
                g("bash", GrantKind::Exact, "ls"),
                g("bash", GrantKind::Prefix, "cargo test"),
                g("write", GrantKind::Tool, "")
            ]
        );
    }

    /// The user's messages and the agent's replies are searched, as plain text: `%` and `_`
    /// are no wildcards, the JSON a reply is kept in is not searched, nor are other messages
    /// (a goal's) or tool results.
    #[test]
    fn search_finds_the_users_messages_and_the_agents_replies_literally() {
        use waymark_protocol::{HistoryItem, MessageSource, Position, ToolStatus};
        let store = Store::open_in_memory().unwrap();
        let asked = make_session(&store);
        let answered = make_session(&store);
        let other = make_session(&store);
        let near = make_session(&store);
        let say = |id: &str, source: MessageSource, text: &str| {
            store
                .write(1, |tx| {
                    tx.insert_message(id, source, text, Position::Tail, None)
                })
                .unwrap();
        };
        say(&asked, MessageSource::User, "CPU at 100% in parse_tree?");
        say(&answered, MessageSource::User, "hi");
        say(&other, MessageSource::Goal, "Keep working on parse_tree.");
        say(&near, MessageSource::User, "100 files in parseXtree");
        store
            .write(1, |tx| {
                tx.append_history(
                    &answered,
                    None,
                    &HistoryItem::Assistant {
                        text: "The Parse_Tree walk was quadratic.".into(),
                        reasoning: None,
                        tool_calls: Vec::new(),
                    },
                )?;
                tx.append_history(
                    &other,
                    None,
                    &HistoryItem::ToolResult {
                        call_id: "c".into(),
                        wire_id: None,
                        name: "bash".into(),
                        status: ToolStatus::Ok,
                        content: "parse_tree.rs".into(),
                        images: Vec::new(),
                    },
                )
            })
            .unwrap();
        // Newest activity first: `answered`, then `asked`.
        store.write(30, |tx| tx.touch_session(&answered)).unwrap();
        store.write(20, |tx| tx.touch_session(&asked)).unwrap();
        let find = |needle: &str, limit| store.read(|c| search(c, needle, limit)).unwrap();

        assert_eq!(
            find("PARSE_TREE", 10),
            vec![answered.clone(), asked.clone()]
        );
        assert_eq!(find("parse_tree", 1), vec![answered.clone()]);
        assert_eq!(find("quadratic", 10), vec![answered.clone()]);
        // As wildcards, these would match `near` ("100 files", "parseXtree") too.
        assert_eq!(find("100%", 10), vec![asked.clone()]);
        assert_eq!(find("%", 10), vec![asked.clone()]);
        assert_eq!(find("e_t", 10), vec![answered.clone(), asked.clone()]);
        assert_eq!(find("_", 10), vec![answered.clone(), asked.clone()]);
        assert_eq!(find("parsextree", 10), vec![near.clone()]);
        // The JSON keys of a reply, a goal's message, a tool's result, an empty needle.
        assert!(find("text", 10).is_empty());
        assert!(find("working", 10).is_empty());
        assert!(find(".rs", 10).is_empty());
        assert!(find("", 10).is_empty());
    }
}
