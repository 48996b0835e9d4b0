//! `waymark mcp list/add/remove` and `/mcp`, with the real reference server of `tests/mcp`.

use super::support::{Env, json_lines, read, text};
use serde_json::{Value, json};

fn everything() -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/mcp/node_modules/.bin/mcp-server-everything");
    assert!(p.exists(), "scripts/setup.sh installs the MCP test servers");
    p.display().to_string()
}

fn settings(env: &Env) -> Value {
    serde_json::from_str(&read(env.dir.path().join("settings.json"))).unwrap()
}

#[test]
fn add_list_and_remove_a_server() {
    let env = Env::new();
    let bin = everything();
    let o = env.run(&[
        "mcp",
        "add",
        "everything",
        "--env",
        "LEVEL=info",
        "--",
        &bin,
        "stdio",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        settings(&env)["mcp_servers"]["everything"]["args"],
        json!(["stdio"])
    );
    // A second server of the same name is refused, the file unchanged.
    let before = read(env.dir.path().join("settings.json"));
    let o = env.run(&["mcp", "add", "everything", "--", "true"]);
    assert!(!o.status.success());
    assert!(text(&o).contains("already configured"), "{}", text(&o));
    assert_eq!(read(env.dir.path().join("settings.json")), before);

    let o = env.run(&["mcp", "list", "--json"]);
    assert!(o.status.success(), "{}", text(&o));
    let list: Vec<Value> = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(list[0]["name"], "everything");
    assert_eq!(list[0]["state"], "ready", "{list:?}");
    let echo = list[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "echo")
        .expect("echo listed");
    assert_eq!(echo["model_name"], "mcp__everything__echo");
    assert_eq!(echo["read_only"], true);

    let o = env.run(&["mcp", "list"]);
    let t = text(&o);
    assert!(t.contains("everything — ready"), "{t}");
    assert!(t.contains("echo (read-only)"), "{t}");

    let o = env.run(&["mcp", "remove", "everything"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        settings(&env)["mcp_servers"]
            .as_object()
            .is_none_or(|m| m.is_empty())
    );
    let o = env.run(&["mcp", "remove", "everything"]);
    assert!(!o.status.success());
    assert!(
        text(&o).contains("no MCP server named `everything`"),
        "{}",
        text(&o)
    );
}

#[test]
fn a_literal_secret_is_refused_and_nothing_is_written() {
    let env = Env::new();
    let o = env.run(&[
        "mcp",
        "add",
        "gh",
        "--env",
        "GITHUB_TOKEN=ghp_0123456789abcdef",
        "--",
        "srv",
    ]);
    assert!(!o.status.success());
    let t = text(&o);
    assert!(
        t.contains("GITHUB_TOKEN") && t.contains("${GITHUB_TOKEN}"),
        "{t}"
    );
    assert!(!read(env.dir.path().join("settings.json")).contains("ghp_"));
    let o = env.run(&[
        "mcp",
        "add",
        "web",
        "--url",
        "https://example.com/mcp",
        "--header",
        "Authorization: Bearer abc",
    ]);
    assert!(!o.status.success());
    assert!(!read(env.dir.path().join("settings.json")).contains("Bearer"));
}

#[test]
fn a_failed_server_is_listed_with_its_reason() {
    let env = Env::new();
    env.settings(r#"{"mcp_servers": {"ghost": {"command": "/nonexistent/mcp"}, "off": {"command": "x", "enabled": false}}}"#);
    let o = env.run(&["mcp", "list"]);
    assert!(o.status.success(), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains("ghost — failed: cannot start `/nonexistent/mcp`"),
        "{t}"
    );
    assert!(t.contains("off — disabled"), "{t}");
}

#[test]
fn slash_mcp_lists_the_servers_in_a_session() {
    let env = Env::new();
    env.settings(&format!(
        r#"{{"mcp_servers": {{"everything": {{"command": {:?}, "args": ["stdio"]}}}}}}"#,
        everything()
    ));
    let model = env.script("s.json", json!({"responses": []}));
    let o = env.exec(&model, &["--json", "/mcp"]);
    assert!(o.status.success(), "{}", text(&o));
    let out: Vec<String> = json_lines(&o)
        .iter()
        .filter(|e| e["type"] == "command.output")
        .map(|e| e["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(out.len(), 1, "{out:?}");
    assert!(out[0].starts_with("everything — "), "{out:?}");
}
