//! Plans, their revisions, and content blobs.

use rusqlite::{Connection, OptionalExtension, params};
use waymark_extension::error::{Error, Result};
use waymark_protocol::{PlanStatus, RevisionAuthor};

/// Which plan-mode reminder a plan turn got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReminderForm {
    Full,
    Short,
}

/// The one reminder after leaving plan mode: due at the next turn, then repeated only within
/// the turn that showed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitReminder {
    Due,
    ShownIn(i64),
}

impl ExitReminder {
    /// As the `exit_reminder` column holds it: `due`, or the turn id.
    fn encode(self) -> String {
        match self {
            ExitReminder::Due => "due".into(),
            ExitReminder::ShownIn(turn) => turn.to_string(),
        }
    }

    fn decode(s: &str) -> Option<ExitReminder> {
        match s {
            "due" => Some(ExitReminder::Due),
            turn => turn.parse().ok().map(ExitReminder::ShownIn),
        }
    }
}

/// A plan as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanRow {
    pub id: String,
    pub session_id: String,
    pub status: PlanStatus,
    pub revisions: u32,
    pub plan_turns: u32,
    pub last_turn_id: Option<i64>,
    pub full_reminder_due: bool,
    pub last_reminder: Option<ReminderForm>,
    pub created_at: i64,
}

/// One frozen revision of a plan.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RevisionRow {
    pub plan_id: String,
    pub version: u32,
    pub key: String,
    pub sha256: String,
    pub bytes: u64,
    pub author: RevisionAuthor,
    pub truncated: bool,
    pub created_at: i64,
}

const PLAN_COLUMNS: &str = "id, session_id, status, revisions, plan_turns, last_turn_id, \
     full_reminder_due, last_reminder, created_at";

fn row_to_plan(r: &rusqlite::Row<'_>) -> rusqlite::Result<PlanRow> {
    Ok(PlanRow {
        id: r.get(0)?,
        session_id: r.get(1)?,
        status: waymark_store::enum_col(r, 2)?,
        revisions: r.get::<_, i64>(3)? as u32,
        plan_turns: r.get::<_, i64>(4)? as u32,
        last_turn_id: r.get(5)?,
        full_reminder_due: r.get::<_, i64>(6)? != 0,
        last_reminder: match r.get::<_, Option<String>>(7)? {
            Some(_) => Some(waymark_store::enum_col(r, 7)?),
            None => None,
        },
        created_at: r.get(8)?,
    })
}

fn row_to_revision(r: &rusqlite::Row<'_>) -> rusqlite::Result<RevisionRow> {
    Ok(RevisionRow {
        plan_id: r.get(0)?,
        version: r.get::<_, i64>(1)? as u32,
        key: r.get(2)?,
        sha256: r.get(3)?,
        bytes: r.get::<_, i64>(4)? as u64,
        author: waymark_store::enum_col(r, 5)?,
        truncated: r.get::<_, i64>(6)? != 0,
        created_at: r.get(7)?,
    })
}

pub use waymark_store::blobs::sha256_hex;

/// The plan extension's writes to its own tables, in the core transaction.
pub trait PlanWrites {
    fn create_plan(&mut self, id: &str, session_id: &str) -> Result<()>;
    fn set_plan_status(&mut self, id: &str, status: PlanStatus) -> Result<()>;
    /// Records a revision whose content is already in `blob_key`; returns its version.
    fn add_revision(
        &mut self,
        plan_id: &str,
        blob_key_for: &dyn Fn(u32) -> String,
        content: &[u8],
        author: RevisionAuthor,
        truncated: bool,
    ) -> Result<RevisionRow>;
    /// Counts a plan turn once per turn id and says whether it gets the full reminder.
    fn plan_turn_reminder(&mut self, plan_id: &str, turn_id: i64) -> Result<bool>;
    /// The user spoke while planning: the next plan turn gets the full reminder again.
    fn plan_full_reminder_due(&mut self, plan_id: &str) -> Result<()>;
    /// Marks (or clears) the one exit reminder after leaving plan mode.
    fn set_exit_reminder(&mut self, session_id: &str, value: Option<ExitReminder>) -> Result<()>;
}

impl PlanWrites for waymark_store::Tx<'_> {
    fn create_plan(&mut self, id: &str, session_id: &str) -> Result<()> {
        let now = self.now();
        self.conn().execute(
            "INSERT INTO plans (id, session_id, status, created_at) VALUES (?1, ?2, 'drafting', ?3)",
            params![id, session_id, now],
        )?;
        self.conn().execute(
            "INSERT INTO plan_sessions (session_id, current_plan_id) VALUES (?1, ?2)
             ON CONFLICT (session_id) DO UPDATE
                 SET current_plan_id = excluded.current_plan_id, exit_reminder = NULL",
            params![session_id, id],
        )?;
        Ok(())
    }

    fn set_plan_status(&mut self, id: &str, status: PlanStatus) -> Result<()> {
        let now = self.now();
        let ended = match status {
            PlanStatus::Approved
            | PlanStatus::Rejected
            | PlanStatus::Withdrawn
            | PlanStatus::Left => true,
            PlanStatus::Drafting | PlanStatus::AwaitingApproval => false,
        };
        self.conn().execute(
            "UPDATE plans SET status = ?2, ended_at = CASE WHEN ?3 THEN ?4 ELSE NULL END WHERE id = ?1",
            params![id, status.as_str(), ended, now],
        )?;
        Ok(())
    }

    fn add_revision(
        &mut self,
        plan_id: &str,
        blob_key_for: &dyn Fn(u32) -> String,
        content: &[u8],
        author: RevisionAuthor,
        truncated: bool,
    ) -> Result<RevisionRow> {
        let version: i64 = self.conn().query_row(
            "SELECT revisions + 1 FROM plans WHERE id = ?1",
            [plan_id],
            |r| r.get(0),
        )?;
        let key = blob_key_for(version as u32);
        let sha = self.put_blob(&key, content)?;
        let now = self.now();
        self.conn().execute(
            "INSERT INTO plan_revisions (plan_id, version, blob_key, sha256, bytes, author, truncated, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![plan_id, version, key, sha, content.len() as i64, author.as_str(), truncated, now],
        )?;
        self.conn().execute(
            "UPDATE plans SET revisions = ?2 WHERE id = ?1",
            params![plan_id, version],
        )?;
        Ok(RevisionRow {
            plan_id: plan_id.to_string(),
            version: version as u32,
            key,
            sha256: sha,
            bytes: content.len() as u64,
            author,
            truncated,
            created_at: now,
        })
    }

    fn plan_turn_reminder(&mut self, plan_id: &str, turn_id: i64) -> Result<bool> {
        let plan = plan(self.conn(), plan_id)?
            .ok_or_else(|| Error::Corrupt(format!("plan {plan_id} vanished")))?;
        if plan.last_turn_id == Some(turn_id) {
            return Ok(plan.last_reminder == Some(ReminderForm::Full));
        }
        let n = plan.plan_turns + 1;
        let full = n == 1 || n % 5 == 0 || plan.full_reminder_due;
        self.conn().execute(
            "UPDATE plans SET plan_turns = ?2, last_turn_id = ?3, full_reminder_due = 0, last_reminder = ?4
             WHERE id = ?1",
            params![
                plan_id,
                n,
                turn_id,
                waymark_protocol::wire::name(&if full {
                    ReminderForm::Full
                } else {
                    ReminderForm::Short
                })
            ],
        )?;
        Ok(full)
    }

    fn plan_full_reminder_due(&mut self, plan_id: &str) -> Result<()> {
        self.conn().execute(
            "UPDATE plans SET full_reminder_due = 1 WHERE id = ?1",
            [plan_id],
        )?;
        Ok(())
    }

    fn set_exit_reminder(&mut self, session_id: &str, value: Option<ExitReminder>) -> Result<()> {
        self.conn().execute(
            "INSERT INTO plan_sessions (session_id, exit_reminder) VALUES (?1, ?2)
             ON CONFLICT (session_id) DO UPDATE SET exit_reminder = excluded.exit_reminder",
            params![session_id, value.map(|v| v.encode())],
        )?;
        Ok(())
    }
}

pub fn plan(conn: &Connection, id: &str) -> Result<Option<PlanRow>> {
    Ok(conn
        .prepare_cached(&format!("SELECT {PLAN_COLUMNS} FROM plans WHERE id = ?1"))?
        .query_row([id], row_to_plan)
        .optional()?)
}

/// The session's current (most recent) plan, if it ever entered plan mode.
pub fn current_plan(conn: &Connection, session_id: &str) -> Result<Option<PlanRow>> {
    let id: Option<String> = conn
        .prepare_cached("SELECT current_plan_id FROM plan_sessions WHERE session_id = ?1")?
        .query_row([session_id], |r| r.get(0))
        .optional()?
        .flatten();
    match id {
        Some(id) => plan(conn, &id),
        None => Ok(None),
    }
}

pub fn exit_reminder(conn: &Connection, session_id: &str) -> Result<Option<ExitReminder>> {
    let stored: Option<String> = conn
        .prepare_cached("SELECT exit_reminder FROM plan_sessions WHERE session_id = ?1")?
        .query_row([session_id], |r| r.get(0))
        .optional()?
        .flatten();
    stored
        .map(|s| {
            ExitReminder::decode(&s)
                .ok_or_else(|| Error::Corrupt(format!("session {session_id}: exit reminder `{s}`")))
        })
        .transpose()
}

/// Revisions of a plan, oldest first.
pub fn revisions(conn: &Connection, plan_id: &str) -> Result<Vec<RevisionRow>> {
    let mut stmt = conn.prepare(
        "SELECT plan_id, version, blob_key, sha256, bytes, author, truncated, created_at
         FROM plan_revisions WHERE plan_id = ?1 ORDER BY version",
    )?;
    let rows = stmt.query_map([plan_id], row_to_revision)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// All revisions of every plan of a session, oldest first.
pub fn session_revisions(conn: &Connection, session_id: &str) -> Result<Vec<RevisionRow>> {
    let mut stmt = conn.prepare(
        "SELECT r.plan_id, r.version, r.blob_key, r.sha256, r.bytes, r.author, r.truncated, r.created_at
         FROM plan_revisions r JOIN plans p ON p.id = r.plan_id
         WHERE p.session_id = ?1 ORDER BY r.created_at, r.version",
    )?;
    let rows = stmt.query_map([session_id], row_to_revision)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Every plan of a session, oldest first, with when each ended.
pub fn session_plans(conn: &Connection, session_id: &str) -> Result<Vec<(PlanRow, Option<i64>)>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT {PLAN_COLUMNS}, ended_at FROM plans WHERE session_id = ?1 ORDER BY created_at, rowid"
    ))?;
    let rows = stmt.query_map([session_id], |r| Ok((row_to_plan(r)?, r.get(9)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// A comment as stored: the comment, its quote, and its id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommentRow {
    pub id: i64,
    pub plan_id: String,
    pub version: u32,
    pub comment: waymark_protocol::LineComment,
    pub quote: String,
}

/// The plan extension's comment writes, in the core transaction.
pub trait PlanCommentWrites {
    /// Stores a comment on lines of a revision (the comment and the quote redacted).
    fn add_plan_comment(
        &mut self,
        plan_id: &str,
        version: u32,
        c: &waymark_protocol::LineComment,
        quote: &str,
    ) -> Result<i64>;
}

impl PlanCommentWrites for waymark_store::Tx<'_> {
    fn add_plan_comment(
        &mut self,
        plan_id: &str,
        version: u32,
        c: &waymark_protocol::LineComment,
        quote: &str,
    ) -> Result<i64> {
        let now = self.now();
        let (quote, text) = (
            self.redact(quote).into_owned(),
            self.redact(&c.text).into_owned(),
        );
        self.conn().execute(
            "INSERT INTO plan_comments (plan_id, version, start_line, end_line, quote, text, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![plan_id, version, c.start, c.end, quote, text, now],
        )?;
        Ok(self.conn().last_insert_rowid())
    }
}

/// The comments on a plan's revisions, oldest first.
pub fn plan_comments(conn: &Connection, plan_id: &str) -> Result<Vec<CommentRow>> {
    let mut stmt = conn.prepare(
        "SELECT id, plan_id, version, start_line, end_line, quote, text FROM plan_comments
         WHERE plan_id = ?1 ORDER BY id",
    )?;
    let rows = stmt.query_map([plan_id], |r| {
        Ok(CommentRow {
            id: r.get(0)?,
            plan_id: r.get(1)?,
            version: r.get::<_, i64>(2)?.clamp(0, i64::from(u32::MAX)) as u32,
            comment: waymark_protocol::LineComment {
                start: r.get::<_, i64>(3)?.clamp(0, i64::from(u32::MAX)) as u32,
                end: r.get::<_, i64>(4)?.clamp(0, i64::from(u32::MAX)) as u32,
                text: r.get(6)?,
            },
            quote: r.get(5)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

pub use waymark_store::blobs::get as blob;

#[cfg(test)]
mod tests {
    use super::*;
    use waymark_fixtures::session as make_session;

    #[test]
    fn revisions_blobs_and_reminder_cadence() {
        let store = waymark_fixtures::store_with(&[std::sync::Arc::new(crate::PlanExtension)]);
        let s = make_session(&store);
        store.write(1, |tx| tx.create_plan("p1", &s)).unwrap();
        let key = |v: u32| format!("plan/p1/v{v}.md");
        let (r1, _) = store
            .write(2, |tx| {
                tx.add_revision("p1", &key, b"## Summary\nx\n", RevisionAuthor::Model, false)
            })
            .unwrap();
        let (r2, _) = store
            .write(3, |tx| {
                tx.add_revision("p1", &key, b"## Summary\ny\n", RevisionAuthor::User, false)
            })
            .unwrap();
        assert_eq!((r1.version, r2.version), (1, 2));
        assert_eq!(r2.key, "plan/p1/v2.md");
        assert_eq!(r1.sha256, sha256_hex(b"## Summary\nx\n"));
        assert_eq!(
            store.read(|c| blob(c, "plan/p1/v1.md")).unwrap().unwrap(),
            b"## Summary\nx\n"
        );
        assert_eq!(store.read(|c| revisions(c, "p1")).unwrap().len(), 2);
        assert_eq!(
            store.read(|c| current_plan(c, &s)).unwrap().unwrap().id,
            "p1"
        );
        // Full on the first turn, short after, full again on the 5th and after interjection.
        let mut kinds = Vec::new();
        for turn in 1..=6 {
            kinds.push(
                store
                    .write(10, |tx| tx.plan_turn_reminder("p1", turn))
                    .unwrap()
                    .0,
            );
            // Resuming the same turn keeps its kind.
            assert_eq!(
                store
                    .write(10, |tx| tx.plan_turn_reminder("p1", turn))
                    .unwrap()
                    .0,
                kinds[turn as usize - 1]
            );
        }
        assert_eq!(kinds, vec![true, false, false, false, true, false]);
        store
            .write(11, |tx| tx.plan_full_reminder_due("p1"))
            .unwrap();
        assert!(
            store
                .write(12, |tx| tx.plan_turn_reminder("p1", 7))
                .unwrap()
                .0
        );
    }

    #[test]
    fn a_tampered_blob_is_reported() {
        let store = waymark_fixtures::store_with(&[std::sync::Arc::new(crate::PlanExtension)]);
        store.write(1, |tx| tx.put_blob("k", b"abc")).unwrap();
        store
            .read(|c| {
                Ok::<_, waymark_extension::error::Error>(
                    c.execute("UPDATE blobs SET bytes = X'00' WHERE key = 'k'", [])?,
                )
            })
            .unwrap();
        assert_eq!(
            store.read(|c| blob(c, "k")).unwrap_err().code(),
            "corrupt_data"
        );
        assert!(store.write(2, |tx| tx.put_blob("k", b"other")).is_err());
    }
}
