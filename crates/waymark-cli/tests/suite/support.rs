//! Runs the real `waymark` binary against a temp data dir and workspace.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub struct Env {
    pub dir: tempfile::TempDir,
    pub ws: PathBuf,
    pub data: PathBuf,
}

impl Env {
    pub fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let data = dir.path().join("data");
        Env {
            ws: ws.canonicalize().unwrap(),
            data,
            dir,
        }
    }

    pub fn script(&self, name: &str, script: Value) -> String {
        let p = self.dir.path().join(name);
        std::fs::write(&p, serde_json::to_vec_pretty(&script).unwrap()).unwrap();
        format!("scripted:{}", p.display())
    }

    pub fn cmd(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_waymark"));
        c.arg("--data-dir")
            .arg(&self.data)
            .arg("--config")
            .arg(self.dir.path().join("settings.json"))
            .env_remove("WAYMARK_DATA_DIR")
            .env_remove("WAYMARK_CONFIG")
            .env_remove("WAYMARK_LOG");
        if !self.dir.path().join("settings.json").exists() {
            std::fs::write(self.dir.path().join("settings.json"), "{}").unwrap();
        }
        c
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd().args(args).output().unwrap()
    }

    /// Replaces the settings file every command of this environment reads.
    pub fn settings(&self, json: &str) {
        std::fs::write(self.dir.path().join("settings.json"), json).unwrap();
    }

    /// `exec` in a new session on the workspace with `model`, then `extra`.
    pub fn exec_args<'a>(&'a self, model: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
        let mut args = vec![
            "exec",
            "--workspace",
            self.ws.to_str().unwrap(),
            "--model",
            model,
        ];
        args.extend_from_slice(extra);
        args
    }

    pub fn exec(&self, model: &str, extra: &[&str]) -> Output {
        self.run(&self.exec_args(model, extra))
    }

    pub fn exec_session(&self, session: &str, extra: &[&str]) -> Output {
        let mut args = vec!["exec", "--session", session];
        args.extend_from_slice(extra);
        self.run(&args)
    }

    pub fn only_session(&self) -> String {
        let out = self.run(&["sessions", "--json"]);
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let list = v.as_array().unwrap();
        assert_eq!(list.len(), 1, "{v}");
        list[0]["id"].as_str().unwrap().to_string()
    }

    pub fn events(&self, session: &str) -> Vec<Value> {
        let out = self.run(&["events", "--session", session]);
        assert!(out.status.success(), "{}", text(&out));
        json_lines(&out)
    }

    pub fn show(&self, session: &str) -> Value {
        let out = self.run(&["show", "--session", session, "--json"]);
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

/// Starts `waymark exec --json …` and reads its events until the first tool result; returns
/// the running child, the session id and the rest of its output.
pub fn spawn_until_tool_result(
    env: &Env,
    model: &str,
    prompt: &str,
) -> (
    std::process::Child,
    String,
    std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
) {
    use std::io::BufRead;
    let mut child = env
        .cmd()
        .args(env.exec_args(model, &["--permission", "auto", "--json", prompt]))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut sid = String::new();
    for line in lines.by_ref() {
        let v: Value = serde_json::from_str(&line.unwrap()).unwrap();
        sid = v["session_id"].as_str().unwrap().to_string();
        if v["type"] == "tool.result" {
            break;
        }
    }
    // Let the next model call start.
    std::thread::sleep(std::time::Duration::from_millis(300));
    (child, sid, lines)
}

pub fn text(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

pub fn json_lines(o: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

pub fn types(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_string())
        .collect()
}

pub fn assert_contiguous(events: &[Value]) {
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["seq"].as_u64().unwrap(), i as u64 + 1, "seq gap at {e}");
    }
}

pub fn pending_questionnaire(env: &Env, session: &str) -> String {
    pending_in(&env.show(session))
}

/// The pending questionnaire of a `show --json` snapshot.
pub fn pending_in(show: &Value) -> String {
    show["questionnaires"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["status"] == "pending")
        .map(|q| q["id"].as_str().unwrap().to_string())
        .expect("a pending questionnaire")
}

pub fn read(p: impl AsRef<Path>) -> String {
    std::fs::read_to_string(p).unwrap()
}

/// Makes a FIFO at `path` (a file that blocks whoever opens it).
pub fn mkfifo(path: &std::path::Path) {
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo {}", path.display());
}
