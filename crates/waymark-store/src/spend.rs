//! What model calls cost (G-31): each call is charged to its turn (when it has one) and to
//! the local day's total across every session. Sums saturate; a call whose model has no
//! price counts as unpriced, so the total says it is not fully known.

use super::{Result, Tx, clamp_i64};
use rusqlite::{Connection, OptionalExtension, params};
use waymark_protocol::cost::Spend;

/// One model call's charge: its cost in micro-dollars (`None`: the model has no price), and
/// the local day it was made (`YYYY-MM-DD`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Charge {
    pub micros: Option<u64>,
    pub day: String,
}

impl Tx<'_> {
    /// Charges one call to `turn_id` (if any) and to its day.
    pub fn charge(&mut self, turn_id: Option<i64>, charge: &Charge) -> Result<()> {
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
        c.prepare_cached(
            "INSERT INTO spend_days (day, cost_micros, unpriced_calls) VALUES (?1, ?2, ?3)
             ON CONFLICT (day) DO UPDATE SET
               cost_micros = CASE WHEN cost_micros > 9223372036854775807 - excluded.cost_micros
                             THEN 9223372036854775807 ELSE cost_micros + excluded.cost_micros END,
               unpriced_calls = unpriced_calls + excluded.unpriced_calls",
        )?
        .execute(params![charge.day, micros, unpriced])?;
        Ok(())
    }
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

/// What session `session_id`'s turns spent.
pub fn session(conn: &Connection, session_id: &str) -> Result<Spend> {
    Ok(conn
        .prepare_cached(
            "SELECT COALESCE(SUM(cost_micros), 0), COALESCE(SUM(unpriced_calls), 0)
             FROM turns WHERE session_id = ?1",
        )?
        .query_row([session_id], |r| {
            Ok(Spend {
                micros: r.get::<_, i64>(0)?.max(0) as u64,
                unpriced_calls: r.get::<_, i64>(1)?.max(0) as u64,
            })
        })?)
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
}
