//! A third extension, built only against the public APIs of the crates (no test feature): a
//! notebook that adds a tool (`take_note`), a guard (no note may hold a password), a permission
//! rule (taking a note writes only the notebook's own table, so it never asks), its own
//! table and its own settings section (`extensions.notebook`). The test runs it in a real session of the runtime against the scripted model.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed test

use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use std::sync::Arc;
use waymark_config::{Config, ConfigError};
use waymark_extension::guard::{GuardCall, GuardDecision, ToolGuard};
use waymark_extension::rules::PermissionRule;
use waymark_extension::{Extension, GuardStage, SessionApi, SessionTool, tool_error};
use waymark_protocol::{Event, EventKind, PermissionMode, ToolStatus};
use waymark_runtime::{Runtime, RuntimeOptions, SessionSpec};
use waymark_test_support::harness::{run, user};
use waymark_tools::{Tool, ToolContext, ToolError, ToolOutput};

struct Notebook {
    /// Whether the permission rule is part of it (without it, a note asks like any write).
    with_rule: bool,
}

struct TakeNote;

impl Tool for TakeNote {
    fn name(&self) -> &'static str {
        "take_note"
    }
    fn description(&self) -> &'static str {
        "Keep a short note in the session's notebook."
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
    }
    fn effects(&self) -> waymark_tools::Effects {
        waymark_tools::Effects::WRITES
    }
}

impl SessionTool for TakeNote {
    fn handle_in<'a>(
        &'a self,
        api: &'a SessionApi,
        _ctx: &'a ToolContext,
        args: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let text = args["text"]
                .as_str()
                .ok_or_else(|| ToolError::Model("`text` must be a string".into()))?
                .to_string();
            // The notebook's own settings, as in force now.
            let max = api
                .config()
                .extensions
                .get("notebook")
                .map_or(Ok(DEFAULT_MAX_CHARS), notebook_settings)
                .unwrap_or(DEFAULT_MAX_CHARS);
            if text.chars().count() as u64 > max {
                return Err(ToolError::Model(format!(
                    "a note is at most {max} characters"
                )));
            }
            let sid = api.id().to_string();
            api.write(|tx| {
                tx.conn().execute(
                    "INSERT INTO notebook (session_id, text) VALUES (?1, ?2)",
                    [sid.as_str(), text.as_str()],
                )?;
                Ok(())
            })
            .map_err(tool_error)?;
            Ok(ToolOutput::text("noted"))
        })
    }
}

/// The longest note unless the settings say otherwise.
const DEFAULT_MAX_CHARS: u64 = 10_000;

/// The notebook's settings section, `{"max_chars": 1 to 10000}`: the longest note.
fn notebook_settings(section: &Value) -> Result<u64, ConfigError> {
    let Some(map) = section.as_object() else {
        return Err(ConfigError::new(
            "",
            "the notebook's settings are an object such as {\"max_chars\": 200}",
        ));
    };
    if let Some(k) = map.keys().find(|k| *k != "max_chars") {
        return Err(ConfigError::new(k.clone(), "not a setting of the notebook"));
    }
    match map.get("max_chars").map(Value::as_u64) {
        None => Ok(DEFAULT_MAX_CHARS),
        Some(Some(n @ 1..=DEFAULT_MAX_CHARS)) => Ok(n),
        Some(_) => Err(ConfigError::new(
            "max_chars",
            "a whole number of characters from 1 to 10000",
        )),
    }
}

/// No note may hold a password.
struct NoPasswords;

impl ToolGuard for NoPasswords {
    fn name(&self) -> &'static str {
        "no-passwords"
    }
    fn before_tool_call(&self, call: &GuardCall<'_>) -> GuardDecision {
        let text = call.arguments["text"].as_str().unwrap_or("");
        if call.tool.name() == "take_note" && text.to_lowercase().contains("password") {
            return GuardDecision::Deny("notes never hold passwords".into());
        }
        GuardDecision::Allow
    }
}

/// Taking a note writes only the notebook's table: no question, in every mode that writes.
struct NotesNeverAsk;

impl PermissionRule for NotesNeverAsk {
    fn name(&self) -> &'static str {
        "notebook"
    }
    fn decide(&self, call: &GuardCall<'_>) -> Option<GuardDecision> {
        (call.tool.name() == "take_note"
            && call.actor == waymark_protocol::CallActor::Main
            && call.session.permission_mode != PermissionMode::ReadOnly)
            .then_some(GuardDecision::Allow)
    }
}

impl Extension for Notebook {
    fn name(&self) -> &'static str {
        "notebook"
    }
    fn migrations(&self) -> &'static [&'static str] {
        &[
            "CREATE TABLE notebook (session_id TEXT NOT NULL REFERENCES sessions(id), text TEXT NOT NULL);",
        ]
    }
    fn session_tools(&self) -> Vec<Arc<dyn SessionTool>> {
        vec![Arc::new(TakeNote)]
    }
    fn guards(&self) -> Vec<(GuardStage, Arc<dyn ToolGuard>)> {
        vec![(GuardStage::BeforePermission, Arc::new(NoPasswords))]
    }
    fn permission_rules(&self) -> Vec<Arc<dyn PermissionRule>> {
        if self.with_rule {
            vec![Arc::new(NotesNeverAsk)]
        } else {
            Vec::new()
        }
    }
    fn check_settings(&self, section: &Value) -> Option<Result<(), ConfigError>> {
        Some(notebook_settings(section).map(|_| ()))
    }
}

fn note(text: &str) -> Value {
    json!({"tool_calls": [{"name": "take_note", "arguments": {"text": text}}]})
}

/// A runtime with the notebook, and a session in `ask` mode whose model takes two notes.
async fn notebook_session(with_rule: bool) -> (tempfile::TempDir, Runtime, Vec<Event>, String) {
    notebook_session_with(with_rule, Config::default()).await
}

/// [`notebook_session`] with these settings.
async fn notebook_session_with(
    with_rule: bool,
    config: Config,
) -> (tempfile::TempDir, Runtime, Vec<Event>, String) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let script = dir.path().join("script.json");
    let responses = json!({"responses": [
        note("the build needs `make gen` first"),
        note("the password is hunter2"),
        {"text": "done"}
    ]});
    std::fs::write(&script, responses.to_string()).unwrap();
    let mut opts = RuntimeOptions::new(dir.path().join("data"), config);
    opts.cwd = dir.path().to_path_buf();
    opts.extensions = vec![Arc::new(Notebook { with_rule })];
    let runtime = Runtime::open(opts).unwrap();
    let s = runtime
        .create_session(SessionSpec {
            workspace: Some(ws),
            model: Some(format!("scripted:{}", script.display())),
            permission_mode: Some(PermissionMode::Ask),
            hold: false,
        })
        .unwrap();
    let events = run(&s, user("look around")).await;
    let id = s.id().to_string();
    s.shutdown().await.unwrap();
    (dir, runtime, events, id)
}

fn results(events: &[Event]) -> Vec<(ToolStatus, String)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolResult {
                status, content, ..
            } => Some((*status, content.clone())),
            _ => None,
        })
        .collect()
}

fn notes(runtime: &Runtime, id: &str) -> Vec<String> {
    runtime
        .store()
        .read(|c| {
            let mut st = c.prepare("SELECT text FROM notebook WHERE session_id = ?1")?;
            let rows = st.query_map([id], |r| r.get(0))?;
            Ok::<_, waymark_store::StoreError>(rows.collect::<Result<Vec<String>, _>>()?)
        })
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_third_extension_adds_a_tool_a_guard_a_rule_and_a_table() {
    let (_dir, runtime, events, id) = notebook_session(true).await;
    // The rule lets the note go without a question in `ask`; the guard refuses the second.
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.kind, EventKind::QuestionnaireOpened { .. })),
        "a note asked"
    );
    assert_eq!(
        results(&events),
        [
            (ToolStatus::Ok, "noted".to_string()),
            (ToolStatus::Denied, "notes never hold passwords".to_string())
        ]
    );
    assert_eq!(notes(&runtime, &id), ["the build needs `make gen` first"]);
}

/// Without its rule, the same tool is a write like any other: `ask` asks before the first
/// note, and nothing is written while the question waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_its_rule_a_note_asks_like_any_write() {
    let (_dir, runtime, events, id) = notebook_session(false).await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e.kind, EventKind::QuestionnaireOpened { .. })),
        "no question without the rule"
    );
    assert!(notes(&runtime, &id).is_empty());
}

/// Settings with `section` as the notebook's.
fn with_notebook(section: Value) -> Config {
    let mut c = Config::default();
    c.extensions.insert("notebook".into(), section);
    c
}

/// Why a runtime with the notebook does not open with `config`.
fn refused_at_start(config: Config) -> String {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = RuntimeOptions::new(dir.path().join("data"), config);
    opts.extensions = vec![Arc::new(Notebook { with_rule: true })];
    match Runtime::open(opts) {
        Ok(_) => panic!("the runtime opened"),
        Err(e) => e.to_string(),
    }
}

/// The notebook owns `extensions.notebook`: the runtime hands the section to it, a bad one is
/// refused with its key named (at start and when new settings come), a section no extension
/// owns is refused, and the extension works by the value in force.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_extension_checks_its_own_settings_section_and_works_by_it() {
    let e = refused_at_start(with_notebook(json!({"max_chars": 0})));
    assert!(e.contains("`extensions.notebook.max_chars`"), "{e}");
    assert!(e.contains("from 1 to 10000"), "{e}");
    let e = refused_at_start(with_notebook(json!({"max_chars": 5, "colour": "red"})));
    assert!(e.contains("`extensions.notebook.colour`"), "{e}");
    let e = refused_at_start(with_notebook(json!("short")));
    assert!(e.contains("`extensions.notebook`"), "{e}");
    let mut misspelt = Config::default();
    misspelt.extensions.insert("notbook".into(), json!({}));
    let e = refused_at_start(misspelt);
    assert!(e.contains("`extensions.notbook`"), "{e}");
    assert!(
        e.contains("`notebook`"),
        "the sections that exist are named: {e}"
    );

    // In force: the first note (32 characters) is longer than 20 and refused by the tool.
    let (_dir, runtime, events, id) =
        notebook_session_with(true, with_notebook(json!({"max_chars": 20}))).await;
    let r = results(&events);
    assert_eq!(r[0].1, "a note is at most 20 characters", "{r:?}");
    assert!(notes(&runtime, &id).is_empty());
    // New settings with a bad section are refused, naming it, and change nothing.
    let e = runtime
        .set_config(with_notebook(json!({"max_chars": "twenty"})))
        .unwrap_err()
        .to_string();
    assert!(e.contains("`extensions.notebook.max_chars`"), "{e}");
    assert_eq!(
        runtime.config().extensions["notebook"],
        json!({"max_chars": 20})
    );
    runtime
        .set_config(with_notebook(json!({"max_chars": 100})))
        .unwrap();
}
