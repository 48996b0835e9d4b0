//! `waymark acp` driven over raw pipes, line by line, for what no SDK client would send.

use super::super::support::{Env, text};
use super::agent_argv;
use serde_json::{Value, json};
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// `waymark acp` on raw pipes.
pub(super) struct Raw {
    pub(super) child: Child,
    pub(super) stdin: Option<ChildStdin>,
    pub(super) stdout: BufReader<ChildStdout>,
    /// The answer to the handshake's `initialize`.
    pub(super) hello: Value,
}

impl Raw {
    pub(super) fn start(env: &Env, model: &str, extra: &[&str]) -> Raw {
        Raw::start_with(env, model, extra, |_| {})
    }

    /// As [`Raw::start`], the command first given what `adjust` sets (its environment, say).
    pub(super) fn start_with(
        env: &Env,
        model: &str,
        extra: &[&str],
        adjust: impl FnOnce(&mut Command),
    ) -> Raw {
        let argv = agent_argv(env, model, extra);
        let mut command = Command::new(&argv[0]);
        command.args(&argv[1..]);
        adjust(&mut command);
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut raw = Raw {
            child,
            stdin,
            stdout,
            hello: Value::Null,
        };
        raw.line(
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#,
        );
        // A client waits for the handshake's answer before it sends anything else.
        raw.hello = raw.reply(0);
        assert_eq!(raw.hello["result"]["protocolVersion"], 1);
        raw
    }

    pub(super) fn line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    pub(super) fn request(&mut self, id: u64, method: &str, params: Value) {
        self.line(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        );
    }

    /// The next message the agent sends; `None` once its stdout ends.
    pub(super) fn next(&mut self) -> Option<Value> {
        let mut l = String::new();
        if self.stdout.read_line(&mut l).unwrap() == 0 {
            return None;
        }
        Some(serde_json::from_str(&l).unwrap_or_else(|e| panic!("not JSON on stdout ({e}): {l}")))
    }

    /// Reads up to the answer to request `id`.
    pub(super) fn reply(&mut self, id: u64) -> Value {
        loop {
            let m = self
                .next()
                .unwrap_or_else(|| panic!("stdout ended before the reply to {id}"));
            if m["id"] == id && m.get("method").is_none() {
                return m;
            }
        }
    }

    /// Reads up to the first message `want` accepts.
    pub(super) fn until(&mut self, want: impl Fn(&Value) -> bool) -> Value {
        loop {
            let m = self.next().expect("stdout ended");
            if want(&m) {
                return m;
            }
        }
    }

    /// Closes stdin and waits for the agent to exit: its exit code.
    pub(super) fn finish(mut self) -> Option<i32> {
        drop(self.stdin.take());
        let mut rest = Vec::new();
        self.stdout.read_to_end(&mut rest).unwrap();
        let out = self.child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", text(&out));
        out.status.code()
    }
}
