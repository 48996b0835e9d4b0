//! Goal benchmarks (criterion):
//! - `goal/settlement_per_turn`: reading the goal, stages 1–8 and the commit and continuation
//!   writes, on a real database file (no verifier) — target ≤ 100 µs median.
//! - `goal/run_1000_turns`: a goal of 1,000 turns end to end with the scripted model (two
//!   model calls and a tool call a turn), until its turn budget stops it — target ≤ 5 s.

#![allow(clippy::unwrap_used, clippy::expect_used)] // benchmark code

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use std::time::{Duration, Instant};
use waymark_config::{Config, Verification};
use waymark_protocol::{
    EventKind, GoalActor, MessageSource, Op, PermissionMode, Position, TurnEndReason,
};
use waymark_runtime::goal::db::GoalWrites;
use waymark_runtime::goal::db::{Budgets, current_goal};
use waymark_runtime::goal::settlement::{Limits, Mode, Pipeline, TurnFacts, commit, continuation};
use waymark_runtime::{Runtime, RuntimeOptions, SessionSpec};

fn settlement(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let store = waymark_runtime::builtin::store_with_builtin(&dir.path().join("w.db")).unwrap();
    store
        .write(1, |tx| {
            tx.create_session("s", "/ws", None, PermissionMode::Auto)?;
            tx.create_goal(
                "g",
                "s",
                "keep the build green",
                None,
                Budgets {
                    tokens: Some(1 << 40),
                    ..Budgets::default()
                },
                GoalActor::User,
            )
        })
        .unwrap();
    let limits = Limits {
        repeated_reply_limit: 3,
        repeated_not_met_limit: 5,
        auto_resumes: 3,
    };
    let mut n = 0u64;
    c.bench_function("goal/settlement_per_turn", |b| {
        b.iter(|| {
            n += 1;
            let goal = store.read(|c| current_goal(c, "s")).unwrap().unwrap();
            let facts = TurnFacts {
                reason: TurnEndReason::Completed,
                error_code: None,
                resets_in_ms: None,
                now_ms: 0,
                final_reply: format!("finished step {n}"),
                used_tools: true,
                ended_with_reply: false,
                user_started: false,
                proposal: None,
                revision_at_start: goal.revision,
                pending_questionnaire: false,
            };
            let mut p = Pipeline::new(goal, facts);
            p.run(Mode::None, None, limits);
            store
                .write(n as i64, |tx| {
                    let mut g = commit(tx, &p)?;
                    continuation(tx, &mut g, &p)
                })
                .unwrap();
        })
    });
}

fn thousand_turns(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let mut responses = Vec::new();
    for i in 0..1000 {
        responses.push(json!({"text": format!("step {i}"), "usage": {"input_tokens": 500, "output_tokens": 20}, "tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}]}));
        responses.push(json!({"text": format!("finished step {i}"), "usage": {"input_tokens": 520, "output_tokens": 10}}));
    }
    responses.push(json!({"text": "Summary: 1,000 steps done."}));
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        serde_json::to_vec(&json!({"responses": responses})).unwrap(),
    )
    .unwrap();
    let mut config = Config::default();
    config.goal.verification = Some(Verification::None);
    // Context grows with every turn; keep the request small enough for the scripted model.
    config.turn.context_tokens = Some(10_000_000);
    let runtime = Runtime::open(RuntimeOptions::new(dir.path().join("data"), config)).unwrap();
    let mut group = c.benchmark_group("goal");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(30));
    group.bench_function("run_1000_turns", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let s = runtime
                        .create_session(SessionSpec {
                            workspace: Some(ws.clone()),
                            model: Some(format!("scripted:{}", script.display())),
                            permission_mode: Some(PermissionMode::Auto),
                            hold: false,
                        })
                        .unwrap();
                    let mut rx = s.subscribe();
                    let start = Instant::now();
                    s.submit(Op::Submit {
                        text: "/goal take 1,000 steps turns=1000".into(),
                        source: MessageSource::User,
                        position: Position::Tail,
                        idempotency_key: None,
                        intent: None,
                        images: Vec::new(),
                    })
                    .await
                    .unwrap();
                    loop {
                        match rx.recv().await {
                            Ok(ev) if matches!(ev.kind, EventKind::SessionIdle {}) => break,
                            Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                            Err(e) => panic!("{e}"),
                        }
                    }
                    total += start.elapsed();
                    let g = runtime.goal(s.id()).unwrap().unwrap();
                    assert_eq!(
                        g.budget.main_turns.used, 1001,
                        "1,000 work turns and the summary turn"
                    );
                    s.shutdown().await.unwrap();
                }
                total
            })
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(Duration::from_secs(5)).warm_up_time(Duration::from_secs(1));
    targets = settlement, thousand_turns
}
criterion_main!(benches);
