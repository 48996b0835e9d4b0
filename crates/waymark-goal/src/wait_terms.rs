//! A wait's limits and how a wait reads (G-47): what the `wait` tool, the snapshot and the
//! permission rules share.

use std::time::Duration;
use waymark_protocol::GoalWait;

/// The least time between two runs of a check.
pub const MIN_EVERY_SECONDS: u32 = 30;
/// Between two runs of a check when the agent names no interval.
pub const DEFAULT_EVERY_SECONDS: u32 = 60;
/// The longest one run of a check may take.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(60);
/// The shortest wait for a time: shorter ones would be polling by another name.
pub const MIN_WAIT_SECONDS: u64 = 30;
/// Waits the agent may begin in a row with no other turn between them.
pub const MAX_WAITS_IN_ROW: u32 = 20;

/// A wait in words: "Waiting until 2026-12-06 06:00 UTC — reason", or for a check.
pub fn describe(w: &GoalWait, now: i64) -> String {
    let mut s = match (&w.check, w.until) {
        (Some(c), _) => format!(
            "Waiting for `{}` to succeed — checked every {} s",
            c.lines().next().unwrap_or(""),
            w.every_seconds
        ),
        (None, Some(t)) => format!("Waiting until {} (in {})", utc(t), span(t - now)),
        (None, None) => "Waiting".to_string(),
    };
    if let (Some(_), Some(t)) = (&w.check, w.until) {
        s.push_str(&format!(", or until {}", utc(t)));
    }
    s.push_str(&format!(" — {}", w.reason));
    if w.until.is_none_or(|t| t > w.deadline) {
        s.push_str(&format!(
            "; it gives up at {} (goal.max_wait) and the goal pauses",
            utc(w.deadline)
        ));
    }
    s
}

pub(crate) fn utc(ms: i64) -> String {
    waymark_extension::clock::utc_label(ms)
}

pub(crate) fn span(ms: i64) -> String {
    waymark_extension::clock::span_label(ms.max(0) as u64)
}
