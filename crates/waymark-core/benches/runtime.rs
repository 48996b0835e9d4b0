//! Runtime benchmarks (criterion):
//! - `turn/one_model_call`: a user message through admission, one scripted model call, the
//!   committed events and the idle announcement — the runtime's overhead per model call.
//! - `turn/model_call_with_tool`: two model calls and one `list_dir` call per turn.
//! - `session/open_and_read_10k_events`: open the database and read a 10,000-event log.

#![allow(clippy::unwrap_used, clippy::expect_used)] // benchmark code

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use std::time::{Duration, Instant};
use waymark_core::store::Store;
use waymark_core::{Runtime, RuntimeOptions, SessionSpec};
use waymark_protocol::config::Config;
use waymark_protocol::{EventKind, MessageSource, Op, PermissionMode, Position};

/// Turns per session before a fresh one is started, so history stays at a realistic size.
const TURNS_PER_SESSION: u64 = 50;

fn bench_turns(c: &mut Criterion, name: &str, script: serde_json::Value) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("a.txt"), "x\n").unwrap();
    let script_path = dir.path().join("script.json");
    std::fs::write(&script_path, serde_json::to_vec(&script).unwrap()).unwrap();
    let runtime = Runtime::open(RuntimeOptions::new(
        dir.path().join("data"),
        Config::default(),
    ))
    .unwrap();
    let spec = || SessionSpec {
        workspace: Some(ws.clone()),
        model: Some(format!("scripted:{}", script_path.display())),
        permission_mode: Some(PermissionMode::Auto),
        hold: false,
    };
    c.bench_function(name, |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut total = Duration::ZERO;
                let mut done = 0;
                while done < iters {
                    let session = runtime.create_session(spec()).unwrap();
                    let mut rx = session.subscribe();
                    let n = (iters - done).min(TURNS_PER_SESSION);
                    for _ in 0..n {
                        let start = Instant::now();
                        session
                            .submit(Op::Submit {
                                text: "go on".into(),
                                source: MessageSource::User,
                                position: Position::Tail,
                                idempotency_key: None,
                                intent: None,
                            })
                            .await
                            .unwrap();
                        loop {
                            let ev = rx.recv().await.unwrap();
                            if matches!(ev.kind, EventKind::SessionIdle {}) {
                                break;
                            }
                        }
                        total += start.elapsed();
                    }
                    done += n;
                    session.shutdown().await.unwrap();
                }
                total
            })
        })
    });
}

fn turns(c: &mut Criterion) {
    bench_turns(
        c,
        "turn/one_model_call",
        json!({"responses": [{"text": "All good, nothing to change.", "usage": {"input_tokens": 1000, "output_tokens": 20}}], "when_exhausted": "repeat_last"}),
    );
    // The script format has no "cycle": spell out enough pairs for every iteration.
    let pair = [
        json!({"text": "Looking.", "tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}]}),
        json!({"text": "Done."}),
    ];
    let responses: Vec<_> = pair
        .iter()
        .cycle()
        .take(2 * TURNS_PER_SESSION as usize + 2)
        .cloned()
        .collect();
    bench_turns(
        c,
        "turn/model_call_with_tool",
        json!({"responses": responses}),
    );
}

fn open_and_read(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("waymark.db");
    {
        let store = Store::open(&db).unwrap();
        store
            .write(1, |tx| {
                tx.create_session("s-bench", "/ws", None, PermissionMode::Auto)
            })
            .unwrap();
        for chunk in 0..100 {
            store
                .write(chunk, |tx| {
                    for i in 0..100 {
                        tx.emit(
                            "s-bench",
                            EventKind::ToolResult {
                                turn_id: chunk,
                                call_id: format!("call-{chunk}-{i}"),
                                name: "read_file".into(),
                                status: waymark_protocol::ToolStatus::Ok,
                                content: "     1\tfn main() {}\n".repeat(8),
                            },
                        )?;
                    }
                    Ok(())
                })
                .unwrap();
        }
    }
    c.bench_function("session/open_and_read_10k_events", |b| {
        b.iter(|| {
            let runtime = Runtime::open(RuntimeOptions::new(
                dir.path().to_path_buf(),
                Config::default(),
            ))
            .unwrap();
            let events = runtime.events("s-bench", 0, 10_000).unwrap();
            assert_eq!(events.len(), 10_000);
            events
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(Duration::from_secs(6)).warm_up_time(Duration::from_secs(2));
    targets = turns, open_and_read
}
criterion_main!(benches);
