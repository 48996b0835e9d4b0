//! Usage limits (issue 12, G-3): a goal stopped by a provider's 429 records when the limit
//! resets (from the real headers, else a backoff), counts down, and is resumed by the runtime
//! (actor `system`) on time, at most N times in a row; a quota never resumes by itself. Driven
//! by an injected clock against a mock server speaking the providers' wire protocols.

use super::super::harness::{Harness, collect, run, user};
use super::super::mock_server::{Flavor, MockResponse, MockServer, on_mock, reply};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use waymark_config::{Config, Verification};
use waymark_protocol::{
    Event, EventKind, GoalActor, GoalReason, GoalSnapshot, GoalStatus, Op, UsageLimit,
};
use waymark_runtime::{ManualClock, Runtime, SessionHandle};

/// 2026-12-01 15:04:05 UTC.
const T0: i64 = 1_796_137_445_000;
const MINUTE: i64 = 60_000;

fn rate_limited(flavor: Flavor, headers: &[(&str, &str)]) -> MockResponse {
    let body = match flavor {
        Flavor::OpenAi => {
            json!({"error": {"message": "Rate limit reached for gpt-mock on requests per min (RPM): Limit 3, Used 3.",
            "type": "requests", "param": null, "code": "rate_limit_exceeded"}})
        }
        Flavor::Anthropic => json!({"type": "error", "error": {"type": "rate_limit_error",
            "message": "This request would exceed your organization's rate limit."}}),
    };
    MockResponse::status(429, &body.to_string(), headers)
}

fn quota(headers: &[(&str, &str)]) -> MockResponse {
    let body = json!({"error": {"message": "You exceeded your current quota, please check your plan and billing details.",
        "type": "insufficient_quota", "param": null, "code": "insufficient_quota"}});
    MockResponse::status(429, &body.to_string(), headers)
}

fn done(flavor: Flavor) -> MockResponse {
    let args = json!({"mode": "status", "status": "complete", "message": "notes tidied"});
    reply(
        flavor,
        "The notes are tidy.",
        Some(("update_goal", args)),
        900,
    )
}

type Setup = super::Clocked;

/// A goal session on a mock provider that answers its n-th call (from 1) with `answer(n)`.
async fn setup(
    flavor: Flavor,
    auto_resumes: u32,
    answer: impl Fn(usize) -> MockResponse + Send + Sync + 'static,
) -> Setup {
    let mut config = Config::default();
    config.goal.verification = Some(Verification::None);
    config.goal.usage_limit.auto_resumes = auto_resumes;
    super::clocked(flavor, config, T0, answer).await
}

impl Setup {
    fn limit(&self) -> UsageLimit {
        let g = self.goal();
        assert_eq!(g.status, GoalStatus::UsageLimited, "{g:?}");
        g.usage_limit.expect("a usage limit")
    }

    /// Moves the clock; nothing may happen: no model call, the goal still waits.
    async fn advance_quietly(&self, ms: i64) {
        assert_eq!(
            self.advance_without_calls(ms).await.status,
            GoalStatus::UsageLimited
        );
    }

    async fn command(&self, text: &str) -> String {
        match self.s.submit(user(text)).await.unwrap() {
            waymark_runtime::session::OpOutcome::Command { output } => output,
            other => panic!("{other:?}"),
        }
    }
}

/// A goal the provider rate-limited for a minute, its automatic resume scheduled.
async fn waiting_a_minute() -> Setup {
    let t = setup(Flavor::OpenAi, 3, |_| {
        rate_limited(Flavor::OpenAi, &[("retry-after", "60")])
    })
    .await;
    run(&t.s, user("/goal Tidy the notes")).await;
    assert!(t.limit().auto_resume);
    t
}

/// Opens session `id` again and runs it past the old reset: no model call, no resume.
async fn reopened_never_resumes(
    runtime: &Runtime,
    clock: &ManualClock,
    calls: &AtomicUsize,
    id: &str,
) {
    let s = runtime.open_session(id, Default::default()).unwrap();
    s.submit(Op::Resume).await.unwrap();
    let g = runtime.goal(id).unwrap().unwrap();
    let l = g.usage_limit.expect("the limit is kept");
    assert!(!l.auto_resume, "{l:?}");
    clock.advance_ms(10 * MINUTE);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(
        runtime.goal(id).unwrap().unwrap().status,
        GoalStatus::UsageLimited
    );
    s.shutdown().await.unwrap();
}

fn system_resumes(events: &[Event]) -> usize {
    events
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::GoalUpdate {
                    status: GoalStatus::Active,
                    reason: GoalReason::Resumed,
                    actor: GoalActor::System,
                    ..
                }
            )
        })
        .count()
}

/// The RFC 3339 form of a Unix-ms time, as Anthropic's reset headers give it.
fn rfc3339(ms: i64) -> String {
    let label = waymark_runtime::clock::utc_label(ms);
    format!("{}Z", label.trim_end_matches(" UTC").replace(' ', "T"))
}

async fn counts_down_and_resumes_on_time(flavor: Flavor) {
    let system_now = waymark_runtime::clock::SystemClock;
    let anthropic_reset = rfc3339(waymark_runtime::Clock::now_ms(&system_now) + 150_000);
    let headers: Vec<(&str, &str)> = match flavor {
        // The later of the two resets counts.
        Flavor::OpenAi => vec![
            ("x-ratelimit-reset-requests", "20s"),
            ("x-ratelimit-reset-tokens", "2m30s"),
        ],
        Flavor::Anthropic => vec![
            (
                "anthropic-ratelimit-requests-reset",
                anthropic_reset.as_str(),
            ),
            ("anthropic-ratelimit-tokens-reset", anthropic_reset.as_str()),
        ],
    };
    let first = rate_limited(flavor, &headers);
    let t = setup(
        flavor,
        3,
        move |n| if n == 1 { first.clone() } else { done(flavor) },
    )
    .await;
    run(&t.s, user("/goal Tidy the notes")).await;

    let l = t.limit();
    assert_eq!(t.goal().reason, GoalReason::RateLimited);
    assert!(l.from_provider && l.auto_resume, "{l:?}");
    assert_eq!((l.auto_resumes_used, l.auto_resumes_max), (0, 3));
    let reset = T0 + 150_000;
    match flavor {
        Flavor::OpenAi => assert_eq!(l.resets_at, reset),
        // RFC 3339 times are whole seconds, read against the real clock.
        Flavor::Anthropic => assert!((reset - 2_000..=reset).contains(&l.resets_at), "{l:?}"),
    }
    // The countdown, as `waymark goal show` prints it.
    let shown = waymark_runtime::goal::describe(&t.goal(), T0);
    assert!(
        shown.contains("resumes by itself then (automatic resume 1 of 3)"),
        "{shown}"
    );
    if flavor == Flavor::OpenAi {
        assert!(
            shown.contains("resets at 2026-12-01 15:06:35 UTC (in 2m 30s"),
            "{shown}"
        );
        let later = waymark_runtime::goal::describe(&t.goal(), T0 + MINUTE);
        assert!(later.contains("(in 1m 30s"), "{later}");
    }

    // Not a moment early…
    t.advance_quietly(l.resets_at - T0 - 1).await;
    // …and on time, by the system, then the goal runs on to the end.
    let events = t.advance(1).await;
    assert_eq!(system_resumes(&events), 1);
    assert_eq!(t.calls(), 2);
    let g = t.goal();
    assert_eq!(
        (g.status, g.reason),
        (GoalStatus::Complete, GoalReason::WorkerProposal)
    );
    assert_eq!(g.usage_limit, None);
    t.s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rate_limited_goal_counts_down_and_resumes_on_time_openai() {
    counts_down_and_resumes_on_time(Flavor::OpenAi).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rate_limited_goal_counts_down_and_resumes_on_time_anthropic() {
    counts_down_and_resumes_on_time(Flavor::Anthropic).await;
}

/// Without reset headers the waits grow (1, 5, 15 min); after N automatic resumes in a row
/// the goal stays limited. The user resuming starts the count again; the user can also call
/// off a scheduled resume.
#[tokio::test(flavor = "multi_thread")]
async fn automatic_resumes_stop_at_the_cap_and_the_user_keeps_control() {
    let t = setup(Flavor::OpenAi, 2, |n| {
        if n <= 4 {
            rate_limited(Flavor::OpenAi, &[])
        } else {
            done(Flavor::OpenAi)
        }
    })
    .await;
    run(&t.s, user("/goal Tidy the notes")).await;
    let l = t.limit();
    assert!(!l.from_provider && l.auto_resume);
    assert_eq!(l.resets_at, T0 + MINUTE, "first backoff: 1 minute");

    let events = t.advance(MINUTE).await;
    assert_eq!(system_resumes(&events), 1);
    let l = t.limit();
    assert_eq!(
        l.resets_at,
        T0 + MINUTE + 5 * MINUTE,
        "second backoff: 5 minutes"
    );
    assert_eq!(l.auto_resumes_used, 1);

    let events = t.advance(5 * MINUTE).await;
    assert_eq!(system_resumes(&events), 1);
    let l = t.limit();
    assert_eq!(t.calls(), 3);
    assert!(!l.auto_resume, "two automatic resumes is the cap: {l:?}");
    assert_eq!(l.auto_resumes_used, 2);
    assert_eq!(l.resets_at, T0 + 6 * MINUTE + 15 * MINUTE);
    // The update that stops it says it will not resume (the desktop's notification keys on it).
    let last = events
        .iter()
        .rev()
        .find_map(|e| match &e.kind {
            EventKind::GoalUpdate { usage_limit, .. } => Some(usage_limit.clone()),
            _ => None,
        })
        .flatten()
        .expect("the limit in the goal update");
    assert!(!last.auto_resume);
    let shown = waymark_runtime::goal::describe(&t.goal(), T0 + 6 * MINUTE);
    assert!(
        shown.contains("no automatic resumes left: 2 in a row allowed"),
        "{shown}"
    );
    t.advance_quietly(3 * 60 * MINUTE).await;

    // The user resumes: a fresh count, and the first backoff again.
    let mut rx = t.s.subscribe();
    assert_eq!(t.command("/goal resume").await, "Goal resumed.");
    t.s.submit(Op::Resume).await.unwrap();
    collect(&mut rx).await;
    assert_eq!(t.calls(), 4);
    let now = T0 + 6 * MINUTE + 180 * MINUTE;
    let l = t.limit();
    assert!(l.auto_resume && l.auto_resumes_used == 0, "{l:?}");
    assert_eq!(l.resets_at, now + MINUTE);

    // …and calls off the scheduled resume: nothing runs when the limit resets.
    let said = t.command("/goal pause").await;
    assert!(said.contains("Automatic resume cancelled"), "{said}");
    assert!(!t.limit().auto_resume);
    t.advance_quietly(60 * MINUTE).await;
    let mut rx = t.s.subscribe();
    t.command("/goal resume").await;
    t.s.submit(Op::Resume).await.unwrap();
    collect(&mut rx).await;
    assert_eq!(t.goal().status, GoalStatus::Complete);
    t.s.shutdown().await.unwrap();
}

/// A quota or billing limit never resumes by itself, whatever reset time came with it.
#[tokio::test(flavor = "multi_thread")]
async fn a_quota_is_never_resumed_by_itself() {
    let t = setup(Flavor::OpenAi, 3, |_| quota(&[("retry-after", "30")])).await;
    run(&t.s, user("/goal Tidy the notes")).await;
    let g = t.goal();
    assert_eq!(
        (g.status, g.reason),
        (GoalStatus::UsageLimited, GoalReason::QuotaExhausted)
    );
    let l = t.limit();
    assert!(!l.auto_resume, "{l:?}");
    assert_eq!(l.resets_at, T0 + 30_000);
    t.advance_quietly(24 * 60 * MINUTE).await;
    assert_eq!(t.calls(), 1);
    let shown = waymark_runtime::goal::describe(&t.goal(), T0);
    assert!(shown.contains("never resumes by itself"), "{shown}");
    t.s.shutdown().await.unwrap();
}

/// The process that would make a scheduled resume stops: the next start does not resume the
/// goal by itself (as with any goal whose run ended with its process, G-24).
#[tokio::test(flavor = "multi_thread")]
async fn closing_the_session_calls_off_a_scheduled_resume() {
    let t = waiting_a_minute().await;
    let id = t.s.id().to_string();
    t.s.shutdown().await.unwrap();
    let g = t.runtime.goal(&id).unwrap().unwrap();
    let l = g.usage_limit.expect("the limit is kept");
    assert!(!l.auto_resume, "{l:?}");
    reopened_never_resumes(&t.runtime, &t.clock, &t.calls, &id).await;
}

/// However the holding process goes (here its handle is dropped without a shutdown, as a
/// killed process leaves it), the next open calls off the scheduled resume.
#[tokio::test(flavor = "multi_thread")]
async fn a_new_process_never_makes_an_old_schedule() {
    let t = waiting_a_minute().await;
    let id = t.s.id().to_string();
    let Setup {
        s,
        runtime,
        clock,
        calls,
        ..
    } = t;
    drop(s);
    tokio::time::sleep(Duration::from_millis(200)).await;
    reopened_never_resumes(&runtime, &clock, &calls, &id).await;
}

/// Lowering the setting to 0 ("never") also stops a resume already scheduled.
#[tokio::test(flavor = "multi_thread")]
async fn turning_automatic_resumes_off_stops_a_scheduled_one() {
    let t = waiting_a_minute().await;
    let mut config = Config::default();
    config.goal.verification = Some(Verification::None);
    config.goal.usage_limit.auto_resumes = 0;
    t.runtime.apply_settings(config).unwrap();
    t.advance_quietly(5 * MINUTE).await;
    t.s.shutdown().await.unwrap();
}
