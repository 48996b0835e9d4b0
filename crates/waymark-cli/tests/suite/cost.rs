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
    assert!(out.status.success(), "{}", text(&out));
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
