//! Signing in: `initialize` offers one method of the `agent` kind (what the ACP Registry's
//! check asks of an agent), `authenticate` checks that the model's key is there and says which
//! one is missing, and no session is made for a model that cannot be reached.

use super::super::support::{Env, text};
use super::raw::Raw;
use serde_json::json;

/// `waymark acp` for an OpenAI model, its key set to `key` (or unset), no other way to it.
fn agent(env: &Env, key: Option<&str>) -> Raw {
    Raw::start_with(env, "openai:gpt-4.1", &[], |c| {
        c.env_remove("OPENAI_BASE_URL").env_remove("OPENAI_API_KEY");
        if let Some(k) = key {
            c.env("OPENAI_API_KEY", k);
        }
    })
}

/// Reads the answer to request `id`: an error of `code` whose data names `naming`.
fn refused_with(raw: &mut Raw, id: u64, code: i64, naming: &str) {
    let answer = raw.reply(id);
    assert_eq!(answer["error"]["code"], code, "{answer}");
    let data = answer["error"]["data"].as_str().unwrap_or_default();
    assert!(data.contains(naming), "{answer}");
}

#[test]
fn sign_in_checks_the_models_key_and_no_session_is_made_without_it() {
    let env = Env::new();
    let mut raw = agent(&env, None);
    let methods = raw.hello["result"]["authMethods"].clone();
    let methods = methods.as_array().expect("authMethods is a list");
    // The registry counts a method whose type is `agent`, or that has none (the default).
    assert!(
        methods.iter().any(|m| m["id"] == "provider-key"
            && matches!(m.get("type").and_then(|t| t.as_str()), None | Some("agent"))),
        "{methods:?}"
    );

    raw.request(2, "authenticate", json!({"methodId": "provider-key"}));
    refused_with(&mut raw, 2, -32000, "OPENAI_API_KEY");
    raw.request(3, "session/new", json!({"cwd": env.ws, "mcpServers": []}));
    refused_with(&mut raw, 3, -32000, "OPENAI_API_KEY");
    raw.request(4, "authenticate", json!({"methodId": "someone-elses"}));
    refused_with(&mut raw, 4, -32602, "provider-key");
    assert_eq!(raw.finish(), Some(0));

    // Nothing was made for the model that could not be reached.
    let out = env.run(&["sessions", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed.as_array().map(Vec::len), Some(0), "{listed}");

    // A model that cannot be set up at all is an ordinary error: signing in would not mend it.
    let mut raw = Raw::start(&env, "nosuchprovider:model", &[]);
    raw.request(1, "authenticate", json!({"methodId": "provider-key"}));
    refused_with(&mut raw, 1, -32603, "nosuchprovider");
    assert_eq!(raw.finish(), Some(0));

    // With the key where the editor starts it, signing in and a new session both work.
    let mut raw = agent(&env, Some("sk-test"));
    raw.request(1, "authenticate", json!({"methodId": "provider-key"}));
    assert_eq!(raw.reply(1)["result"], json!({}));
    raw.request(2, "session/new", json!({"cwd": env.ws, "mcpServers": []}));
    assert!(raw.reply(2)["result"]["sessionId"].is_string());
    assert_eq!(raw.finish(), Some(0));
}

/// The registry entry (docs/agent.json) has the fields the ACP Registry's schema asks for,
/// the version being built, and a command that starts an agent its check accepts: started
/// as the registry's CI starts it (an empty home, no settings, a bare environment), it answers
/// `initialize` with a sign-in method of the `agent` kind.
#[test]
fn the_registry_entry_starts_an_agent_the_registry_check_accepts() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/agent.json");
    let entry: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let id = entry["id"].as_str().unwrap();
    assert!(
        id.starts_with(|c: char| c.is_ascii_lowercase())
            && id
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
        "{id}"
    );
    for field in ["name", "description", "license"] {
        assert!(!entry[field].as_str().unwrap().is_empty(), "{field}");
    }
    assert_eq!(entry["version"], env!("CARGO_PKG_VERSION"));
    let targets = entry["distribution"]["binary"].as_object().unwrap();
    assert!(!targets.is_empty());
    let home = tempfile::tempdir().unwrap();
    for (platform, target) in targets {
        assert!(
            [
                "darwin-aarch64",
                "darwin-x86_64",
                "linux-aarch64",
                "linux-x86_64",
                "windows-aarch64",
                "windows-x86_64"
            ]
            .contains(&platform.as_str()),
            "{platform}"
        );
        let archive = target["archive"].as_str().unwrap();
        assert!(
            archive.starts_with("https://") && archive.ends_with(".tar.gz"),
            "{archive}"
        );
        assert!(
            archive.contains(&format!("/{}/", env!("CARGO_PKG_VERSION"))),
            "{archive}"
        );
        assert_eq!(target["cmd"], "./waymark");
        let args: Vec<&str> = target["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_waymark"))
            .args(&args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", home.path())
            .env("TERM", "dumb")
            .current_dir(home.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let hello = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": 1,
            "clientInfo": {"name": "registry check", "version": "1.0.0"},
            "clientCapabilities": {"terminal": true, "fs": {"readTextFile": true, "writeTextFile": true}}
        }});
        {
            use std::io::Write as _;
            let mut stdin = child.stdin.take().unwrap();
            writeln!(stdin, "{hello}").unwrap();
        }
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", text(&out));
        let answer: serde_json::Value =
            serde_json::from_slice(out.stdout.split(|b| *b == b'\n').next().unwrap())
                .unwrap_or_else(|e| panic!("not JSON on stdout ({e}): {}", text(&out)));
        let methods = answer["result"]["authMethods"].as_array().unwrap();
        assert!(
            methods.iter().any(|m| matches!(
                m.get("type").and_then(|t| t.as_str()),
                None | Some("agent") | Some("terminal")
            )),
            "{answer}"
        );
    }
}
