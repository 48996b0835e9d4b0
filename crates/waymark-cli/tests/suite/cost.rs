//! What model calls cost, through the binary (G-31, G-32): `show` and `goal show` print it,
//! `--json` carries it, `--budget cost=` sets a cost budget, and a model with no price shows
//! an unknown cost.

use super::support::{Env, text};
use serde_json::{Value, json};

#[test]
fn show_and_goal_show_print_the_cost_and_json_carries_it() {
    let env = Env::new();
    env.settings(
        r#"{"goal": {"verification": "none"},
            "pricing": {"scripted:*": {"input_per_mtok": 1, "output_per_mtok": 2}},
            "limits": {"daily_cost_usd": 25}}"#,
    );
    let usage = json!({"input_tokens": 10_000, "output_tokens": 1_000});
    let model = env.script(
        "m.json",
        json!({"responses": [
            {"text": "working", "usage": usage, "tool_calls": [{"name": "update_goal", "arguments":
                {"mode": "status", "status": "blocked", "message": "which folder?"}}]},
        ]}),
    );
    let out = env.exec(
        &model,
        &["--permission", "auto", "/goal tidy up cost=$2.50"],
    );
    // The goal ends blocked on the user: exit 3.
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let sid = env.only_session();
    let out = env.run(&["show", "--session", &sid]);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("cost        $0.0120 · today $0.0120 across all sessions of the $25.00 cap"),
        "{shown}"
    );
    let snap: Value =
        serde_json::from_slice(&env.run(&["show", "--session", &sid, "--json"]).stdout).unwrap();
    assert_eq!(
        snap["spend"],
        json!({"micros": 12_000, "unpriced_calls": 0})
    );
    assert_eq!(snap["cost_usd"], json!(0.012));
    let out = env.run(&["goal", "show", "--session", &sid]);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("cost     $0.0120 / $2.50 ($2.49 left)"),
        "{shown}"
    );
    let g: Value = serde_json::from_slice(
        &env.run(&["goal", "show", "--session", &sid, "--json"])
            .stdout,
    )
    .unwrap();
    assert_eq!(g["goal"]["budget"]["cost"]["limit"], json!(2_500_000));
    assert_eq!(g["goal"]["budget"]["cost"]["used"], json!(12_000));
}

#[test]
fn a_model_with_no_price_shows_an_unknown_cost_and_takes_no_cost_budget() {
    let env = Env::new();
    let model = env.script(
        "m.json",
        json!({"responses": [{"text": "hi", "usage": {"input_tokens": 5, "output_tokens": 5}}]}),
    );
    let out = env.exec(&model, &["--permission", "auto", "hello"]);
    assert!(out.status.success(), "{}", text(&out));
    let sid = env.only_session();
    let shown = String::from_utf8_lossy(&env.run(&["show", "--session", &sid]).stdout).into_owned();
    assert!(
        shown.contains("cost        unknown (no price for the model)"),
        "{shown}"
    );
    let snap: Value =
        serde_json::from_slice(&env.run(&["show", "--session", &sid, "--json"]).stdout).unwrap();
    assert_eq!(snap["cost_usd"], Value::Null);
    let out = env.exec_session(&sid, &["/goal more cost=$1"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("has no price") && err.contains("pricing"),
        "{err}"
    );
}

/// A script whose second call is slow: the first writes a file ($0.000003), the second
/// would answer after 20 s.
fn slow_second_call(env: &Env) -> String {
    env.settings(
        r#"{"pricing": {"scripted:*": {"input_per_mtok": 1, "output_per_mtok": 2}},
            "limits": {"daily_cost_usd": 25}}"#,
    );
    env.script(
        "slow.json",
        json!({"responses": [
            {"text": "one", "usage": {"input_tokens": 1, "output_tokens": 1},
             "tool_calls": [{"name": "write", "arguments": {"path": "one.txt", "content": "1"}}]},
            {"text": "this reply is slow", "delay_ms": 20000},
            {"text": "after"}
        ]}),
    )
}

/// Today's spending across all sessions, as `show` prints it, in micro-dollars.
fn today(env: &Env, sid: &str) -> u64 {
    let out = env.run(&["show", "--session", sid]);
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    let at = shown.find("today $").expect("today's spending") + "today $".len();
    let amount: String = shown[at..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    (amount.parse::<f64>().unwrap() * 1e6).round() as u64
}

/// Fourth red-team: `waymark exec` killed while a call ran (SIGKILL, a `timeout` loop) left
/// the call uncharged, so the daily cap never saw it. Its most possible cost (input, and the
/// 8,192 output tokens it may write: $0.0164 here) is held against the day before it goes
/// out; the next open charges it to its turn.
#[test]
fn a_call_cut_off_by_a_killed_process_stays_charged() {
    let env = Env::new();
    let model = slow_second_call(&env);
    let (mut child, sid, _lines) = super::support::spawn_until_tool_result(&env, &model, "go");
    child.kill().unwrap();
    child.wait().unwrap();
    let held = today(&env, &sid);
    assert!(held >= 16_384, "held: {held}");
    // The next open charges the hold to the turn it was for; the day keeps it.
    let out = env.run(&["exec", "--session", &sid, "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let fin = super::support::json_lines(&out)
        .into_iter()
        .find(|e| e["type"] == "turn.finished")
        .expect("the recovered turn");
    assert_eq!(fin["recovered"], true);
    assert!(fin["cost_usd"].as_f64().unwrap() >= 0.016384, "{fin}");
    assert_eq!(today(&env, &sid), held);
}

/// Fourth red-team: SIGTERM (what `timeout` sends) killed `waymark exec` without charging the
/// call under way. It stops the turn as Ctrl-C does: the call is charged, the turn closes,
/// and the process ends by itself.
#[test]
fn sigterm_stops_the_turn_and_charges_the_call() {
    let env = Env::new();
    let model = slow_second_call(&env);
    let (mut child, sid, _lines) = super::support::spawn_until_tool_result(&env, &model, "go");
    let pid = child.id().to_string();
    let sent = std::process::Command::new("kill")
        .args(["-s", "TERM", &pid])
        .status()
        .unwrap();
    assert!(sent.success());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "still running after SIGTERM"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let log = env.events(&sid);
    let fin: Vec<&Value> = log
        .iter()
        .filter(|e| e["type"] == "turn.finished")
        .collect();
    assert_eq!(fin.len(), 1, "{log:?}");
    assert_eq!(fin[0]["reason"], "aborted");
    assert_ne!(fin[0]["recovered"], true, "closed by the process itself");
    // The stopped call was charged and its hold released: the day holds its charge only.
    let spent = today(&env, &sid);
    assert!(spent > 3 && spent < 16_384, "{spent}");
}
