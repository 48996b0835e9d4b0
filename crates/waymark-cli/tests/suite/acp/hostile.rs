//! `waymark acp` under hostile input, over its real stdio: garbage, a 100 MB line, a flood of
//! requests and a client that dies mid-turn. Each gets the protocol's error or a clean stop,
//! the agent stays up where it should, and the database stays intact.

use super::super::support::{Env, text};
use super::raw::Raw;
use serde_json::json;
use std::io::Write as _;
use std::process::Command;

/// The session a new-session request made, from its reply.
fn new_session(raw: &mut Raw, id: u64, env: &Env) -> String {
    raw.request(id, "session/new", json!({"cwd": env.ws, "mcpServers": []}));
    raw.reply(id)["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Whether a process runs `command` (its arguments joined by spaces).
fn running(command: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|p| {
        std::fs::read(p.path().join("cmdline"))
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " ").trim() == command)
            .unwrap_or(false)
    })
}

/// The database is whole: its integrity check passes and the sessions list.
fn database_intact(env: &Env) {
    let out = env.run(&["sessions", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let db = env.data.join("waymark.db");
    if db.exists() {
        let c = rusqlite::Connection::open(&db).unwrap();
        let ok: String = c
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ok, "ok");
    }
}

/// Stdout carries only JSON-RPC (logs go to the log file), garbage gets the protocol's
/// errors, and the agent exits 0 when the editor closes stdin.
#[test]
fn garbage_gets_protocol_errors_and_eof_ends_the_agent() {
    let env = Env::new();
    let model = env.script("s.json", json!({"responses": [{"text": "unused"}]}));
    let mut raw = Raw::start(&env, &model, &["--log-level", "debug"]);
    raw.line("this is not json");
    raw.stdin
        .as_mut()
        .unwrap()
        .write_all(b"\xff\xfe\x00binary\n")
        .unwrap();
    // A megabyte of control characters: its parse error does not quote it back six times over.
    let noise = "\u{1}".repeat(1 << 20);
    raw.line(&noise);
    let mut errors = Vec::new();
    while errors.len() < 3 {
        let m = raw.next().expect("stdout ended");
        if m["error"]["code"] == -32700 {
            errors.push(m.to_string());
        } else if m.get("id").is_some_and(|id| !id.is_null()) {
            panic!("an answer before the parse errors: {m}");
        }
    }
    for e in &errors {
        assert!(e.len() < 1024, "a parse error of {} bytes", e.len());
    }
    raw.line(r#"{"jsonrpc":"2.0","id":1,"method":"session/unheard_of","params":{}}"#);
    raw.line(r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"elsewhere","prompt":[{"type":"text","text":"hi"}]}}"#);
    raw.line(r#"{"jsonrpc":"2.0","id":3,"method":"session/new","params":{"cwd":"relative/dir"}}"#);
    let mut seen = Vec::new();
    for id in 1..=3 {
        let r = raw.reply(id);
        seen.push(r);
    }
    assert_eq!(seen[0]["error"]["code"], -32601, "{seen:#?}");
    assert!(seen[1].to_string().contains("elsewhere"), "{seen:#?}");
    assert!(seen[2]["error"].is_object(), "{seen:#?}");
    assert_eq!(raw.finish(), Some(0));
    database_intact(&env);
}

/// A 100 MB line is never held whole: the agent answers it with a parse error and goes on,
/// its memory far below the line's size.
#[test]
fn a_100_mb_line_is_refused_without_being_held() {
    let env = Env::new();
    let model = env.script("s.json", json!({"responses": [{"text": "Still here."}]}));
    let mut raw = Raw::start(&env, &model, &[]);
    let pid = raw.child.id();
    {
        let stdin = raw.stdin.as_mut().unwrap();
        stdin
            .write_all(br#"{"jsonrpc":"2.0","id":1,"method":"session/list","params":{"cwd":""#)
            .unwrap();
        let chunk = vec![b'a'; 1 << 20];
        for _ in 0..100 {
            stdin.write_all(&chunk).unwrap();
        }
        stdin.write_all(b"\"}}\n").unwrap();
    }
    // Its answer: the parse error (which has no id), never the listing it asked for.
    let refused = raw.until(|m| m.get("error").is_some() || m["id"] == 1);
    assert_eq!(refused["error"]["code"], -32700, "{refused}");
    // It goes on: a session works after it.
    let sid = new_session(&mut raw, 2, &env);
    raw.request(
        3,
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}),
    );
    assert_eq!(raw.reply(3)["result"]["stopReason"], "end_turn");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let peak_kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    assert!(
        peak_kb < 64 * 1024,
        "the agent's memory peaked at {peak_kb} kB: it held the line"
    );
    assert_eq!(raw.finish(), Some(0));
    database_intact(&env);
}

/// A flood of new sessions is answered request by request, but one connection opens only so
/// many sessions: the rest get a clear error, and the agent stays responsive.
#[test]
fn a_flood_of_requests_is_answered_and_bounded() {
    let env = Env::new();
    let model = env.script("s.json", json!({"responses": [{"text": "unused"}]}));
    let mut raw = Raw::start(&env, &model, &[]);
    let n = 300u64;
    {
        let mut flood = String::new();
        for id in 1..=n {
            flood.push_str(
                &json!({"jsonrpc": "2.0", "id": id, "method": "session/new", "params": {"cwd": env.ws, "mcpServers": []}})
                    .to_string(),
            );
            flood.push('\n');
        }
        let stdin = raw.stdin.as_mut().unwrap();
        stdin.write_all(flood.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }
    let mut made = 0;
    let mut refused = Vec::new();
    let mut answered = std::collections::HashSet::new();
    while answered.len() < n as usize {
        let m = raw.next().expect("stdout ended during the flood");
        if m.get("method").is_some() {
            continue;
        }
        answered.insert(m["id"].as_u64().unwrap());
        if m["result"]["sessionId"].is_string() {
            made += 1;
        } else {
            refused.push(m);
        }
    }
    assert_eq!(made, 64, "sessions made in one connection");
    assert!(
        refused[0]["error"]
            .to_string()
            .contains("at most 64 sessions"),
        "{:#?}",
        refused[0]
    );
    // Still answering.
    raw.request(n + 1, "session/list", json!({}));
    assert!(raw.reply(n + 1)["result"]["sessions"].is_array());
    assert_eq!(raw.finish(), Some(0));
    database_intact(&env);
}

/// A client that dies while a command runs: the agent stops the turn as Stop would, exits,
/// and the next connection loads the session with everything that happened.
#[test]
fn a_client_killed_mid_turn_stops_the_turn_and_loses_nothing() {
    let env = Env::new();
    // A command line no other test runs, to find its process by.
    let command = format!("sleep 59.{}", std::process::id());
    let model = env.script(
        "s.json",
        json!({"responses": [
            {"text": "Waiting on it.", "tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
            {"tool_calls": [{"name": "write", "arguments": {"path": "after.txt", "content": "no"}}]}
        ]}),
    );
    let mut raw = Raw::start(&env, &model, &["--permission", "auto"]);
    let sid = new_session(&mut raw, 1, &env);
    raw.request(
        2,
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "wait"}]}),
    );
    raw.until(|m| m["params"]["update"]["sessionUpdate"] == "tool_call");
    // The client dies: both its pipes close at once.
    let started = std::time::Instant::now();
    let Raw {
        mut child,
        stdin,
        stdout,
        ..
    } = raw;
    drop(stdin);
    drop(stdout);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "the agent waited for the command instead of stopping it"
    );
    assert!(!env.ws.join("after.txt").exists());
    // The command was stopped with the turn, not left running.
    assert!(
        !running(&command),
        "`{command}` still runs after its client died"
    );
    database_intact(&env);
    // The turn was stopped and recorded so.
    let events = env.events(&sid);
    let ended = events
        .iter()
        .rev()
        .find(|e| e["type"] == "turn.finished")
        .unwrap_or_else(|| panic!("the turn never ended: {events:#?}"));
    assert_eq!(ended["reason"], "aborted", "{ended}");
    // The next connection loads it, the message and the call replayed.
    let mut raw = Raw::start(&env, &model, &[]);
    raw.request(
        1,
        "session/load",
        json!({"sessionId": sid, "cwd": env.ws, "mcpServers": []}),
    );
    let mut replayed = Vec::new();
    loop {
        let m = raw.next().unwrap();
        if m["id"] == 1 {
            assert!(m["result"].is_object(), "{m}");
            break;
        }
        replayed.push(m["params"]["update"]["sessionUpdate"].clone());
    }
    assert!(replayed.contains(&json!("tool_call")), "{replayed:?}");
    assert!(
        replayed.contains(&json!("agent_message_chunk")),
        "{replayed:?}"
    );
    assert_eq!(raw.finish(), Some(0));
}

/// SIGTERM (and SIGHUP, and SIGINT) end the agent even while the client keeps its end open and sends
/// nothing: a read waiting on stdin never holds up the exit.
#[test]
fn a_terminated_agent_exits_while_its_client_still_holds_stdin() {
    let env = Env::new();
    let model = env.script("s.json", json!({"responses": [{"text": "unused"}]}));
    for signal in ["TERM", "HUP", "INT"] {
        let mut raw = Raw::start(&env, &model, &[]);
        new_session(&mut raw, 1, &env);
        let sent = Command::new("kill")
            .args(["-s", signal, &raw.child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let status = loop {
            if let Some(status) = raw.child.try_wait().unwrap() {
                break status;
            }
            if std::time::Instant::now() > until {
                let _ = raw.child.kill();
                panic!("SIG{signal} did not end the agent while its stdin stayed open");
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        assert!(status.success(), "SIG{signal}: {status:?}");
        // stdin is still open here: the agent did not wait for it.
        assert!(raw.stdin.is_some());
    }
    database_intact(&env);
}

/// `waymark acp` on `env` with a session whose prompt (request 2, sent) runs one reply of
/// `calls` file reads, each of a file with a long name (so every update is long and a pipe
/// fills early), then answers `last`: the agent and the session.
fn many_reads(env: &Env, calls: usize, last: &str) -> (Raw, String) {
    let name = format!("{}.txt", "n".repeat(240));
    std::fs::write(env.ws.join(&name), "some text to read\n".repeat(1000)).unwrap();
    let calls: Vec<serde_json::Value> = (0..calls)
        .map(|_| json!({"name": "read_file", "arguments": {"path": name}}))
        .collect();
    let model = env.script(
        "s.json",
        json!({"responses": [{"tool_calls": calls}, {"text": last}]}),
    );
    let mut raw = Raw::start(env, &model, &["--permission", "auto"]);
    let sid = new_session(&mut raw, 1, env);
    raw.request(
        2,
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "read"}]}),
    );
    (raw, sid)
}

/// A client that stops reading while the agent pours out updates (a reply of 700 file reads,
/// each result shown) does not make the agent queue them all for it:
/// once a line waits on the client, the prompt holds the rest back, the session skips what
/// it cannot keep, and the editor is told so when it reads again; the prompt still ends as it
/// should.
#[test]
fn a_client_that_reads_slowly_is_told_what_it_missed_instead_of_being_queued_for() {
    const CALLS: usize = 700;
    let env = Env::new();
    let (mut raw, sid) = many_reads(&env, CALLS, "Read it all.");
    // The client reads nothing until the session has done all its work (its log stops
    // growing): far more updates than anyone should keep for it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    let mut last = (0, std::time::Instant::now());
    while last.1.elapsed() < std::time::Duration::from_secs(1) {
        assert!(
            std::time::Instant::now() < deadline,
            "the turn never finished"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
        let out = env.run(&["show", "--session", &sid, "--json"]);
        let shown: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        let seq = shown["last_seq"].as_u64().unwrap_or(0);
        if seq != last.0 {
            last = (seq, std::time::Instant::now());
        }
    }
    let mut said = String::new();
    let mut updates = 0;
    let answer = loop {
        let m = raw.next().expect("stdout ended before the prompt's answer");
        if m["id"] == 2 && m.get("method").is_none() {
            break m;
        }
        let update = &m["params"]["update"];
        if let Some(t) = update["content"]["text"].as_str() {
            said.push_str(t);
        }
        updates += usize::from(update.is_object());
    };
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert!(
        said.contains("were skipped while the editor read slowly"),
        "the agent queued all {updates} updates for a client that read nothing"
    );
    // Each call has its start and its result shown: some of those were skipped.
    assert!(updates < 2 * CALLS, "{updates}");
    assert!(said.contains("Read it all."), "{said}");
    assert_eq!(raw.finish(), Some(0));
}

/// A client that reads nothing cannot stack up replays: once a `session/load` has left more
/// updates unread than the bound, the next one is refused until the client reads them.
#[test]
fn replays_are_not_stacked_up_for_a_client_that_reads_nothing() {
    let env = Env::new();
    let (mut raw, sid) = many_reads(&env, 150, "Read.");
    assert_eq!(raw.reply(2)["result"]["stopReason"], "end_turn");
    raw.request(3, "session/close", json!({"sessionId": sid}));
    raw.reply(3);
    // Without reading: a load (its replay fills the pipe), a close, and a load again.
    let load = json!({"sessionId": sid, "cwd": env.ws, "mcpServers": []});
    raw.request(4, "session/load", load.clone());
    raw.request(5, "session/close", json!({"sessionId": sid}));
    raw.request(6, "session/load", load);
    std::thread::sleep(std::time::Duration::from_secs(1));
    assert!(raw.reply(4).get("result").is_some());
    let refused = raw.reply(6);
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert!(
        refused["error"]["data"]
            .as_str()
            .unwrap()
            .contains("has not read"),
        "{refused}"
    );
    assert_eq!(raw.finish(), Some(0));
}
