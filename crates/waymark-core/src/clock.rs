//! Injected time and id sources, so timeouts, leases and budgets are tested without sleeping.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// Wall-clock time in Unix milliseconds.
pub trait Clock: Send + Sync {
    fn now_ms(&self) -> i64;
}

/// The real clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0)
    }
}

/// A clock tests move by hand.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    pub fn new(start_ms: i64) -> Arc<Self> {
        Arc::new(ManualClock(AtomicI64::new(start_ms)))
    }

    pub fn advance_ms(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// Source of fresh ids (sessions, questionnaires, tool calls).
pub trait IdSource: Send + Sync {
    /// A new id starting with `prefix`.
    fn new_id(&self, prefix: &str) -> String;
}

/// Time-ordered random ids: `<prefix>-<ms in base 36><counter><random>`.
#[derive(Debug, Default)]
pub struct RandomIds {
    counter: AtomicU64,
}

impl IdSource for RandomIds {
    fn new_id(&self, prefix: &str) -> String {
        let ms = SystemClock.now_ms().max(0) as u64;
        let n = self.counter.fetch_add(1, Ordering::Relaxed) % 1296;
        format!(
            "{prefix}-{}{:0>2}{}",
            base36(ms),
            base36(n),
            (0..4)
                .map(|_| char::from(b"0123456789abcdefghijklmnopqrstuvwxyz"[fastrand::usize(..36)]))
                .collect::<String>()
        )
    }
}

fn base36(mut n: u64) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    if n == 0 {
        return "0".into();
    }
    let mut out = Vec::new();
    while n > 0 {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
    }
    out.reverse();
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_prefixed() {
        let ids = RandomIds::default();
        let a = ids.new_id("s");
        let b = ids.new_id("s");
        assert!(a.starts_with("s-"));
        assert_ne!(a, b);
    }

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::new(1000);
        assert_eq!(c.now_ms(), 1000);
        c.advance_ms(500);
        assert_eq!(c.now_ms(), 1500);
    }
}
