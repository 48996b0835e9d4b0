//! Injected time and id sources, so timeouts, leases and budgets are tested without sleeping.

use futures_util::future::BoxFuture;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::Notify;

/// The longest single nap of [`Clock::sleep_until`] on the real clock: the caller looks at
/// the time again at least this often, so a suspended machine or a changed system time
/// delays a wake-up by no more than this.
const MAX_NAP_MS: i64 = 60_000;

/// Wall-clock time in Unix milliseconds.
pub trait Clock: Send + Sync {
    fn now_ms(&self) -> i64;

    /// Waits until about `at_ms` on this clock. It may return early: callers read the time
    /// again and decide.
    fn sleep_until(&self, at_ms: i64) -> BoxFuture<'static, ()> {
        let wait = at_ms.saturating_sub(self.now_ms()).clamp(0, MAX_NAP_MS);
        Box::pin(tokio::time::sleep(Duration::from_millis(wait as u64)))
    }
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

/// A clock tests move by hand; whatever sleeps on it wakes when it is moved far enough.
#[derive(Debug, Default)]
pub struct ManualClock {
    now: Arc<AtomicI64>,
    moved: Arc<Notify>,
}

impl ManualClock {
    pub fn new(start_ms: i64) -> Arc<Self> {
        Arc::new(ManualClock {
            now: Arc::new(AtomicI64::new(start_ms)),
            moved: Arc::new(Notify::new()),
        })
    }

    pub fn advance_ms(&self, ms: i64) {
        self.now.fetch_add(ms, Ordering::SeqCst);
        self.moved.notify_waiters();
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.now.load(Ordering::SeqCst)
    }

    fn sleep_until(&self, at_ms: i64) -> BoxFuture<'static, ()> {
        let (now, moved) = (self.now.clone(), self.moved.clone());
        Box::pin(async move {
            loop {
                // Listening before the time is read, so a move in between is not missed.
                let woken = moved.notified();
                tokio::pin!(woken);
                woken.as_mut().enable();
                if now.load(Ordering::SeqCst) >= at_ms {
                    return;
                }
                woken.await;
            }
        })
    }
}

/// A Unix-ms time as people read it, in UTC: `2026-12-01 15:04:05 UTC`.
pub fn utc_label(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // The civil date of a day count (proleptic Gregorian, days since 1970-01-01).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The machine's local offset from UTC at Unix time `ms`, in seconds (0 when the system
/// cannot say).
#[allow(unsafe_code)]
fn local_offset_s(ms: i64) -> i64 {
    let t: libc::time_t = ms.div_euclid(1000) as libc::time_t;
    // SAFETY: localtime_r writes only into the `tm` we own, and reads the time zone the C
    // library loaded; both pointers are valid for the call.
    unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&t, &mut tm).is_null() {
            return 0;
        }
        tm.tm_gmtoff
    }
}

/// The local date at Unix time `ms`, `YYYY-MM-DD` (the day a daily limit counts in).
pub fn local_day(ms: i64) -> String {
    let local = ms + local_offset_s(ms) * 1000;
    utc_label(local)[..10].to_string()
}

/// How long from Unix time `ms` to the next local midnight, in milliseconds (at least 1).
pub fn until_local_midnight(ms: i64) -> u64 {
    let local = ms + local_offset_s(ms) * 1000;
    let into_day = local.rem_euclid(86_400_000);
    (86_400_000 - into_day).max(1) as u64
}

/// A span as people read it: `42s`, `4m 05s`, `1h 05m`, `2d 03h` (rounded up to the second).
pub fn span_label(ms: u64) -> String {
    let s = ms.div_ceil(1000);
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m {:02}s", s / 60, s % 60),
        3600..86_400 => format!("{}h {:02}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d {:02}h", s / 86_400, s % 86_400 / 3600),
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
    fn times_and_spans_read_as_people_write_them() {
        assert_eq!(utc_label(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc_label(1_796_137_445_999), "2026-12-01 15:04:05 UTC");
        assert_eq!(utc_label(951_782_400_000), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc_label(-1000), "1969-12-31 23:59:59 UTC");
        assert_eq!(span_label(0), "0s");
        assert_eq!(span_label(41_001), "42s");
        assert_eq!(span_label(245_000), "4m 05s");
        assert_eq!(span_label(3_900_000), "1h 05m");
        assert_eq!(span_label(183_600_000), "2d 03h");
        assert!(span_label(u64::MAX).ends_with('h'));
        // Absurd times still print (a corrupt reset time must not panic a status line).
        assert!(utc_label(i64::MAX).ends_with("UTC") && utc_label(i64::MIN).ends_with("UTC"));
    }

    #[test]
    fn the_local_day_and_its_end_follow_the_offset() {
        // Whatever the machine's zone: the day is a date, and midnight is within a day.
        let now = 1_796_137_445_999;
        let day = local_day(now);
        assert_eq!(day.len(), 10);
        assert_eq!(&day[4..5], "-");
        let left = until_local_midnight(now);
        assert!((1..=86_400_000).contains(&left), "{left}");
        assert_ne!(
            local_day(now + left as i64),
            day,
            "the next day starts then"
        );
        assert_eq!(local_day(now + left as i64 - 1), day);
    }

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::new(1000);
        assert_eq!(c.now_ms(), 1000);
        c.advance_ms(500);
        assert_eq!(c.now_ms(), 1500);
    }

    #[tokio::test]
    async fn sleeping_on_the_manual_clock_ends_when_it_is_moved_far_enough() {
        let c = ManualClock::new(0);
        let mut nap = tokio::spawn(c.sleep_until(5_000));
        c.advance_ms(4_000);
        let early = tokio::time::timeout(Duration::from_millis(50), &mut nap).await;
        assert!(early.is_err(), "woke before its time");
        c.advance_ms(1_000);
        tokio::time::timeout(Duration::from_secs(5), nap)
            .await
            .expect("still asleep at its time")
            .unwrap();
        // A time already past returns at once.
        tokio::time::timeout(Duration::from_secs(5), c.sleep_until(10))
            .await
            .unwrap();
    }
}
