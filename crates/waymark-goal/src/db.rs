//! Goals: the session's current goal, its budgets and usage, breaker and verifier counters,
//! and the queue of upcoming goals. Usage arithmetic happens in the caller's transaction.

use rusqlite::{Connection, OptionalExtension, params};
use waymark_extension::error::{Error, Result};
use waymark_protocol::{GoalActor, GoalReason, GoalStatus, GoalStep, GoalWait, UsageLimit};
use waymark_store::clamp_i64;

/// A goal as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoalRow {
    pub id: String,
    pub session_id: String,
    pub objective: String,
    pub criteria: Option<String>,
    pub status: GoalStatus,
    pub reason: GoalReason,
    pub actor: GoalActor,
    pub revision: u32,
    pub token_budget: Option<u64>,
    pub turn_budget: Option<u64>,
    pub time_budget_ms: Option<u64>,
    pub tokens_used: u64,
    pub turns_used: u64,
    pub active_ms: u64,
    pub counters: GoalCounters,
    /// What the worker asked when it reported the goal blocked (cleared when it moves on).
    pub question: Option<String>,
    /// While `usage_limited`: when the limit resets and whether the goal resumes then.
    pub usage_limit: Option<UsageLimit>,
    /// The steps of the plan the goal implements, with the verifier's latest verdicts.
    pub steps: Vec<GoalStep>,
    /// What the agent waits for (G-47), while it waits; its check shown redacted.
    pub wait: Option<GoalWait>,
    /// The wait's check command as it runs (unredacted; never shown).
    pub wait_command: Option<String>,
    /// The cost budget in micro-dollars (G-32).
    pub cost_budget: Option<u64>,
    /// What the goal's calls cost so far, and how many had no price.
    pub cost: waymark_protocol::cost::Spend,
}

/// Settlement's memory between turns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GoalCounters {
    pub continuations: u32,
    pub repeated_replies: u32,
    pub toolless_turns: u32,
    pub last_reply: Option<String>,
    pub completion_claimed: bool,
    pub not_met_count: u32,
    pub last_gaps: Option<String>,
    pub grace_used: u32,
    pub summary_due: bool,
    /// Automatic resumes after a usage limit since a turn last got through.
    pub limit_resumes: u32,
    /// Waits the agent began in a row with no other turn between them (G-47).
    pub waits_in_row: u32,
}

/// Budgets of a new goal.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Budgets {
    pub tokens: Option<u64>,
    pub turns: Option<u64>,
    pub time_ms: Option<u64>,
    /// In micro-dollars.
    pub cost: Option<u64>,
}

const COLUMNS: &str = "id, session_id, objective, criteria, status, reason, actor, revision, \
     token_budget, turn_budget, time_budget_ms, tokens_used, turns_used, active_ms, continuations, \
     repeated_replies, toolless_turns, last_reply, completion_claimed, not_met_count, last_gaps, \
     grace_used, summary_due, question, usage_limit, limit_resumes, steps, cost_budget_micros, \
     cost_used_micros, cost_unpriced_calls, wait, wait_command, waits_in_row";

fn opt_u64(v: Option<i64>) -> Option<u64> {
    v.map(|x| x.max(0) as u64)
}

/// A goal row before its closed-set columns are checked: the row, then its status, reason,
/// actor and usage-limit JSON as stored.
type RawGoal = (
    GoalRow,
    String,
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
);

fn row_to_goal(r: &rusqlite::Row<'_>) -> rusqlite::Result<RawGoal> {
    let status: String = r.get(4)?;
    let reason: String = r.get(5)?;
    let actor: String = r.get(6)?;
    Ok((
        GoalRow {
            id: r.get(0)?,
            session_id: r.get(1)?,
            objective: r.get(2)?,
            criteria: r.get(3)?,
            status: GoalStatus::Active,
            reason: GoalReason::Created,
            actor: GoalActor::System,
            revision: r.get::<_, i64>(7)? as u32,
            token_budget: opt_u64(r.get(8)?),
            turn_budget: opt_u64(r.get(9)?),
            time_budget_ms: opt_u64(r.get(10)?),
            tokens_used: r.get::<_, i64>(11)?.max(0) as u64,
            turns_used: r.get::<_, i64>(12)?.max(0) as u64,
            active_ms: r.get::<_, i64>(13)?.max(0) as u64,
            counters: GoalCounters {
                continuations: r.get::<_, i64>(14)? as u32,
                repeated_replies: r.get::<_, i64>(15)? as u32,
                toolless_turns: r.get::<_, i64>(16)? as u32,
                last_reply: r.get(17)?,
                completion_claimed: r.get::<_, i64>(18)? != 0,
                not_met_count: r.get::<_, i64>(19)? as u32,
                last_gaps: r.get(20)?,
                grace_used: r.get::<_, i64>(21)? as u32,
                summary_due: r.get::<_, i64>(22)? != 0,
                limit_resumes: r.get::<_, i64>(25)?.clamp(0, i64::from(u32::MAX)) as u32,
                waits_in_row: r.get::<_, i64>(32)?.clamp(0, i64::from(u32::MAX)) as u32,
            },
            question: r.get(23)?,
            usage_limit: None,
            steps: Vec::new(),
            wait: None,
            wait_command: r.get(31)?,
            cost_budget: opt_u64(r.get(27)?),
            cost: waymark_protocol::cost::Spend {
                micros: r.get::<_, i64>(28)?.max(0) as u64,
                unpriced_calls: r.get::<_, i64>(29)?.max(0) as u64,
            },
        },
        status,
        reason,
        actor,
        r.get(24)?,
        r.get(26)?,
        r.get(30)?,
    ))
}

fn decode(parts: RawGoal) -> Result<GoalRow> {
    let (mut g, status, reason, actor, limit, steps, wait) = parts;
    // An unreadable wait is no wait: the goal carries on rather than sleeping forever.
    g.wait = wait.and_then(|w| match serde_json::from_str::<GoalWait>(&w) {
        Ok(w) => Some(w),
        Err(e) => {
            tracing::warn!(goal = %g.id, "the goal's wait is unreadable, ignored: {e}");
            None
        }
    });
    // Unreadable steps leave a usable goal without them rather than a broken session.
    g.steps = steps
        .and_then(|s| match serde_json::from_str::<Vec<GoalStep>>(&s) {
            Ok(v) => Some(v),
            Err(e) => {
                tracing::warn!(goal = %g.id, "the goal's plan steps are unreadable, ignored: {e}");
                None
            }
        })
        .unwrap_or_default();
    // Unreadable (damaged, or written by another version): the goal keeps its status and
    // simply has no automatic resume, which is the safe side; the session stays usable.
    g.usage_limit = limit.and_then(|l| match serde_json::from_str::<UsageLimit>(&l) {
        Ok(l) => Some(l),
        Err(e) => {
            tracing::warn!(goal = %g.id, "the goal's usage limit is unreadable, ignored: {e}");
            None
        }
    });
    g.status = GoalStatus::parse(&status)
        .ok_or_else(|| Error::Corrupt(format!("goal {}: status `{status}`", g.id)))?;
    g.reason = GoalReason::parse(&reason)
        .ok_or_else(|| Error::Corrupt(format!("goal {}: reason `{reason}`", g.id)))?;
    g.actor = GoalActor::parse(&actor)
        .ok_or_else(|| Error::Corrupt(format!("goal {}: actor `{actor}`", g.id)))?;
    Ok(g)
}

/// The goal extension's writes to its own tables, in the core transaction.
pub trait GoalWrites {
    /// Creates an active goal and makes it the session's current one.
    fn create_goal(
        &mut self,
        id: &str,
        session_id: &str,
        objective: &str,
        criteria: Option<&str>,
        budgets: Budgets,
        actor: GoalActor,
    ) -> Result<()>;
    /// Writes a status change (the caller has checked it is allowed). The worker's question
    /// goes; `usage_limit` is kept only with `usage_limited`.
    fn set_goal_status(
        &mut self,
        id: &str,
        status: GoalStatus,
        reason: GoalReason,
        actor: GoalActor,
        usage_limit: Option<&UsageLimit>,
    ) -> Result<()>;
    /// Changes what a usage-limited goal does when its limit resets (the user cancelled the
    /// automatic resume, or the process that would make it stopped).
    fn set_goal_usage_limit(&mut self, id: &str, limit: &UsageLimit) -> Result<()>;
    /// Adds a turn's usage.
    fn add_goal_usage(&mut self, id: &str, tokens: u64, turns: u64, active_ms: u64) -> Result<()>;
    /// Adds what calls of the goal cost (G-32).
    fn add_goal_cost(&mut self, id: &str, spend: waymark_protocol::cost::Spend) -> Result<()>;
    /// Replaces the budgets (None clears a dimension); bumps the revision.
    fn set_goal_budgets(&mut self, id: &str, budgets: Budgets) -> Result<()>;
    /// Changes the objective; bumps the revision.
    fn edit_goal(&mut self, id: &str, objective: &str) -> Result<()>;
    /// Stores the plan steps of a goal and their verdicts.
    fn set_goal_steps(&mut self, id: &str, steps: &[GoalStep]) -> Result<()>;
    /// Keeps what the worker asked when it reported the goal blocked (redacted).
    fn set_goal_question(&mut self, id: &str, question: &str) -> Result<()>;
    /// Stores settlement's counters.
    fn set_goal_counters(&mut self, id: &str, c: &GoalCounters) -> Result<()>;
    /// Sets (or with None ends) what the goal waits for.
    fn set_goal_wait(&mut self, id: &str, wait: Option<&GoalWait>) -> Result<()>;
    /// Sets (or with None clears) the command a wait's check runs.
    fn set_goal_wait_command(&mut self, id: &str, command: Option<&str>) -> Result<()>;
    /// Removes the session's current goal (the row stays for the record).
    fn clear_goal(&mut self, session_id: &str) -> Result<Option<String>>;
    /// Appends an objective, with the budgets it starts with, to the end of the queue.
    fn enqueue_goal(&mut self, session_id: &str, objective: &str, budgets: &Budgets)
    -> Result<i64>;
    /// The first queued goal in line, with its id and budgets (left queued).
    fn next_queued_goal(&mut self, session_id: &str) -> Result<Option<(i64, String, Budgets)>>;
    /// Removes a queued goal (it started, or the user took it out); false if it is not queued.
    fn drop_queued_goal(&mut self, session_id: &str, id: i64) -> Result<bool>;
    /// Moves a queued goal to line position `to` (0 first; past the end, last).
    fn move_queued_goal(&mut self, session_id: &str, id: i64, to: u32) -> Result<bool>;
    /// Changes a queued goal's objective and budgets.
    fn edit_queued_goal(
        &mut self,
        session_id: &str,
        id: i64,
        objective: &str,
        budgets: &Budgets,
    ) -> Result<bool>;
}

impl GoalWrites for waymark_store::Tx<'_> {
    fn create_goal(
        &mut self,
        id: &str,
        session_id: &str,
        objective: &str,
        criteria: Option<&str>,
        budgets: Budgets,
        actor: GoalActor,
    ) -> Result<()> {
        let now = self.now();
        // An objective or criteria may quote a secret: stored (and shown) redacted.
        let objective = self.redact(objective).into_owned();
        let criteria = criteria.map(|c| self.redact(c).into_owned());
        self.conn().execute(
            "INSERT INTO goals (id, session_id, objective, criteria, status, reason, actor,
                token_budget, turn_budget, time_budget_ms, created_at, updated_at, cost_budget_micros)
             VALUES (?1, ?2, ?3, ?4, 'active', 'created', ?5, ?6, ?7, ?8, ?9, ?9, ?10)",
            params![
                id,
                session_id,
                objective,
                criteria,
                actor.as_str(),
                budgets.tokens.map(clamp_i64),
                budgets.turns.map(clamp_i64),
                budgets.time_ms.map(clamp_i64),
                now,
                budgets.cost.map(clamp_i64)
            ],
        )?;
        self.conn().execute(
            "INSERT INTO goal_sessions (session_id, current_goal_id) VALUES (?1, ?2)
             ON CONFLICT (session_id) DO UPDATE SET current_goal_id = excluded.current_goal_id",
            params![session_id, id],
        )?;
        Ok(())
    }

    fn set_goal_status(
        &mut self,
        id: &str,
        status: GoalStatus,
        reason: GoalReason,
        actor: GoalActor,
        usage_limit: Option<&UsageLimit>,
    ) -> Result<()> {
        let now = self.now();
        let limit = usage_limit
            .filter(|_| status == GoalStatus::UsageLimited)
            .map(serde_json::to_string)
            .transpose()
            .map_err(|e| Error::Corrupt(format!("goal {id}: usage limit: {e}")))?;
        self.conn().execute(
            "UPDATE goals SET status = ?2, reason = ?3, actor = ?4, updated_at = ?5, question = NULL,
             usage_limit = ?6 WHERE id = ?1",
            params![id, status.as_str(), reason.as_str(), actor.as_str(), now, limit],
        )?;
        Ok(())
    }

    fn set_goal_wait(&mut self, id: &str, wait: Option<&GoalWait>) -> Result<()> {
        let json = wait
            .map(serde_json::to_string)
            .transpose()
            .map_err(|e| Error::Corrupt(format!("goal {id}: wait: {e}")))?;
        // Ending the wait ends its command too.
        self.conn().execute(
            "UPDATE goals SET wait = ?2, updated_at = ?3,
                 wait_command = CASE WHEN ?2 IS NULL THEN NULL ELSE wait_command END
             WHERE id = ?1",
            params![id, json, self.now()],
        )?;
        Ok(())
    }

    fn set_goal_wait_command(&mut self, id: &str, command: Option<&str>) -> Result<()> {
        self.conn().execute(
            "UPDATE goals SET wait_command = ?2 WHERE id = ?1",
            params![id, command],
        )?;
        Ok(())
    }

    fn set_goal_usage_limit(&mut self, id: &str, limit: &UsageLimit) -> Result<()> {
        let json = serde_json::to_string(limit)
            .map_err(|e| Error::Corrupt(format!("goal {id}: usage limit: {e}")))?;
        self.conn().execute(
            "UPDATE goals SET usage_limit = ?2 WHERE id = ?1 AND status = 'usage_limited'",
            params![id, json],
        )?;
        Ok(())
    }

    fn add_goal_usage(&mut self, id: &str, tokens: u64, turns: u64, active_ms: u64) -> Result<()> {
        // Saturating sums: SQLite turns an overflowing integer sum into a float.
        self.conn()
            .prepare_cached(
                "UPDATE goals SET
                   tokens_used = CASE WHEN tokens_used > 9223372036854775807 - ?2
                                 THEN 9223372036854775807 ELSE tokens_used + ?2 END,
                   turns_used = CASE WHEN turns_used > 9223372036854775807 - ?3
                                THEN 9223372036854775807 ELSE turns_used + ?3 END,
                   active_ms = CASE WHEN active_ms > 9223372036854775807 - ?4
                               THEN 9223372036854775807 ELSE active_ms + ?4 END
                 WHERE id = ?1",
            )?
            .execute(params![
                id,
                clamp_i64(tokens),
                clamp_i64(turns),
                clamp_i64(active_ms)
            ])?;
        Ok(())
    }

    fn add_goal_cost(&mut self, id: &str, spend: waymark_protocol::cost::Spend) -> Result<()> {
        self.conn()
            .prepare_cached(
                "UPDATE goals SET
                   cost_used_micros = CASE WHEN cost_used_micros > 9223372036854775807 - ?2
                                      THEN 9223372036854775807 ELSE cost_used_micros + ?2 END,
                   cost_unpriced_calls = CASE WHEN cost_unpriced_calls > 9223372036854775807 - ?3
                                         THEN 9223372036854775807 ELSE cost_unpriced_calls + ?3 END
                 WHERE id = ?1",
            )?
            .execute(params![
                id,
                clamp_i64(spend.micros),
                clamp_i64(spend.unpriced_calls)
            ])?;
        Ok(())
    }

    fn set_goal_budgets(&mut self, id: &str, budgets: Budgets) -> Result<()> {
        let now = self.now();
        self.conn().execute(
            "UPDATE goals SET token_budget = ?2, turn_budget = ?3, time_budget_ms = ?4,
             cost_budget_micros = ?6, revision = revision + 1, grace_used = 0, updated_at = ?5
             WHERE id = ?1",
            params![
                id,
                budgets.tokens.map(clamp_i64),
                budgets.turns.map(clamp_i64),
                budgets.time_ms.map(clamp_i64),
                now,
                budgets.cost.map(clamp_i64)
            ],
        )?;
        Ok(())
    }

    fn edit_goal(&mut self, id: &str, objective: &str) -> Result<()> {
        let now = self.now();
        let objective = self.redact(objective).into_owned();
        self.conn().execute(
            "UPDATE goals SET objective = ?2, revision = revision + 1, updated_at = ?3 WHERE id = ?1",
            params![id, objective, now],
        )?;
        Ok(())
    }

    fn set_goal_steps(&mut self, id: &str, steps: &[GoalStep]) -> Result<()> {
        let json = serde_json::to_string(steps)
            .map_err(|e| Error::Corrupt(format!("goal {id}: steps: {e}")))?;
        self.conn().execute(
            "UPDATE goals SET steps = ?2 WHERE id = ?1",
            params![id, json],
        )?;
        Ok(())
    }

    fn set_goal_question(&mut self, id: &str, question: &str) -> Result<()> {
        let q = self.redact(question).into_owned();
        self.conn().execute(
            "UPDATE goals SET question = ?2 WHERE id = ?1",
            params![id, q],
        )?;
        Ok(())
    }

    fn set_goal_counters(&mut self, id: &str, c: &GoalCounters) -> Result<()> {
        self.conn()
            .prepare_cached(
                "UPDATE goals SET continuations = ?2, repeated_replies = ?3, toolless_turns = ?4,
                 last_reply = ?5, completion_claimed = ?6, not_met_count = ?7, last_gaps = ?8,
                 grace_used = ?9, summary_due = ?10, limit_resumes = ?11, waits_in_row = ?12
                 WHERE id = ?1",
            )?
            .execute(params![
                id,
                c.continuations,
                c.repeated_replies,
                c.toolless_turns,
                c.last_reply,
                c.completion_claimed,
                c.not_met_count,
                c.last_gaps,
                c.grace_used,
                c.summary_due,
                c.limit_resumes,
                c.waits_in_row
            ])?;
        Ok(())
    }

    fn clear_goal(&mut self, session_id: &str) -> Result<Option<String>> {
        let now = self.now();
        let id: Option<String> = self
            .conn()
            .query_row(
                "SELECT current_goal_id FROM goal_sessions WHERE session_id = ?1",
                [session_id],
                |r| r.get(0),
            )
            .optional()?
            .flatten();
        if let Some(id) = &id {
            self.conn().execute(
                "UPDATE goals SET cleared_at = ?2 WHERE id = ?1",
                params![id, now],
            )?;
            self.conn().execute(
                "UPDATE goal_sessions SET current_goal_id = NULL WHERE session_id = ?1",
                [session_id],
            )?;
        }
        Ok(id)
    }

    fn enqueue_goal(
        &mut self,
        session_id: &str,
        objective: &str,
        budgets: &Budgets,
    ) -> Result<i64> {
        let now = self.now();
        let objective = self.redact(objective).into_owned();
        self.conn().execute(
            "INSERT INTO goal_queue (session_id, objective, created_at, token_budget, turn_budget,
             time_budget_ms, cost_budget_micros, position)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7,
                 (SELECT COALESCE(MAX(position), 0) + 1 FROM goal_queue WHERE session_id = ?1))",
            params![
                session_id,
                objective,
                now,
                budgets.tokens.map(clamp_i64),
                budgets.turns.map(clamp_i64),
                budgets.time_ms.map(clamp_i64),
                budgets.cost.map(clamp_i64)
            ],
        )?;
        let id = self.conn().last_insert_rowid();
        emit_queue(self, session_id)?;
        Ok(id)
    }

    fn next_queued_goal(&mut self, session_id: &str) -> Result<Option<(i64, String, Budgets)>> {
        Ok(queued(self.conn(), session_id)?.into_iter().next())
    }

    fn drop_queued_goal(&mut self, session_id: &str, id: i64) -> Result<bool> {
        let n = self.conn().execute(
            "DELETE FROM goal_queue WHERE id = ?1 AND session_id = ?2",
            params![id, session_id],
        )?;
        if n > 0 {
            emit_queue(self, session_id)?;
        }
        Ok(n > 0)
    }

    fn move_queued_goal(&mut self, session_id: &str, id: i64, to: u32) -> Result<bool> {
        let mut ids: Vec<i64> = queued(self.conn(), session_id)?
            .into_iter()
            .map(|(id, ..)| id)
            .collect();
        let Some(from) = ids.iter().position(|&q| q == id) else {
            return Ok(false);
        };
        ids.remove(from);
        ids.insert((to as usize).min(ids.len()), id);
        for (i, q) in ids.iter().enumerate() {
            self.conn().execute(
                "UPDATE goal_queue SET position = ?1 WHERE id = ?2",
                params![i as i64 + 1, q],
            )?;
        }
        emit_queue(self, session_id)?;
        Ok(true)
    }

    fn edit_queued_goal(
        &mut self,
        session_id: &str,
        id: i64,
        objective: &str,
        budgets: &Budgets,
    ) -> Result<bool> {
        let objective = self.redact(objective).into_owned();
        let changed = self.conn().execute(
            "UPDATE goal_queue SET objective = ?3, token_budget = ?4, turn_budget = ?5,
                time_budget_ms = ?6, cost_budget_micros = ?7
             WHERE id = ?1 AND session_id = ?2",
            params![
                id,
                session_id,
                objective,
                budgets.tokens.map(clamp_i64),
                budgets.turns.map(clamp_i64),
                budgets.time_ms.map(clamp_i64),
                budgets.cost.map(clamp_i64)
            ],
        )?;
        if changed > 0 {
            emit_queue(self, session_id)?;
        }
        Ok(changed > 0)
    }
}

/// Logs the queue as it now stands, so front ends follow every change (`goal.queue`).
fn emit_queue(tx: &mut waymark_store::Tx<'_>, session_id: &str) -> Result<()> {
    let queue = queued_goals(tx.conn(), session_id)?;
    tx.emit(session_id, waymark_protocol::EventKind::GoalQueue { queue })?;
    Ok(())
}

/// The queue in line order: id, objective and budgets.
fn queued(conn: &Connection, session_id: &str) -> Result<Vec<(i64, String, Budgets)>> {
    let u = |v: Option<i64>| v.map(|v| v.max(1) as u64);
    let mut stmt = conn.prepare_cached(
        "SELECT id, objective, token_budget, turn_budget, time_budget_ms, cost_budget_micros
         FROM goal_queue WHERE session_id = ?1 ORDER BY position, id",
    )?;
    let rows = stmt.query_map([session_id], |r| {
        Ok((
            r.get(0)?,
            r.get(1)?,
            Budgets {
                tokens: u(r.get(2)?),
                turns: u(r.get(3)?),
                time_ms: u(r.get(4)?),
                cost: u(r.get(5)?),
            },
        ))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// One queued goal of the session: its objective and budgets.
pub fn queued_goal(
    conn: &Connection,
    session_id: &str,
    id: i64,
) -> Result<Option<(String, Budgets)>> {
    Ok(queued(conn, session_id)?
        .into_iter()
        .find(|(q, ..)| *q == id)
        .map(|(_, o, b)| (o, b)))
}

/// What a turn did for a goal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TurnGoal {
    pub goal_id: Option<String>,
    pub revision: Option<u32>,
    /// The model's `update_goal` status proposal, as JSON `{status, message}`.
    pub proposal: Option<String>,
    /// The summary turn after a budget stop.
    pub summary: bool,
}

/// What the goal extension records on a turn, in the core transaction.
pub trait GoalTurnWrites {
    /// Marks a turn as working on `goal_id` at `revision`.
    fn set_turn_goal(
        &mut self,
        turn_id: i64,
        goal_id: &str,
        revision: u32,
        summary: bool,
    ) -> Result<()>;
    /// Records the model's proposal for this turn (the last one wins).
    fn set_turn_proposal(&mut self, turn_id: i64, proposal: &str) -> Result<()>;
}

impl GoalTurnWrites for waymark_store::Tx<'_> {
    fn set_turn_goal(
        &mut self,
        turn_id: i64,
        goal_id: &str,
        revision: u32,
        summary: bool,
    ) -> Result<()> {
        self.conn().execute(
            "INSERT INTO goal_turns (turn_id, goal_id, revision, summary) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (turn_id) DO UPDATE
                 SET goal_id = excluded.goal_id, revision = excluded.revision,
                     summary = excluded.summary",
            params![turn_id, goal_id, revision, summary],
        )?;
        Ok(())
    }

    fn set_turn_proposal(&mut self, turn_id: i64, proposal: &str) -> Result<()> {
        self.conn().execute(
            "INSERT INTO goal_turns (turn_id, proposal) VALUES (?1, ?2)
             ON CONFLICT (turn_id) DO UPDATE SET proposal = excluded.proposal",
            params![turn_id, proposal],
        )?;
        Ok(())
    }
}

/// The goal facts of a turn.
pub fn turn_goal(conn: &Connection, turn_id: i64) -> Result<TurnGoal> {
    Ok(conn
        .prepare_cached(
            "SELECT goal_id, revision, proposal, summary FROM goal_turns WHERE turn_id = ?1",
        )?
        .query_row([turn_id], |r| {
            Ok(TurnGoal {
                goal_id: r.get(0)?,
                revision: r.get::<_, Option<i64>>(1)?.map(|v| v as u32),
                proposal: r.get(2)?,
                summary: r.get::<_, i64>(3)? != 0,
            })
        })
        .optional()?
        .unwrap_or_default())
}

/// The session's current goal, if any.
pub fn current_goal(conn: &Connection, session_id: &str) -> Result<Option<GoalRow>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM goals
         WHERE id = (SELECT current_goal_id FROM goal_sessions WHERE session_id = ?1)"
    ))?
    .query_row([session_id], row_to_goal)
    .optional()?
    .map(decode)
    .transpose()
}

/// The goals waiting in the session's queue, in line order, as front ends show them.
pub fn queued_goals(
    conn: &Connection,
    session_id: &str,
) -> Result<Vec<waymark_protocol::QueuedGoal>> {
    Ok(queued(conn, session_id)?
        .into_iter()
        .map(|(id, objective, b)| waymark_protocol::QueuedGoal {
            id,
            objective,
            tokens: b.tokens,
            turns: b.turns,
            seconds: b.time_ms.map(|ms| ms / 1000),
            cost_micros: b.cost,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use waymark_fixtures::session as make_session;

    #[test]
    fn goal_lifecycle_usage_and_queue() {
        let store = waymark_fixtures::store_with(&[std::sync::Arc::new(crate::GoalExtension)]);
        let s = make_session(&store);
        let budgets = Budgets {
            tokens: Some(50_000),
            turns: Some(10),
            time_ms: None,
            cost: Some(2_500_000),
        };
        store
            .write(1, |tx| {
                tx.create_goal(
                    "g1",
                    &s,
                    "fix the build",
                    Some("tests pass"),
                    budgets,
                    GoalActor::User,
                )
            })
            .unwrap();
        let g = store.read(|c| current_goal(c, &s)).unwrap().unwrap();
        assert_eq!(
            (g.status, g.reason, g.actor, g.revision),
            (GoalStatus::Active, GoalReason::Created, GoalActor::User, 1)
        );
        store
            .write(2, |tx| {
                tx.add_goal_usage("g1", 1200, 1, 5000)?;
                tx.add_goal_usage("g1", 800, 1, 2500)?;
                tx.set_goal_status(
                    "g1",
                    GoalStatus::BudgetLimited,
                    GoalReason::Tokens,
                    GoalActor::Runtime,
                    None,
                )?;
                tx.set_goal_budgets(
                    "g1",
                    Budgets {
                        tokens: Some(100_000),
                        ..budgets
                    },
                )?;
                tx.edit_goal("g1", "fix the build on CI")?;
                tx.set_goal_counters(
                    "g1",
                    &GoalCounters {
                        repeated_replies: 2,
                        last_reply: Some("same".into()),
                        ..Default::default()
                    },
                )
            })
            .unwrap();
        let g = store.read(|c| current_goal(c, &s)).unwrap().unwrap();
        assert_eq!((g.tokens_used, g.turns_used, g.active_ms), (2000, 2, 7500));
        assert_eq!(g.status, GoalStatus::BudgetLimited);
        assert_eq!(g.token_budget, Some(100_000));
        assert_eq!(g.revision, 3);
        assert_eq!(g.objective, "fix the build on CI");
        assert_eq!(g.counters.repeated_replies, 2);
        store
            .write(3, |tx| {
                tx.enqueue_goal(&s, "then the docs", &Budgets::default())
            })
            .unwrap();
        let objectives = |store: &waymark_store::Store| -> Vec<String> {
            store
                .read(|c| queued_goals(c, &s))
                .unwrap()
                .into_iter()
                .map(|q| q.objective)
                .collect()
        };
        assert_eq!(objectives(&store), vec!["then the docs"]);
        let (ids, _) = store
            .write(3, |tx| {
                Ok::<_, Error>((
                    tx.enqueue_goal(&s, "then the release", &Budgets::default())?,
                    tx.enqueue_goal(&s, "then the blog post", &Budgets::default())?,
                ))
            })
            .unwrap();
        // Moved first, then past the end (last); a goal of another session is not moved.
        store
            .write(3, |tx| tx.move_queued_goal(&s, ids.1, 0))
            .unwrap();
        assert_eq!(
            objectives(&store),
            ["then the blog post", "then the docs", "then the release"]
        );
        store
            .write(3, |tx| tx.move_queued_goal(&s, ids.1, 99))
            .unwrap();
        assert_eq!(
            objectives(&store),
            ["then the docs", "then the release", "then the blog post"]
        );
        let (moved, _) = store
            .write(3, |tx| tx.move_queued_goal("other", ids.1, 0))
            .unwrap();
        assert!(!moved);
        store.write(3, |tx| tx.drop_queued_goal(&s, ids.0)).unwrap();
        store.write(3, |tx| tx.drop_queued_goal(&s, ids.1)).unwrap();
        let (next, _) = store.write(4, |tx| tx.next_queued_goal(&s)).unwrap();
        let (id, objective, _) = next.unwrap();
        assert_eq!(objective, "then the docs");
        store.write(4, |tx| tx.drop_queued_goal(&s, id)).unwrap();
        assert!(store.read(|c| queued_goals(c, &s)).unwrap().is_empty());
        let (cleared, _) = store.write(5, |tx| tx.clear_goal(&s)).unwrap();
        assert_eq!(cleared.as_deref(), Some("g1"));
        assert!(store.read(|c| current_goal(c, &s)).unwrap().is_none());
    }

    #[test]
    fn the_schema_refuses_unknown_statuses_and_negative_usage() {
        let store = waymark_fixtures::store_with(&[std::sync::Arc::new(crate::GoalExtension)]);
        let s = make_session(&store);
        store
            .write(1, |tx| {
                tx.create_goal("g1", &s, "x", None, Budgets::default(), GoalActor::User)
            })
            .unwrap();
        let bad_status = store.read(|c| {
            Ok::<_, waymark_extension::error::Error>(
                c.execute("UPDATE goals SET status = 'done' WHERE id = 'g1'", [])?,
            )
        });
        assert!(bad_status.is_err());
        let bad_usage = store.read(|c| {
            Ok::<_, waymark_extension::error::Error>(
                c.execute("UPDATE goals SET tokens_used = -1 WHERE id = 'g1'", [])?,
            )
        });
        assert!(bad_usage.is_err());
        let bad_budget = store.read(|c| {
            Ok::<_, waymark_extension::error::Error>(
                c.execute("UPDATE goals SET token_budget = 0 WHERE id = 'g1'", [])?,
            )
        });
        assert!(bad_budget.is_err());
    }
}
