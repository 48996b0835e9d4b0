//! What the store keeps of a goal's checks: the commands, the runs of each (baseline and
//! since) as the snapshot shows them, and what the last claim found weakened.

use rusqlite::OptionalExtension;
use waymark_extension::error::{Error, Result};
use waymark_protocol::{CheckResult, GoalCheckState};
use waymark_store::Tx;

/// Stores the goal's checks (replacing any).
pub(crate) fn set_checks(tx: &mut Tx<'_>, goal_id: &str, checks: &[String]) -> Result<()> {
    tx.conn()
        .execute("DELETE FROM goal_checks WHERE goal_id = ?1", [goal_id])?;
    for (i, c) in checks.iter().enumerate() {
        tx.conn().execute(
            "INSERT INTO goal_checks (goal_id, position, command) VALUES (?1, ?2, ?3)",
            rusqlite::params![goal_id, i as i64, c],
        )?;
    }
    Ok(())
}

/// The goal's checks, in order.
pub fn checks_of(conn: &rusqlite::Connection, goal_id: &str) -> Result<Vec<String>> {
    let mut st =
        conn.prepare("SELECT command FROM goal_checks WHERE goal_id = ?1 ORDER BY position")?;
    let rows = st.query_map([goal_id], |r| r.get::<_, String>(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Whether the goal's baseline was taken.
pub(crate) fn has_baseline(conn: &rusqlite::Connection, goal_id: &str) -> Result<bool> {
    Ok(conn
        .query_row(
            "SELECT 1 FROM goal_baselines WHERE goal_id = ?1",
            [goal_id],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

/// Stores what the claim found weakened (empty: nothing).
pub(crate) fn set_findings(tx: &mut Tx<'_>, goal_id: &str, findings: &[String]) -> Result<()> {
    let json = serde_json::to_string(findings)
        .map_err(|e| Error::Corrupt(format!("goal {goal_id}: findings: {e}")))?;
    tx.conn().execute(
        "UPDATE goal_baselines SET weakened = ?2 WHERE goal_id = ?1",
        rusqlite::params![goal_id, json],
    )?;
    Ok(())
}

/// What the last claim found weakened.
pub(crate) fn findings(conn: &rusqlite::Connection, goal_id: &str) -> Result<Vec<String>> {
    let json: Option<String> = conn
        .query_row(
            "SELECT weakened FROM goal_baselines WHERE goal_id = ?1",
            [goal_id],
            |r| r.get(0),
        )
        .optional()?;
    // Unreadable findings are none: the goal's status still says it was weakened.
    Ok(json
        .and_then(|j| serde_json::from_str(&j).ok())
        .unwrap_or_default())
}

/// Each check's baseline and runs since, for the snapshot.
pub(crate) fn states(conn: &rusqlite::Connection, goal_id: &str) -> Result<Vec<GoalCheckState>> {
    let checks = checks_of(conn, goal_id)?;
    if checks.is_empty() {
        return Ok(Vec::new());
    }
    let mut st = conn.prepare(
        "SELECT command, at, baseline, exit_code, passed, failed FROM goal_check_runs \
         WHERE goal_id = ?1 ORDER BY id",
    )?;
    let rows = st.query_map([goal_id], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, bool>(2)?,
            CheckResult {
                at: r.get(1)?,
                exit_code: r.get(3)?,
                passed: r.get::<_, Option<i64>>(4)?.map(|v| v.max(0) as u64),
                failed: r.get::<_, Option<i64>>(5)?.map(|v| v.max(0) as u64),
            },
        ))
    })?;
    let mut out: Vec<GoalCheckState> = checks
        .into_iter()
        .map(|command| GoalCheckState {
            command,
            baseline: None,
            runs: Vec::new(),
        })
        .collect();
    for row in rows {
        let (command, baseline, result) = row?;
        let Some(s) = out.iter_mut().find(|s| s.command == command) else {
            continue;
        };
        if baseline {
            s.baseline = Some(result);
        } else {
            s.runs.push(result);
            if s.runs.len() > GoalCheckState::MAX_RUNS {
                s.runs.remove(0);
            }
        }
    }
    Ok(out)
}
