//! What model calls cost (G-31): each call is charged to its turn (when it has one) and to
//! the local day's total across every session. Sums saturate; a call whose model has no
//! price counts as unpriced, so the total says it is not fully known.

use super::{Result, Tx, clamp_i64};
use rusqlite::{Connection, OptionalExtension, params};
use waymark_protocol::cost::Spend;

/// One model call's charge: its cost in micro-dollars (`None`: the model has no price), the
/// local day it was made (`YYYY-MM-DD`), and the hold taken for it before it was sent, which
/// the charge replaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Charge {
    pub micros: Option<u64>,
    pub day: String,
    pub hold: Option<Hold>,
}

/// A call's most possible cost held against its day while it runs (a row of `spend_holds`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hold(pub i64);

impl Tx<'_> {
    /// Holds `micros` against `day` for a call of session `session_id` (and turn `turn_id`)
    /// about to be sent: it counts in the day's total at once.
    pub fn hold(
        &mut self,
        session_id: &str,
        turn_id: Option<i64>,
        day: &str,
        micros: u64,
    ) -> Result<Hold> {
        let c = self.conn();
        c.prepare_cached(
            "INSERT INTO spend_holds (session_id, turn_id, day, cost_micros)
             VALUES (?1, ?2, ?3, ?4)",
        )?
        .execute(params![session_id, turn_id, day, clamp_i64(micros)])?;
        let id = c.last_insert_rowid();
        add_to_day(c, day, clamp_i64(micros), 0)?;
        Ok(Hold(id))
    }

    /// Takes hold `hold` off its day (the call is charged, or never went out): the day it
    /// was held against. A hold already taken off is nothing to do (`None`).
    pub fn release(&mut self, hold: Hold) -> Result<Option<String>> {
        let c = self.conn();
        let Some((day, micros)) = c
            .prepare_cached("DELETE FROM spend_holds WHERE id = ?1 RETURNING day, cost_micros")?
            .query_row([hold.0], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
            })
            .optional()?
        else {
            return Ok(None);
        };
        c.prepare_cached(
            "UPDATE spend_days SET cost_micros = MAX(0, cost_micros - ?2) WHERE day = ?1",
        )?
        .execute(params![day, micros])?;
        Ok(Some(day))
    }

    /// The day a call is charged to: the day its hold was taken against (the day whose cap
    /// let it go out, though it may end after midnight), else the day of the charge.
    fn charge_day(&mut self, charge: &Charge) -> Result<String> {
        let held = match charge.hold {
            Some(h) => self.release(h)?,
            None => None,
        };
        Ok(held.unwrap_or_else(|| charge.day.clone()))
    }

    /// The holds of session `session_id` whose calls were never charged (the process that
    /// made them stopped mid-call): each is charged, at its amount, to its turn (or the
    /// session), and stays in its day's total. Each one's turn and amount.
    pub fn settle_holds(&mut self, session_id: &str) -> Result<Vec<(Option<i64>, u64)>> {
        let held: Vec<(i64, Option<i64>, i64)> = self
            .conn()
            .prepare_cached(
                "DELETE FROM spend_holds WHERE session_id = ?1
                 RETURNING id, turn_id, cost_micros",
            )?
            .query_map([session_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<rusqlite::Result<_>>()?;
        for (_, turn, micros) in &held {
            match turn {
                Some(t) => {
                    self.conn()
                        .prepare_cached(
                            "UPDATE turns SET
                               cost_micros = CASE WHEN cost_micros > 9223372036854775807 - ?2
                                             THEN 9223372036854775807 ELSE cost_micros + ?2 END,
                               estimated_calls = estimated_calls + 1
                             WHERE id = ?1",
                        )?
                        .execute(params![t, micros])?;
                }
                None => add_to_session(self.conn(), session_id, *micros, 0)?,
            }
        }
        Ok(held
            .into_iter()
            .map(|(_, turn, micros)| (turn, micros.max(0) as u64))
            .collect())
    }

    /// Charges one call that belongs to no turn of session `session_id` (a compaction
    /// between turns) to the session and its day.
    pub fn charge_session(&mut self, session_id: &str, charge: &Charge) -> Result<()> {
        let day = self.charge_day(charge)?;
        let micros = clamp_i64(charge.micros.unwrap_or(0));
        let unpriced = i64::from(charge.micros.is_none());
        add_to_session(self.conn(), session_id, micros, unpriced)?;
        add_to_day(self.conn(), &day, micros, unpriced)
    }

    /// Charges one call to `turn_id` (if any) and to its day.
    pub fn charge(&mut self, turn_id: Option<i64>, charge: &Charge) -> Result<()> {
        let day = self.charge_day(charge)?;
        let micros = clamp_i64(charge.micros.unwrap_or(0));
        let unpriced = i64::from(charge.micros.is_none());
        let c = self.conn();
        if let Some(t) = turn_id {
            c.prepare_cached(
                "UPDATE turns SET
                   cost_micros = CASE WHEN cost_micros > 9223372036854775807 - ?2
                                 THEN 9223372036854775807 ELSE cost_micros + ?2 END,
                   unpriced_calls = unpriced_calls + ?3
                 WHERE id = ?1",
            )?
            .execute(params![t, micros, unpriced])?;
        }
        add_to_day(c, &day, micros, unpriced)
    }
}

/// Adds to day `day`'s total, saturating.
fn add_to_day(c: &Connection, day: &str, micros: i64, unpriced: i64) -> Result<()> {
    c.prepare_cached(
        "INSERT INTO spend_days (day, cost_micros, unpriced_calls) VALUES (?1, ?2, ?3)
         ON CONFLICT (day) DO UPDATE SET
           cost_micros = CASE WHEN cost_micros > 9223372036854775807 - excluded.cost_micros
                         THEN 9223372036854775807 ELSE cost_micros + excluded.cost_micros END,
           unpriced_calls = unpriced_calls + excluded.unpriced_calls",
    )?
    .execute(params![day, micros, unpriced])?;
    Ok(())
}

/// Adds to what session `session_id` spent outside its turns, saturating.
fn add_to_session(c: &Connection, session_id: &str, micros: i64, unpriced: i64) -> Result<()> {
    c.prepare_cached(
        "UPDATE sessions SET
           loose_cost_micros = CASE WHEN loose_cost_micros > 9223372036854775807 - ?2
                               THEN 9223372036854775807 ELSE loose_cost_micros + ?2 END,
           loose_unpriced_calls = loose_unpriced_calls + ?3
         WHERE id = ?1",
    )?
    .execute(params![session_id, micros, unpriced])?;
    Ok(())
}

/// What the calls of turn `turn_id` still in flight hold (their most possible cost): calls
/// side by side (subagents) each see what the others may still spend.
pub fn held_for_turn(conn: &Connection, turn_id: i64) -> Result<u64> {
    Ok(conn
        .prepare_cached("SELECT COALESCE(SUM(cost_micros), 0) FROM spend_holds WHERE turn_id = ?1")?
        .query_row([turn_id], |r| r.get::<_, i64>(0))?
        .max(0) as u64)
}

/// What every session spent on local day `day`.
pub fn day(conn: &Connection, day: &str) -> Result<Spend> {
    Ok(conn
        .prepare_cached("SELECT cost_micros, unpriced_calls FROM spend_days WHERE day = ?1")?
        .query_row([day], |r| {
            Ok(Spend {
                micros: r.get::<_, i64>(0)?.max(0) as u64,
                unpriced_calls: r.get::<_, i64>(1)?.max(0) as u64,
            })
        })
        .optional()?
        .unwrap_or_default())
}

/// What session `session_id` spent: its turns, and its calls outside any turn.
pub fn session(conn: &Connection, session_id: &str) -> Result<Spend> {
    let read = |r: &rusqlite::Row<'_>| {
        Ok(Spend {
            micros: r.get::<_, i64>(0)?.max(0) as u64,
            unpriced_calls: r.get::<_, i64>(1)?.max(0) as u64,
        })
    };
    let turns = conn
        .prepare_cached(
            "SELECT COALESCE(SUM(cost_micros), 0), COALESCE(SUM(unpriced_calls), 0)
             FROM turns WHERE session_id = ?1",
        )?
        .query_row([session_id], read)?;
    let loose = conn
        .prepare_cached(
            "SELECT loose_cost_micros, loose_unpriced_calls FROM sessions WHERE id = ?1",
        )?
        .query_row([session_id], read)
        .optional()?
        .unwrap_or_default();
    Ok(Spend {
        micros: turns.micros.saturating_add(loose.micros),
        unpriced_calls: turns.unpriced_calls.saturating_add(loose.unpriced_calls),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Store;
    use crate::sessions::tests::make_session;
    use waymark_protocol::{MessageSource, Position};

    #[test]
    fn calls_are_charged_to_their_turn_and_their_day_and_saturate() {
        let store = Store::open_in_memory().unwrap();
        let s = make_session(&store);
        let (turn, _) = store
            .write(1, |tx| {
                let (m, _) =
                    tx.insert_message(&s, MessageSource::User, "m", Position::Tail, None)?;
                tx.start_turn(&s, m.id)
            })
            .unwrap();
        let day = "2026-12-04";
        let at = |micros: Option<u64>, day: &str| Charge {
            micros,
            day: day.to_string(),
            hold: None,
        };
        store
            .write(2, |tx| {
                tx.charge(Some(turn), &at(Some(1_500), day))?;
                tx.charge(Some(turn), &at(None, day))?;
                // A call with no turn (a goal's reviewer after its turn closed) counts for
                // the day only.
                tx.charge(None, &at(Some(500), day))?;
                tx.charge(None, &at(Some(7), "2026-12-05"))
            })
            .unwrap();
        let spent = |d: &str| store.read(|c| super::day(c, d)).unwrap();
        assert_eq!(
            spent(day),
            Spend {
                micros: 2_000,
                unpriced_calls: 1
            }
        );
        assert_eq!(spent("2026-12-05").micros, 7);
        assert_eq!(spent("2026-12-06"), Spend::default());
        assert_eq!(
            store.read(|c| session(c, &s)).unwrap(),
            Spend {
                micros: 1_500,
                unpriced_calls: 1
            }
        );
        let t = store.read(|c| crate::turns::get(c, turn)).unwrap().unwrap();
        assert_eq!(
            t.spend,
            Spend {
                micros: 1_500,
                unpriced_calls: 1
            }
        );
        // Absurd amounts saturate instead of wrapping.
        store
            .write(3, |tx| {
                tx.charge(Some(turn), &at(Some(u64::MAX), day))?;
                tx.charge(Some(turn), &at(Some(u64::MAX), day))
            })
            .unwrap();
        assert_eq!(spent(day).micros, i64::MAX as u64);
    }

    /// Fourth red-team: a call's hold counts in its day from before the call goes out; the
    /// charge replaces it; a process killed mid-call leaves it counted, and the next open
    /// charges it to the call's turn. A session's calls outside any turn count in its total.
    #[test]
    fn holds_count_until_charged_and_a_lost_one_is_charged_to_its_turn() {
        let store = Store::open_in_memory().unwrap();
        let s = make_session(&store);
        let (turn, _) = store
            .write(1, |tx| {
                let (m, _) =
                    tx.insert_message(&s, MessageSource::User, "m", Position::Tail, None)?;
                tx.start_turn(&s, m.id)
            })
            .unwrap();
        let day = "2026-12-05";
        let spent = || store.read(|c| super::day(c, day)).unwrap().micros;
        let (h, _) = store
            .write(2, |tx| tx.hold(&s, Some(turn), day, 5_000))
            .unwrap();
        assert_eq!(spent(), 5_000);
        // What the turn's calls in flight hold (red-team: subagents side by side each saw
        // the whole of a goal's budget left).
        let held = || store.read(|c| held_for_turn(c, turn)).unwrap();
        assert_eq!(held(), 5_000);
        let (other, _) = store
            .write(2, |tx| tx.hold(&s, Some(turn), day, 700))
            .unwrap();
        assert_eq!(held(), 5_700);
        store.write(2, |tx| tx.release(other)).unwrap();
        assert_eq!(held(), 5_000);
        assert_eq!(store.read(|c| held_for_turn(c, turn + 1)).unwrap(), 0);
        store
            .write(3, |tx| {
                tx.charge(
                    Some(turn),
                    &Charge {
                        micros: Some(1_200),
                        day: day.into(),
                        hold: Some(h),
                    },
                )
            })
            .unwrap();
        assert_eq!(spent(), 1_200);
        // Released twice (an error path after a charge): nothing more comes off.
        store.write(4, |tx| tx.release(h)).unwrap();
        assert_eq!(spent(), 1_200);
        // Fifth red-team: a call held against one day and charged after midnight landed on
        // the next day, whose cap never saw it. It counts on the day that let it go out.
        let (late, _) = store
            .write(4, |tx| tx.hold(&s, Some(turn), day, 900))
            .unwrap();
        store
            .write(4, |tx| {
                tx.charge(
                    Some(turn),
                    &Charge {
                        micros: Some(800),
                        day: "2026-12-06".into(),
                        hold: Some(late),
                    },
                )
            })
            .unwrap();
        assert_eq!(spent(), 2_000);
        assert_eq!(
            store.read(|c| super::day(c, "2026-12-06")).unwrap().micros,
            0
        );
        // A hold whose process died: counted, then charged to its turn at the next open.
        store
            .write(5, |tx| tx.hold(&s, Some(turn), day, 7_000))
            .unwrap();
        store.write(6, |tx| tx.hold(&s, None, day, 300)).unwrap();
        assert_eq!(spent(), 9_300);
        let (settled, _) = store.write(7, |tx| tx.settle_holds(&s)).unwrap();
        assert_eq!(settled, [(Some(turn), 7_000), (None, 300)]);
        assert_eq!(spent(), 9_300);
        let t = store.read(|c| crate::turns::get(c, turn)).unwrap().unwrap();
        assert_eq!(t.spend.micros, 9_000);
        assert_eq!(store.read(|c| session(c, &s)).unwrap().micros, 9_300);
        // A compaction between turns counts for the session and its day.
        store
            .write(8, |tx| {
                tx.charge_session(
                    &s,
                    &Charge {
                        micros: None,
                        day: day.into(),
                        hold: None,
                    },
                )
            })
            .unwrap();
        assert_eq!(store.read(|c| session(c, &s)).unwrap().unpriced_calls, 1);
    }
}
