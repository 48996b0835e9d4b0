//! What this machine spends on model calls (G-31, G-33), as front ends show it.

use crate::error::Result;
use crate::runtime::Runtime;
use crate::store;
use waymark_protocol::cost::DailySpend;

impl Runtime {
    /// Today's spending across every session, against `limits.daily_cost_usd`.
    pub fn daily_spend(&self) -> Result<DailySpend> {
        let now = self.options().clock.now_ms();
        let day = crate::clock::local_day(now);
        let spend = self.store().view(|c| store::spend::day(c, &day))?;
        let cap_usd = self.config().limits.daily_cost_usd;
        let capped = cap_usd
            .and_then(waymark_protocol::cost::micros)
            .is_some_and(|cap| spend.micros >= cap);
        Ok(DailySpend {
            day,
            cost_usd: spend.usd(),
            spend,
            cap_usd,
            capped,
        })
    }
}
