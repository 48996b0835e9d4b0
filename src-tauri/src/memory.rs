//! Giving freed heap memory back to the system after a burst of work.
//!
//! Opening a session builds a page of events and its JSON for the window; a turn builds
//! requests and replies. All of it is freed at once, but glibc keeps the free pages in its
//! arenas, so an app that then sits idle for hours would keep holding them (about 2 MB after
//! start-up, measured). After such a burst, once things have been quiet for a moment, the app
//! asks glibc to hand free pages back (`malloc_trim`), off the async executor.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Runs `work` once, `delay` after the first of a burst of requests.
pub(crate) struct Debounced {
    pending: AtomicBool,
    delay: Duration,
    work: fn(),
}

impl Debounced {
    pub(crate) const fn new(delay: Duration, work: fn()) -> Self {
        Self {
            pending: AtomicBool::new(false),
            delay,
            work,
        }
    }

    /// Schedules the work unless it is already scheduled.
    pub(crate) fn request(&'static self) {
        if self.pending.swap(true, Ordering::AcqRel) {
            return;
        }
        tauri::async_runtime::spawn(async move {
            tokio::time::sleep(self.delay).await;
            self.pending.store(false, Ordering::Release);
            let _ = tauri::async_runtime::spawn_blocking(self.work).await;
        });
    }
}

/// Returns free heap pages to the system a second after the last burst began.
pub(crate) static TRIM: Debounced = Debounced::new(Duration::from_secs(1), release_free_heap);

/// Keeps glibc to two malloc arenas (from 8 per core). Every thread that allocates would
/// otherwise get an arena of its own: the async runtime's workers, its blocking threads, the
/// file watchers, GTK's. Each keeps its free pages and its fragments, while the app allocates
/// little per thread, so two arenas cost no waiting and keep about a megabyte less at idle.
/// Call it first thing, before other threads start. Returns whether glibc took it.
pub(crate) fn fewer_arenas() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a glibc tunable; it takes no pointers.
    #[allow(unsafe_code)]
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2) == 1
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    true
}

fn release_free_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks glibc's own arenas under their locks; it takes no
    // pointers from us and is safe to call from any thread at any time.
    #[allow(unsafe_code)]
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    static RUNS: AtomicUsize = AtomicUsize::new(0);
    fn count() {
        RUNS.fetch_add(1, Ordering::SeqCst);
    }
    static WORK: Debounced = Debounced::new(Duration::from_millis(50), count);

    #[test]
    fn glibc_takes_the_arena_limit() {
        assert!(fewer_arenas());
    }

    /// A burst of requests runs the work once, after the delay; a later request runs it again.
    #[test]
    fn a_burst_of_requests_runs_the_work_once() {
        for _ in 0..20 {
            WORK.request();
        }
        assert_eq!(RUNS.load(Ordering::SeqCst), 0, "ran before the delay");
        let wait = |n| {
            let start = std::time::Instant::now();
            while RUNS.load(Ordering::SeqCst) < n {
                assert!(start.elapsed() < Duration::from_secs(10), "never ran");
                std::thread::sleep(Duration::from_millis(10));
            }
        };
        wait(1);
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(RUNS.load(Ordering::SeqCst), 1);
        WORK.request();
        wait(2);
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(RUNS.load(Ordering::SeqCst), 2);
    }
}
