//! Runtime benchmarks (criterion):
//! - `turn/one_model_call`: a user message through admission, one scripted model call, the
//!   committed events and the idle announcement — the runtime's overhead per model call.
//! - `turn/model_call_with_tool`: two model calls and one `list_dir` call per turn.
//! - `turn/openai_mock_three_calls`: a turn of three model calls (two tool calls) through the
//!   real OpenAI wire client against a local server on loopback.
//! - `session/open_and_read_10k_events`: open the database and read a 10,000-event log.
//! - `context/assemble_150k_token_history`: build the model request from a history of about
//!   150,000 tokens (what every model call of a long session pays; target <= 2 ms). Whether
//!   to compact is decided from a running total, so that decision costs the same at any size.

#![allow(clippy::unwrap_used, clippy::expect_used)] // benchmark code

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use std::time::{Duration, Instant};
use waymark_config::Config;
use waymark_protocol::{EventKind, MessageSource, Op, PermissionMode, Position};
use waymark_runtime::store::Store;
use waymark_runtime::{Runtime, RuntimeOptions, SessionSpec};

/// Turns per session before a fresh one is started, so history stays at a realistic size.
const TURNS_PER_SESSION: u64 = 50;

/// A loopback server answering Chat Completions requests with SSE: two tool calls, then text
/// (keep-alive connections, one write per response).
fn spawn_openai_mock(rt: &tokio::runtime::Runtime) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    rt.spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else { return };
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut tmp = vec![0u8; 65536];
                loop {
                    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                        match sock.read(&mut tmp).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&tmp[..n]),
                        }
                        continue;
                    };
                    let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                    let len: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:").map(|v| v.trim().parse().unwrap()))
                        .unwrap_or(0);
                    while buf.len() < end + 4 + len {
                        match sock.read(&mut tmp).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&tmp[..n]),
                        }
                    }
                    let body: serde_json::Value = serde_json::from_slice(&buf[end + 4..end + 4 + len]).unwrap();
                    buf.drain(..end + 4 + len);
                    let msgs = body["messages"].as_array().unwrap();
                    let tools = msgs.iter().rev().take_while(|m| m["role"] != "user").filter(|m| m["role"] == "tool").count();
                    let mut sse = String::new();
                    let mut push = |v: serde_json::Value| sse.push_str(&format!("data: {v}\n\n"));
                    if tools < 2 {
                        let (name, args) = if tools == 0 { ("read_file", r#"{"path":"a.txt"}"#) } else { ("list_dir", r#"{"path":"."}"#) };
                        push(json!({"choices": [{"index": 0, "delta": {"content": "Checking. "}}]}));
                        push(json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": format!("c{tools}"), "type": "function", "function": {"name": name, "arguments": args}}]}}]}));
                        push(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}));
                    } else {
                        push(json!({"choices": [{"index": 0, "delta": {"content": "All fine."}, "finish_reason": "stop"}]}));
                    }
                    push(json!({"choices": [], "usage": {"prompt_tokens": 1000, "completion_tokens": 20}}));
                    sse.push_str("data: [DONE]\n\n");
                    let resp = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{sse}",
                        sse.len()
                    );
                    if sock.write_all(resp.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    url
}

fn bench_openai(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let base = spawn_openai_mock(&rt);
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("a.txt"), "x\n").unwrap();
    let mut opts = RuntimeOptions::new(dir.path().join("data"), Config::default());
    let base2 = base.clone();
    opts.env = std::sync::Arc::new(move |k: &str| match k {
        "OPENAI_BASE_URL" => Some(base2.clone()),
        "OPENAI_API_KEY" => Some("bench".into()),
        _ => None,
    });
    let runtime = Runtime::open(opts).unwrap();
    let spec = || SessionSpec {
        workspace: Some(ws.clone()),
        model: Some("openai:bench".into()),
        permission_mode: Some(PermissionMode::Auto),
        hold: false,
    };
    run_turns(c, &rt, &runtime, spec, "turn/openai_mock_three_calls");
}

fn run_turns(
    c: &mut Criterion,
    rt: &tokio::runtime::Runtime,
    runtime: &Runtime,
    spec: impl Fn() -> SessionSpec,
    name: &str,
) {
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
                                images: Vec::new(),
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
    run_turns(c, &rt, &runtime, spec, name);
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
                                images: Vec::new(),
                                turn_id: chunk,
                                call_id: format!("call-{chunk}-{i}"),
                                name: "read_file".into(),
                                status: waymark_protocol::ToolStatus::Ok,
                                content: "     1\tfn main() {}\n".repeat(8),
                                actor: waymark_protocol::CallActor::Main,
                                changes: Vec::new(),
                            },
                        )?;
                    }
                    Ok::<_, waymark_runtime::Error>(())
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

fn context_assembly(c: &mut Criterion) {
    use waymark_protocol::ToolStatus;
    use waymark_runtime::context::{RequestParts, build_request};
    use waymark_runtime::{HistoryItem, ToolCallRecord};
    let output =
        "let value = compute(input); // a line of source code read by the agent\n".repeat(26);
    let mut history = Vec::new();
    for t in 0..300i64 {
        history.push((
            Some(t),
            HistoryItem::User {
                text: format!("Continue with step {t} of the refactor."),
                source: MessageSource::Goal,
                images: Vec::new(),
            },
        ));
        history.push((
            Some(t),
            HistoryItem::Assistant {
                text: format!("Reading module {t}."),
                reasoning: None,
                tool_calls: vec![ToolCallRecord::from_provider(
                    Some(format!("c{t}")),
                    "read_file".into(),
                    json!({"path": format!("src/m{t}.rs")}),
                )],
            },
        ));
        history.push((
            Some(t),
            HistoryItem::ToolResult {
                images: Vec::new(),
                call_id: format!("c{t}"),
                wire_id: None,
                name: "read_file".into(),
                status: ToolStatus::Ok,
                content: output.clone(),
            },
        ));
        history.push((
            Some(t),
            HistoryItem::Assistant {
                text: format!("Module {t} now uses the new API."),
                reasoning: None,
                tool_calls: vec![],
            },
        ));
    }
    let tokens: u64 = history
        .iter()
        .map(|(_, i)| waymark_runtime::compaction::item_tokens(i))
        .sum();
    assert!((140_000..170_000).contains(&tokens), "{tokens}");
    let system = "You are a coding agent. ".repeat(100);
    c.bench_function("context/assemble_150k_token_history", |b| {
        b.iter(|| {
            let (req, elided) = build_request(RequestParts {
                system: system.clone(),
                history: &history,
                current_turn: 299,
                reminders: Some("<system_reminder>\nbudget\n</system_reminder>"),
                tools: Vec::new(),
                tools_tokens: 2_000,
                budget_tokens: 200_000,
                max_output_tokens: 8192,
            });
            assert_eq!(elided.items, 0);
            req
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(Duration::from_secs(6)).warm_up_time(Duration::from_secs(2));
    targets = turns, bench_openai, open_and_read, context_assembly
}
criterion_main!(benches);
