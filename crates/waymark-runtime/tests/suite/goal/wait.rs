//! Waiting that spends nothing (issue 38, item 5, G-47): the agent's `wait` ends its turn and
//! no model call happens until the goal wakes, at its time, when its check passes, on "Wake
//! now" or on the user's message; past `goal.max_wait` it pauses. Driven by an injected clock
//! against a mock server speaking OpenAI's wire protocol; the check runs in the real sandbox.

use super::super::harness::{Harness, collect, run, user};
use super::super::mock_server::{Flavor, MockResponse, MockServer, on_mock, reply};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use waymark_config::{Config, Verification};
use waymark_protocol::{EventKind, GoalActor, GoalOp, GoalReason, GoalSnapshot, GoalStatus, Op};
use waymark_runtime::{ManualClock, Runtime, SessionHandle};

/// 2026-12-01 15:04:05 UTC.
const T0: i64 = 1_796_137_445_000;
const HOUR: i64 = 3_600_000;

type Setup = super::Clocked;

fn done() -> MockResponse {
    let args = json!({"mode": "status", "status": "complete", "message": "the release is out"});
    reply(Flavor::OpenAi, "Done.", Some(("update_goal", args)), 900)
}

/// A goal session whose model's first call asks to `wait` with `args`, and whose later calls
/// claim the goal complete.
async fn setup(args: Value, change: impl FnOnce(&mut Config)) -> Setup {
    let mut config = Config::default();
    config.goal.verification = Some(Verification::None);
    change(&mut config);
    super::clocked(Flavor::OpenAi, config, T0, move |n| match n {
        1 => reply(
            Flavor::OpenAi,
            "Waiting for it.",
            Some(("wait", args.clone())),
            900,
        ),
        _ => done(),
    })
    .await
}

impl Setup {
    /// Moves the clock; the goal still waits and no model call is made.
    async fn advance_waiting(&self, ms: i64) {
        let g = self.advance_without_calls(ms).await;
        assert_eq!(
            (g.status, g.reason),
            (GoalStatus::Active, GoalReason::Waiting),
            "{g:?}"
        );
        assert!(g.wait.is_some());
    }

    /// The goal once it no longer waits (in real time, a few seconds at most).
    async fn settled(&self) -> GoalSnapshot {
        for _ in 0..200 {
            let g = self.goal();
            if g.wait.is_none() {
                return g;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("the goal still waits: {:?}", self.goal());
    }

    /// Waits (in real time) until the check has run `n` times in all.
    async fn check_runs(&self, at_least_at: i64) -> waymark_protocol::WaitCheck {
        for _ in 0..200 {
            if let Some(c) = self
                .goal()
                .wait
                .and_then(|w| w.last_check)
                .filter(|c| c.at >= at_least_at)
            {
                return c;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the check did not run: {:?}", self.goal());
    }
}

fn woke(events: &[waymark_protocol::Event]) -> Option<GoalActor> {
    events.iter().find_map(|e| match e.kind {
        EventKind::GoalUpdate {
            reason: GoalReason::Woke,
            actor,
            ..
        } => Some(actor),
        _ => None,
    })
}

/// Six hours pass through an eight-hour wait with no model call; at its time the goal wakes
/// (by the runtime), the continuation says why, and the next turn completes it. The hours it
/// waited count toward its time, as it waited in a running process.
#[tokio::test]
async fn g_47_six_hours_of_waiting_make_no_model_call() {
    let t = setup(
        json!({"seconds": 8 * 3600, "reason": "the nightly build runs at 06:00"}),
        |_| {},
    )
    .await;
    run(&t.s, user("/goal Ship the release")).await;
    assert_eq!(t.calls(), 1);
    let w = t.goal().wait.expect("waiting");
    assert_eq!((w.until, w.deadline), (Some(T0 + 8 * HOUR), T0 + 24 * HOUR));
    assert_eq!(w.reason, "the nightly build runs at 06:00");
    for _ in 0..6 {
        t.advance_waiting(HOUR).await;
    }
    let events = t.advance(2 * HOUR).await;
    assert_eq!(woke(&events), Some(GoalActor::Runtime), "the goal woke");
    let g = t.goal();
    assert_eq!(
        (g.status, g.reason),
        (GoalStatus::Complete, GoalReason::WorkerProposal)
    );
    assert!(g.wait.is_none());
    assert_eq!(t.calls(), 2, "one call after the wait, none during it");
    let said = events.iter().any(|e| matches!(&e.kind,
        EventKind::MessageAdmitted { text, .. } if text.contains("Your wait is over: the time it waited for came")));
    assert!(said, "the continuation says why it woke");
    assert!(
        g.budget.active_seconds.used >= 8 * 3600,
        "{:?}",
        g.budget.active_seconds
    );
    t.s.shutdown().await.unwrap();
}

/// A check that fails keeps the goal waiting, with its last line kept; once it passes, the
/// goal wakes at the next run: within one interval of the change.
#[tokio::test]
async fn g_47_a_check_that_starts_passing_wakes_the_goal_within_one_interval() {
    let t = setup(
        json!({"check": "test -f ready || { echo 'run 42: in progress'; exit 1; }", "every": 30, "reason": "CI run 42"}),
        |_| {},
    )
    .await;
    run(&t.s, user("/goal Ship the release")).await;
    let w = t.goal().wait.expect("waiting");
    assert_eq!((w.every_seconds, w.until), (30, None));
    // Before its interval, nothing runs; at it, the check runs and fails.
    t.advance_waiting(29_000).await;
    assert!(t.goal().wait.unwrap().last_check.is_none());
    t.clock.advance_ms(1_000);
    let c = t.check_runs(T0).await;
    assert_eq!(
        (c.passed, c.exit_code, c.line.as_str()),
        (false, Some(1), "run 42: in progress")
    );
    t.advance_waiting(0).await;
    // The run turns green: the next check, one interval later, wakes the goal.
    std::fs::write(t.h.ws.join("ready"), "").unwrap();
    let mut rx = t.s.subscribe();
    t.clock.advance_ms(30_000);
    let events = collect(&mut rx).await;
    assert_eq!(woke(&events), Some(GoalActor::Runtime));
    assert!(events.iter().any(|e| matches!(&e.kind,
        EventKind::MessageAdmitted { text, .. } if text.contains("check `test -f ready"))));
    assert_eq!(t.goal().status, GoalStatus::Complete);
    assert_eq!(t.calls(), 2);
    t.s.shutdown().await.unwrap();
}

/// The check runs read-only: a check that writes to the workspace cannot, so it never passes.
#[tokio::test]
async fn g_47_the_check_cannot_change_the_workspace() {
    let t = setup(
        json!({"check": "echo gamed > gamed.txt", "every": 30, "reason": "hostile"}),
        |_| {},
    )
    .await;
    run(&t.s, user("/goal Ship the release")).await;
    t.clock.advance_ms(30_000);
    let c = t.check_runs(T0).await;
    assert!(!c.passed, "{c:?}");
    assert!(!t.h.ws.join("gamed.txt").exists());
    t.advance_waiting(0).await;
    t.s.shutdown().await.unwrap();
}

/// "Wake now" ends the wait at once (by the user); a message the user sends while the goal
/// waits wakes it too, and is itself the next turn.
#[tokio::test]
async fn g_47_wake_now_and_a_message_end_the_wait() {
    let t = setup(json!({"seconds": 3600, "reason": "cool-down"}), |_| {}).await;
    run(&t.s, user("/goal Ship the release")).await;
    let mut rx = t.s.subscribe();
    t.s.submit(Op::Goal {
        op: GoalOp::WakeNow,
    })
    .await
    .unwrap();
    let events = collect(&mut rx).await;
    assert_eq!(woke(&events), Some(GoalActor::User));
    assert_eq!(t.goal().status, GoalStatus::Complete);
    // Nothing waits now: "Wake now" is refused, saying why.
    let e =
        t.s.submit(Op::Goal {
            op: GoalOp::WakeNow,
        })
        .await
        .unwrap_err();
    assert!(e.to_string().contains("not waiting"), "{e}");

    let t = setup(json!({"seconds": 3600, "reason": "cool-down"}), |_| {}).await;
    run(&t.s, user("/goal Ship the release")).await;
    let events = run(&t.s, user("Any news?")).await;
    assert_eq!(woke(&events), Some(GoalActor::User));
    let admitted: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::MessageAdmitted { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(admitted.first().map(String::as_str), Some("Any news?"));
    assert!(t.goal().wait.is_none());
    t.s.shutdown().await.unwrap();
}

/// Past `goal.max_wait` with nothing woken, the goal pauses with its own reason and makes no
/// model call; a time budget is spent by waiting too (only while a process runs it).
#[tokio::test]
async fn g_47_a_wait_past_its_longest_time_pauses_and_waiting_spends_the_time_budget() {
    let t = setup(json!({"seconds": 3 * 3600, "reason": "long"}), |c| {
        c.goal.max_wait = Some(3600);
    })
    .await;
    run(&t.s, user("/goal Ship the release")).await;
    t.clock.advance_ms(HOUR);
    let g = t.settled().await;
    assert_eq!(
        (g.status, g.reason),
        (GoalStatus::Paused, GoalReason::WaitExpired)
    );
    assert_eq!(t.calls(), 1);

    let t = setup(json!({"seconds": 3 * 3600, "reason": "long"}), |_| {}).await;
    run(&t.s, user("/goal Ship the release time=1h")).await;
    t.clock.advance_ms(HOUR);
    let g = t.settled().await;
    assert_eq!(
        (g.status, g.reason),
        (GoalStatus::BudgetLimited, GoalReason::ActiveSeconds)
    );
    assert_eq!(t.calls(), 1);
}

/// The wait survives the session closing: reopened, the goal still waits, the hours it was
/// closed are not counted, and it wakes at its time.
#[tokio::test]
async fn g_47_a_wait_survives_a_restart_and_closed_time_is_not_counted() {
    let t = setup(json!({"seconds": 4 * 3600, "reason": "overnight"}), |_| {}).await;
    run(&t.s, user("/goal Ship the release")).await;
    t.advance_waiting(HOUR).await;
    let id = t.s.id().to_string();
    t.s.shutdown().await.unwrap();
    let (runtime, clock, calls) = (t.runtime, t.clock, t.calls);
    let calls = || calls.load(Ordering::SeqCst);
    let g = runtime.goal(&id).unwrap().unwrap();
    assert_eq!(
        (g.status, g.reason),
        (GoalStatus::Active, GoalReason::Waiting),
        "not paused by the close"
    );
    let counted = g.budget.active_seconds.used;
    assert!(counted >= 3600, "{counted}");
    // Two hours closed, then opened again.
    clock.advance_ms(2 * HOUR);
    let s = runtime.open_session(&id, Default::default()).unwrap();
    s.submit(Op::Resume).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(calls(), 1);
    let mut rx = s.subscribe();
    clock.advance_ms(HOUR);
    let events = collect(&mut rx).await;
    assert_eq!(woke(&events), Some(GoalActor::Runtime));
    let g = runtime.goal(&id).unwrap().unwrap();
    let waited = g.budget.active_seconds.used - counted;
    assert!(
        (3600..3700).contains(&waited),
        "only the hour open after the restart counts: {waited}"
    );
    s.shutdown().await.unwrap();
}

/// `wait` is offered only to a turn working on an active goal; a model that calls it anyway
/// is refused and nothing waits.
#[tokio::test]
async fn g_47_wait_is_offered_only_while_a_goal_is_active() {
    let (h, rec) = Harness::recording(
        super::config(Verification::None),
        json!({"responses": [
            {"text": "Let me wait.", "tool_calls": [{"name": "wait", "arguments": {"seconds": 60, "reason": "x"}}]},
            {"text": "ok"}
        ]}),
    );
    let s = h.recorded_session(waymark_protocol::PermissionMode::Auto);
    let events = run(&s, user("hello")).await;
    let offered = |i: usize| -> bool {
        rec.requests.lock().unwrap()[i]
            .tools
            .iter()
            .any(|t| t.name == "wait")
    };
    assert!(!offered(0), "no goal: no wait tool");
    let refused = events.iter().any(|e| matches!(&e.kind,
        EventKind::ToolResult { content, .. } if content.contains("only for a turn working on an active goal")));
    assert!(
        refused,
        "{:#?}",
        events
            .iter()
            .map(|e| e.kind.type_name())
            .collect::<Vec<_>>()
    );
    s.shutdown().await.unwrap();

    let (h, rec) = Harness::recording(
        super::config(Verification::None),
        json!({"responses": [super::claim("done")]}),
    );
    let s = h.recorded_session(waymark_protocol::PermissionMode::Auto);
    run(&s, user("/goal tidy")).await;
    assert!(
        rec.requests.lock().unwrap()[0]
            .tools
            .iter()
            .any(|t| t.name == "wait"),
        "a goal turn is offered wait"
    );
    s.shutdown().await.unwrap();
}

/// The red-team's findings, each an attack that must fail.
mod red_team {
    use super::*;
    use waymark_protocol::PermissionMode;

    fn wait_with_check(check: &str) -> Value {
        json!({"responses": [
            {"text": "Waiting.", "tool_calls": [{"name": "wait", "arguments": {"check": check, "every": 30, "reason": "CI"}}]},
            {"text": "ok"}
        ], "when_exhausted": "repeat_last"})
    }

    /// A check is a command run unattended: read-only mode refuses it, and in `ask` mode the
    /// user is asked first, shown the command.
    #[tokio::test]
    async fn a_check_is_allowed_as_a_command_would_be() {
        let h = Harness::new(super::super::config(Verification::None));
        let s = h.session(
            wait_with_check("curl -s https://example.invalid"),
            PermissionMode::ReadOnly,
        );
        let events = run(&s, user("/goal Ship it")).await;
        assert!(events.iter().any(|e| matches!(&e.kind,
            EventKind::ToolResult { content, .. } if content.contains("read-only permission mode does not allow"))));
        assert!(h.runtime.goal(s.id()).unwrap().unwrap().wait.is_none());
        s.shutdown().await.unwrap();

        let s = h.session(
            wait_with_check("curl -s https://example.invalid"),
            PermissionMode::Ask,
        );
        let events = run(&s, user("/goal Ship it")).await;
        let qid = super::super::waiting_on(&events);
        let asked = super::super::super::harness::questionnaire(&h, &s, &qid);
        assert_eq!(asked.kind, waymark_protocol::QuestionnaireKind::Permission);
        assert!(
            asked
                .payload
                .to_string()
                .contains("curl -s https://example.invalid"),
            "{}",
            asked.payload
        );
        assert!(
            h.runtime.goal(s.id()).unwrap().unwrap().wait.is_none(),
            "nothing waits before the answer"
        );
        s.shutdown().await.unwrap();
    }

    /// A secret the model puts in a wait is never shown: not in the goal's view, the log or
    /// the wait's reason (tool arguments reach the tool redacted, and the wait redacts what
    /// it shows again).
    #[tokio::test]
    async fn a_secret_in_the_check_is_never_shown() {
        const KEY: &str = "sk-live-OPENAIKEY-0123456789abcdef";
        let t = setup(
            json!({"check": format!("test {KEY} = {KEY}"), "every": 30, "reason": format!("token {KEY}")}),
            |c| {
                c.shell.env.set.insert("DEPLOY_TOKEN".into(), KEY.into());
            },
        )
        .await;
        run(&t.s, user("/goal Ship the release")).await;
        let view = serde_json::to_string(&t.runtime.goal_view(t.s.id()).unwrap()).unwrap();
        assert!(!view.contains(KEY), "{view}");
        let shown = t.goal().wait.unwrap();
        assert!(!shown.check.unwrap().contains(KEY));
        assert!(!shown.reason.contains(KEY));
        let mut rx = t.s.subscribe();
        t.clock.advance_ms(30_000);
        let events = collect(&mut rx).await;
        assert_eq!(woke(&events), Some(GoalActor::Runtime));
        let logged =
            serde_json::to_string(&t.runtime.events(t.s.id(), 0, 10_000).unwrap()).unwrap();
        assert!(!logged.contains(KEY));
        t.s.shutdown().await.unwrap();
    }

    /// Pausing a waiting goal ends its wait; resumed later, the paused hours are not charged.
    #[tokio::test]
    async fn a_paused_goal_no_longer_waits_and_its_pause_is_not_charged() {
        let t = setup(json!({"seconds": 3600, "reason": "cool-down"}), |_| {}).await;
        run(&t.s, user("/goal Ship the release time=3h")).await;
        t.clock.advance_ms(10 * 60_000);
        t.s.submit(user("/goal pause")).await.unwrap();
        let g = t.goal();
        assert_eq!(g.status, GoalStatus::Paused);
        assert!(g.wait.is_none(), "{g:?}");
        let used = g.budget.active_seconds.used;
        t.clock.advance_ms(10 * HOUR);
        let mut rx = t.s.subscribe();
        t.s.submit(user("/goal resume")).await.unwrap();
        collect(&mut rx).await;
        let g = t.goal();
        assert_eq!(g.status, GoalStatus::Complete, "{g:?}");
        assert!(
            g.budget.active_seconds.used < used + 60,
            "the pause was charged: {used} → {}",
            g.budget.active_seconds.used
        );
        t.s.shutdown().await.unwrap();
    }

    /// A model that only ever waits is stopped after 20 waits in a row; a 1-second wait is
    /// refused outright.
    #[tokio::test]
    async fn waits_in_a_row_are_capped_and_short_waits_refused() {
        let mut config = Config::default();
        config.goal.verification = Some(Verification::None);
        config.goal.breaker.repeated_reply_limit = 1000;
        let super::super::Clocked {
            clock,
            runtime,
            s,
            calls,
            // Held to the end: the data folder and the mock server.
            h: _h,
            _server: _mock,
        } = super::super::clocked(Flavor::OpenAi, config, T0, |n| {
            let args = if n == 1 {
                json!({"seconds": 1, "reason": "tick"})
            } else {
                json!({"seconds": 30, "reason": "tick"})
            };
            reply(Flavor::OpenAi, "Waiting.", Some(("wait", args)), 900)
        })
        .await;
        let events = run(&s, user("/goal Ship the release")).await;
        assert!(events.iter().any(|e| matches!(&e.kind,
            EventKind::ToolResult { content, .. } if content.contains("at least 30"))));
        let mut refused = false;
        for _ in 0..40 {
            let mut rx = s.subscribe();
            clock.advance_ms(30_000);
            let events = collect(&mut rx).await;
            if events.iter().any(|e| {
                matches!(&e.kind,
                EventKind::ToolResult { content, .. } if content.contains("20 waits in a row"))
            }) {
                refused = true;
                break;
            }
        }
        assert!(refused, "the 21st wait in a row was not refused");
        // It refused the 21st: 1 short wait refused, then 20 waits (one call each), then
        // the refused one.
        assert!(calls.load(Ordering::SeqCst) >= 22);
        let _ = runtime;
        s.shutdown().await.unwrap();
    }

    /// A check still running when the session closes is stopped (its process is gone at
    /// once), and nothing of it is recorded afterwards.
    #[tokio::test]
    async fn a_check_running_at_close_is_stopped_and_not_recorded() {
        // A sleep no other process here has: found by its command line.
        const MARK: &str = "7.3141";
        let running = || {
            std::fs::read_dir("/proc").unwrap().flatten().any(|p| {
                std::fs::read(p.path().join("cmdline"))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).contains(MARK))
            })
        };
        let t = setup(
            json!({"check": format!("sleep {MARK}; exit 0"), "every": 30, "reason": "slow CI"}),
            |_| {},
        )
        .await;
        run(&t.s, user("/goal Ship the release")).await;
        let id = t.s.id().to_string();
        t.clock.advance_ms(30_000);
        let mut seen = false;
        for _ in 0..100 {
            seen = running();
            if seen {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(seen, "the check never started");
        t.s.shutdown().await.unwrap();
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(!running(), "the check outlived its session");
        let g = t.runtime.goal(&id).unwrap().unwrap();
        let w = g.wait.expect("still waiting after the close");
        assert!(w.last_check.is_none(), "{w:?}");
        assert_eq!(t.calls.load(Ordering::SeqCst), 1);
    }
}

/// A check wait whose command is gone (begun before the command was kept apart, or a
/// damaged row) wakes the goal at once when the session opens, instead of spinning or
/// waiting a day for a check that can never run.
#[tokio::test]
async fn g_47_a_check_with_no_command_wakes_the_goal_instead_of_spinning() {
    let t = setup(
        json!({"check": "false", "every": 30, "reason": "CI"}),
        |_| {},
    )
    .await;
    run(&t.s, user("/goal Ship the release")).await;
    let id = t.s.id().to_string();
    t.s.shutdown().await.unwrap();
    let db = rusqlite::Connection::open(t.h.dir.path().join("data/waymark.db")).unwrap();
    assert_eq!(
        db.execute("UPDATE goals SET wait_command = NULL", [])
            .unwrap(),
        1
    );
    drop(db);
    let s = t.runtime.open_session(&id, Default::default()).unwrap();
    let mut rx = s.subscribe();
    s.submit(Op::Resume).await.unwrap();
    let events = collect(&mut rx).await;
    let events = if woke(&events).is_some() {
        events
    } else {
        collect(&mut rx).await
    };
    assert_eq!(woke(&events), Some(GoalActor::Runtime));
    assert!(events.iter().any(|e| matches!(&e.kind,
        EventKind::MessageAdmitted { text, .. } if text.contains("could not be run after an update"))));
    assert_eq!(t.calls.load(Ordering::SeqCst), 2);
    s.shutdown().await.unwrap();
}

/// A continuation queued before the agent began to wait (the user edited the goal while the
/// turn ran) does not run once the goal waits: the wait decides when the goal goes on.
#[tokio::test]
async fn g_47_a_continuation_queued_before_the_wait_is_dropped() {
    let h = Harness::new(super::config(Verification::None));
    let s = h.session(
        json!({"responses": [
            {"text": "Waiting for CI.", "delay_ms": 600, "tool_calls": [{"name": "wait", "arguments": {"seconds": 3600, "reason": "CI"}}]},
            {"text": "Going on."}
        ]}),
        waymark_protocol::PermissionMode::Auto,
    );
    let mut rx = s.subscribe();
    s.submit(user("/goal Ship the release")).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    s.submit(user("/goal edit Ship release 1.2")).await.unwrap();
    let mut events = collect(&mut rx).await;
    // The first idle may come before the queued continuation was looked at.
    tokio::time::sleep(Duration::from_millis(300)).await;
    while let Ok(e) = rx.try_recv() {
        events.push(e);
    }
    let g = h.runtime.goal(s.id()).unwrap().unwrap();
    assert!(g.wait.is_some(), "the goal no longer waits: {g:?}");
    assert!(
        events.iter().any(|e| matches!(&e.kind,
        EventKind::MessageDropped { reason, .. } if reason.contains("the goal waits"))),
        "{:#?}",
        events
            .iter()
            .map(|e| e.kind.type_name())
            .collect::<Vec<_>>()
    );
    assert!(!events.iter().any(|e| matches!(&e.kind,
        EventKind::AssistantMessage { text, .. } if text == "Going on.")));
    s.shutdown().await.unwrap();
}
