//! A runtime against the scripted model in a temp folder, and helpers to drive it.

use futures_util::future::BoxFuture;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use waymark_config::Config;
use waymark_protocol::{
    Event, EventKind, MessageSource, Op, PermissionMode, Position, RouteKind, ToolStatus,
    TurnEndReason,
};
use waymark_runtime::provider::{
    ModelProvider, ModelRequest, ModelResponse, ProviderError, Script, ScriptedProvider, StreamSink,
};
use waymark_runtime::{Runtime, RuntimeOptions, SessionHandle, SessionSpec};

/// The sandbox helper binary cargo builds beside the test binaries of `waymark-runtime` (in
/// `target/<profile>/`, the test being in `target/<profile>/deps/`); None where it was not
/// built, and then plan mode asks about every shell command. The runtime's suite checks it
/// is found, so a harness that lost it fails there instead of testing less.
pub fn sandbox_helper() -> Option<std::path::PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let profile = exe.parent()?.parent()?;
    let helper = profile.join("waymark-sandbox");
    helper.is_file().then_some(helper)
}

pub struct Harness {
    pub dir: tempfile::TempDir,
    pub ws: PathBuf,
    pub runtime: Runtime,
}

impl Harness {
    pub fn new(config: Config) -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let ws = ws.canonicalize().unwrap();
        let mut opts = RuntimeOptions::new(dir.path().join("data"), config);
        opts.sandbox_helper = sandbox_helper().map(|p| vec![p.into_os_string()]);
        opts.cwd = dir.path().to_path_buf();
        let runtime = Runtime::open(opts).unwrap();
        Harness { dir, ws, runtime }
    }

    /// The same data dir and workspace with other runtime options (a restart).
    pub fn reopen(&self, change: impl FnOnce(&mut RuntimeOptions)) -> Runtime {
        let mut opts = self.runtime.options().clone();
        change(&mut opts);
        Runtime::open(opts).unwrap()
    }

    /// A harness whose model records every request (the script plays as usual).
    pub fn recording(config: Config, script: Value) -> (Harness, Arc<Recording>) {
        let h = Harness::new(config);
        let rec = Recording::new(script, &h.ws);
        let mut opts = h.runtime.options().clone();
        opts.provider_override = Some(rec.clone());
        let runtime = Runtime::open(opts).unwrap();
        (Harness { runtime, ..h }, rec)
    }

    /// A session on the recording model (see [`Harness::recording`]).
    pub fn recorded_session(&self, mode: PermissionMode) -> SessionHandle {
        self.runtime
            .create_session(SessionSpec {
                workspace: Some(self.ws.clone()),
                model: Some("scripted:recording".into()),
                permission_mode: Some(mode),
                hold: false,
            })
            .unwrap()
    }

    /// The canonical folder of a session.
    pub fn session_dir(&self, id: &str) -> PathBuf {
        self.dir
            .path()
            .join("data/sessions")
            .join(id)
            .canonicalize()
            .unwrap()
    }

    /// Writes a script file and returns its model spec.
    pub fn script(&self, script: Value) -> String {
        let p = self
            .dir
            .path()
            .join(format!("script-{}.json", fastrand::u32(..)));
        std::fs::write(&p, serde_json::to_vec(&script).unwrap()).unwrap();
        format!("scripted:{}", p.display())
    }

    pub fn session(&self, script: Value, mode: PermissionMode) -> SessionHandle {
        self.create(script, mode, false)
    }

    /// A session that does not start queued work until `Op::Resume`.
    pub fn held_session(&self, script: Value, mode: PermissionMode) -> SessionHandle {
        self.create(script, mode, true)
    }

    fn create(&self, script: Value, mode: PermissionMode, hold: bool) -> SessionHandle {
        let model = self.script(script);
        self.runtime
            .create_session(SessionSpec {
                workspace: Some(self.ws.clone()),
                model: Some(model),
                permission_mode: Some(mode),
                hold,
            })
            .unwrap()
    }
}

/// A new session of `rt` on `workspace`, playing `script` in `mode`.
pub fn session_on(
    h: &Harness,
    rt: &Runtime,
    workspace: &std::path::Path,
    script: Value,
    mode: PermissionMode,
) -> SessionHandle {
    rt.create_session(SessionSpec {
        workspace: Some(workspace.to_path_buf()),
        model: Some(h.script(script)),
        permission_mode: Some(mode),
        hold: false,
    })
    .unwrap()
}

/// Another session of `rt` on the harness's workspace that starts nothing (held).
pub fn idle_session(h: &Harness, rt: &Runtime) -> SessionHandle {
    rt.create_session(SessionSpec {
        workspace: Some(h.ws.clone()),
        model: Some(h.script(serde_json::json!({"responses": [{"text": "idle"}]}))),
        permission_mode: Some(PermissionMode::Auto),
        hold: true,
    })
    .unwrap()
}

/// What the goal's reviewer got back from its tool calls, from the session's log.
pub fn verifier_results(rt: &Runtime, session: &str) -> Vec<String> {
    rt.events(session, 0, 10_000)
        .unwrap()
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::ToolResult {
                content,
                actor: waymark_protocol::CallActor::Verifier,
                ..
            } => Some(content),
            _ => None,
        })
        .collect()
}

pub fn user(text: &str) -> Op {
    Op::Submit {
        text: text.into(),
        source: MessageSource::User,
        position: Position::Tail,
        idempotency_key: None,
        intent: None,
        images: Vec::new(),
    }
}

/// Sends `op` and collects events until the session is idle or waiting.
pub async fn run(h: &SessionHandle, op: Op) -> Vec<Event> {
    let mut rx = h.subscribe();
    h.submit(op).await.unwrap();
    h.submit(Op::Resume).await.unwrap();
    collect(&mut rx).await
}

pub async fn collect(rx: &mut tokio::sync::broadcast::Receiver<Event>) -> Vec<Event> {
    let mut events = Vec::new();
    let deadline = tokio::time::sleep(Duration::from_secs(30));
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            ev = rx.recv() => {
                let ev = ev.unwrap();
                let done = matches!(ev.kind, EventKind::SessionIdle {} | EventKind::SessionWaiting { .. });
                events.push(ev);
                if done { return events; }
            }
            _ = &mut deadline => panic!("session did not settle; events so far: {:#?}", events.iter().map(|e| e.kind.type_name()).collect::<Vec<_>>()),
        }
    }
}

/// A questionnaire as the wire shows it: its kind, its payload as JSON, its status name.
pub struct Asked {
    pub kind: waymark_protocol::QuestionnaireKind,
    pub payload: Value,
    pub status: String,
}

/// A questionnaire of the session as its snapshot reports it.
pub fn questionnaire(h: &Harness, s: &SessionHandle, id: &str) -> Asked {
    let info = h
        .runtime
        .snapshot(s.id())
        .unwrap()
        .questionnaires
        .into_iter()
        .find(|x| x.id == id)
        .unwrap_or_else(|| panic!("no questionnaire {id}"));
    let question = serde_json::to_value(&info.question).unwrap();
    Asked {
        kind: info.question.kind(),
        payload: question["payload"].clone(),
        status: info.status.as_str().to_string(),
    }
}

/// The questionnaire the session ended up waiting on.
/// The first permission question the events open, with its id.
pub fn permission_asked(
    events: &[Event],
) -> Option<(String, waymark_protocol::PermissionQuestion)> {
    events.iter().find_map(|e| match &e.kind {
        EventKind::QuestionnaireOpened { id, question } => match question.as_ref() {
            waymark_protocol::Question::Permission(p) => Some((id.clone(), p.clone())),
            _ => None,
        },
        _ => None,
    })
}

pub fn waiting_on(events: &[Event]) -> String {
    match events.last().map(|e| &e.kind) {
        Some(EventKind::SessionWaiting {
            questionnaire_id, ..
        }) => questionnaire_id.clone(),
        other => panic!("the session is not waiting: {other:?}"),
    }
}

pub fn finished(events: &[Event]) -> Vec<(TurnEndReason, Option<String>)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TurnFinished { reason, error, .. } => {
                Some((*reason, error.as_ref().map(|e| e.code.clone())))
            }
            _ => None,
        })
        .collect()
}

pub fn results(events: &[Event]) -> Vec<(String, ToolStatus, String)> {
    tool_results(events, |name, status, content, _| {
        (name.to_string(), status, content.to_string())
    })
}

/// Each tool result's name, status and the files it reports changed, in order.
pub fn changes(events: &[Event]) -> Vec<(String, ToolStatus, Vec<waymark_protocol::FileChange>)> {
    tool_results(events, |name, status, _, changes| {
        (name.to_string(), status, changes.to_vec())
    })
}

/// `f` of every tool result in `events` (name, status, content, changes), in order.
fn tool_results<T>(
    events: &[Event],
    f: impl Fn(&str, ToolStatus, &str, &[waymark_protocol::FileChange]) -> T,
) -> Vec<T> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolResult {
                name,
                status,
                content,
                changes,
                ..
            } => Some(f(name, *status, content, changes)),
            _ => None,
        })
        .collect()
}

pub fn types(events: &[Event]) -> Vec<&'static str> {
    events
        .iter()
        .filter(|e| !e.kind.is_transient())
        .map(|e| e.kind.type_name())
        .collect()
}

/// Wraps the scripted model and records every request it is sent.
pub struct Recording {
    pub inner: ScriptedProvider,
    pub requests: Mutex<Vec<ModelRequest>>,
    pub route: Mutex<RouteKind>,
}

impl Recording {
    pub fn new(script: Value, ws: &std::path::Path) -> Arc<Recording> {
        let script: Script = serde_json::from_value(script).unwrap();
        Arc::new(Recording {
            inner: ScriptedProvider::new("scripted:recording", script, ws, None),
            requests: Mutex::new(Vec::new()),
            route: Mutex::new(RouteKind::Managed),
        })
    }
}

impl ModelProvider for Recording {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn route(&self) -> RouteKind {
        *self.route.lock().unwrap()
    }
    fn context_tokens(&self) -> u64 {
        self.inner.context_tokens()
    }
    fn takes_images(&self) -> bool {
        self.inner.takes_images()
    }
    fn call<'a>(
        &'a self,
        request: &'a ModelRequest,
        sink: StreamSink<'a>,
    ) -> BoxFuture<'a, Result<ModelResponse, ProviderError>> {
        self.requests.lock().unwrap().push(request.clone());
        self.inner.call(request, sink)
    }
}

/// Makes a FIFO at `path` (a file that blocks whoever opens it).
pub fn mkfifo(path: &std::path::Path) {
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo {}", path.display());
}
