//! Thread goals end to end in-process with the scripted model (scenario tests named after
//! the spec ids they cover).

#![allow(unused_imports)] // the shared imports serve the submodules

mod budgets;
mod checks;
mod cost;
mod draft;
mod lifecycle;
mod refusal;
mod usage_limit;
mod verification;
mod wait;

use super::harness::{Harness, collect, finished, results, run, user, waiting_on};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use waymark_config::{Config, Verification};
use waymark_protocol::{
    Answer, EventKind, GoalReason, GoalSnapshot, GoalStatus, MessageSource, Op, PermissionMode,
    Position, QuestionnaireKind, ToolStatus, TurnEndReason,
};
use waymark_runtime::provider::ModelMessage;
use waymark_runtime::{Clock, SessionHandle};

pub(super) fn config(verification: Verification) -> Config {
    let mut c = Config::default();
    c.goal.verification = Some(verification);
    c
}

pub(super) fn goal(h: &Harness, s: &SessionHandle) -> GoalSnapshot {
    h.runtime.goal(s.id()).unwrap().expect("a goal")
}

pub(super) fn claim(message: &str) -> Value {
    json!({"text": format!("Claiming: {message}"), "tool_calls": [
        {"name": "update_goal", "arguments": {"mode": "status", "status": "complete", "message": message}}
    ]})
}

pub(super) fn work(i: usize) -> Value {
    json!({"text": format!("step {i}"), "tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}]})
}

pub(super) fn status(g: &GoalSnapshot) -> (GoalStatus, GoalReason) {
    (g.status, g.reason)
}

pub(super) async fn set_goal(
    h: &Harness,
    script: Value,
    cfg_verification: Verification,
    cmd: &str,
) -> (SessionHandle, Vec<waymark_protocol::Event>) {
    let _ = cfg_verification;
    let s = h.session(script, PermissionMode::Auto);
    let ev = run(&s, user(cmd)).await;
    (s, ev)
}

/// A clock that moves a second every time it is read: time passes without sleeping.
pub(super) struct Ticking(AtomicI64);

impl Clock for Ticking {
    fn now_ms(&self) -> i64 {
        self.0.fetch_add(1000, Ordering::SeqCst)
    }
}

mod budget_precision {
    use super::super::harness::{Harness, run, user};
    use proptest::prelude::*;
    use serde_json::{Value, json};
    use waymark_config::{Config, Verification};
    use waymark_protocol::{EventKind, GoalStatus, PermissionMode, ToolStatus};

    fn response(input: u64, output: u64, tools: usize) -> Value {
        let calls: Vec<Value> = (0..tools)
            .map(|_| json!({"name": "list_dir", "arguments": {"path": "."}}))
            .collect();
        json!({"text": "step", "usage": {"input_tokens": input, "output_tokens": output}, "tool_calls": calls})
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(100))]

        /// G-22 / acceptance: work-turn token usage never passes the budget by more than one
        /// model call, no tool runs once the budget is used up, and exactly one summary turn
        /// (without tools) follows the stop.
        #[test]
        fn g_22_budget_precision(
            budget in 500u64..20_000,
            calls in proptest::collection::vec((50u64..3_000, 1u64..500, 0usize..4), 1..25),
        ) {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async {
                let mut c = Config::default();
                c.goal.verification = Some(Verification::None);
                c.goal.breaker.repeated_reply_limit = 100;
                let h = Harness::new(c);
                let mut responses: Vec<Value> = calls.iter().map(|(i, o, t)| response(*i, *o, *t)).collect();
                // Then the model keeps working with tools until stopped.
                responses.push(response(100, 10, 1));
                let s = h.session(json!({"responses": responses, "when_exhausted": "repeat_last"}), PermissionMode::Auto);
                let ev = run(&s, user(&format!("/goal keep going budget={budget}"))).await;
                let g = h.runtime.goal(s.id()).unwrap().unwrap();
                prop_assert_eq!(g.status, GoalStatus::BudgetLimited);
                let mut used = 0u64;
                let mut max_call = 0u64;
                let mut exhausted = false;
                let mut summary_ids = std::collections::HashSet::new();
                let mut summary_calls = 0;
                let mut in_summary = false;
                let mut grace_calls = 0;
                let mut grace_summaries = 0;
                for e in &ev {
                    match &e.kind {
                        EventKind::MessageAdmitted { message_id, text, .. } if text.contains("budget is used up") => {
                            summary_ids.insert(*message_id);
                        }
                        EventKind::TurnStarted { message_id, .. } => in_summary = summary_ids.contains(message_id),
                        EventKind::AssistantMessage { usage, .. } if in_summary => summary_calls += 1,
                        EventKind::AssistantMessage { usage, tool_calls, .. } => {
                            // Past the budget: only the grace call (one, by default), after
                            // a call was refused with "reply now with a short summary".
                            if exhausted {
                                grace_calls += 1;
                                prop_assert!(grace_calls <= 1, "more than the grace call after the budget was used up");
                                if tool_calls.is_empty() {
                                    grace_summaries += 1;
                                }
                            }
                            used += usage.total();
                            max_call = max_call.max(usage.total());
                            exhausted = used >= budget;
                        }
                        EventKind::ToolResult { status, name, .. } if exhausted => {
                            prop_assert_ne!(*status, ToolStatus::Ok, "{} ran after the budget was used up", name);
                        }
                        _ => {}
                    }
                }
                prop_assert_eq!(summary_calls + grace_summaries, 1, "exactly one summary: the grace reply or the summary turn");
                prop_assert!(used <= budget + 2 * max_call, "work usage {} > budget {} + the call that crossed it and the grace call, {} each at most", used, budget, max_call);
                s.shutdown().await.unwrap();
                Ok(())
            })?;
        }
    }
}

/// A goal session on a mock provider speaking `flavor`'s wire protocol, behind an injected
/// clock that starts at `t0`, with one HTTP try per call (the client's own retries are not
/// what these tests look at). The provider answers its n-th call (from 1) with `answer(n)`.
pub(super) struct Clocked {
    pub h: Harness,
    pub clock: Arc<waymark_runtime::ManualClock>,
    pub runtime: waymark_runtime::Runtime,
    pub s: SessionHandle,
    pub calls: Arc<std::sync::atomic::AtomicUsize>,
    pub _server: super::mock_server::MockServer,
}

pub(super) async fn clocked(
    flavor: super::mock_server::Flavor,
    config: Config,
    t0: i64,
    answer: impl Fn(usize) -> super::mock_server::MockResponse + Send + Sync + 'static,
) -> Clocked {
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let c = calls.clone();
    let server = super::mock_server::MockServer::start_with(move |_| {
        answer(c.fetch_add(1, Ordering::SeqCst) + 1)
    })
    .await;
    let h = Harness::new(config);
    let clock = waymark_runtime::ManualClock::new(t0);
    let cl = clock.clone();
    let (runtime, s) = super::mock_server::on_mock(&h, flavor, &server, move |o| {
        o.clock = cl;
        o.http.retry.max_tries = 1;
    });
    Clocked {
        h,
        clock,
        runtime,
        s,
        calls,
        _server: server,
    }
}

impl Clocked {
    pub fn goal(&self) -> GoalSnapshot {
        self.runtime.goal(self.s.id()).unwrap().expect("a goal")
    }

    /// Model calls made so far.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// Moves the clock and waits a moment: no model call may be made meanwhile. The goal
    /// then, for the caller to check.
    pub async fn advance_without_calls(&self, ms: i64) -> GoalSnapshot {
        let before = self.calls();
        self.clock.advance_ms(ms);
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        assert_eq!(self.calls(), before, "a model call was made");
        self.goal()
    }

    /// Moves the clock and collects what the session does until it is idle again.
    pub async fn advance(&self, ms: i64) -> Vec<waymark_protocol::Event> {
        let mut rx = self.s.subscribe();
        self.clock.advance_ms(ms);
        collect(&mut rx).await
    }
}
