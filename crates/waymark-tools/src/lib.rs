//! Tools the model can call. One trait ([`Tool`]), one registry ([`ToolRegistry`]). Guards
//! run before any tool (see [`crate::guard`]); tools themselves confine writes to the
//! workspace and the session's `artifacts/` folder ([`fs_policy`]).

pub mod attach;
mod bash;
pub mod fs_policy;
pub mod image;
pub mod mention;
mod patch;
mod read;
mod search;
pub mod text;
pub mod walk;
mod write;

pub use bash::Bash;
pub use patch::{ApplyPatch, copy_refused, patch_copies, patch_paths};
pub use read::{ListDir, ReadFile};
pub use search::{Glob, Grep};
pub use write::{Append, Edit, MultiEdit, Write};
pub use write::{before_after, requested_text};

use futures_util::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// What a tool may touch and how long it may run.
#[derive(Clone)]
pub struct ToolContext {
    /// Canonical workspace root.
    pub workspace: PathBuf,
    /// Canonical session directory.
    pub session_dir: PathBuf,
    /// Canonical `artifacts/` folder of the session.
    pub artifacts: PathBuf,
    /// Cancelled when the user presses Stop.
    pub cancel: CancellationToken,
    /// Bytes of output kept for the model.
    pub output_limit: usize,
    /// How long shell commands may run.
    pub timeouts: Timeouts,
    /// The turn the call belongs to.
    pub turn_id: i64,
    /// The call's runtime id (empty outside a call), for the progress it reports.
    pub call_id: String,
    /// When set, shell commands run under this read-only sandbox (plan mode).
    pub sandbox: Option<waymark_sandbox::SandboxSpec>,
    /// The environments tool processes start with (secrets removed).
    pub env: Arc<waymark_config::secrets::ToolEnv>,
    /// Private places the file tools refuse to read (unless the user let this call), and
    /// searches skip.
    pub protected: waymark_sandbox::private::Protected,
    /// Where a running command's output goes as it arrives (whole lines, a few times a
    /// second), for the front ends to show live; none outside a session's call.
    pub live: Option<LiveOutput>,
    /// The secrets a tool hides before it cuts its output to size (a cut through a secret
    /// would leave a piece redaction no longer finds); none outside a session's call.
    pub redactor: Option<Arc<waymark_config::secrets::Redactor>>,
}

/// Takes a running command's newest output lines (the result still carries all of it).
pub type LiveOutput = Arc<dyn Fn(&str) + Send + Sync>;

/// How long a shell command may run.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// When the model names no timeout (`turn.bash_timeout_ms`).
    pub default: Duration,
    /// The longest the model may ask for (`turn.max_bash_timeout_ms`).
    pub max: Duration,
    /// Under a goal time budget: the time left plus [`BUDGET_GRACE`].
    pub budget_left: Option<Duration>,
}

/// How long a command may outlive the goal's time budget, to finish what it was doing.
pub const BUDGET_GRACE: Duration = Duration::from_secs(5);

impl Timeouts {
    pub fn from_config(t: &waymark_config::TurnConfig) -> Timeouts {
        Timeouts {
            default: Duration::from_millis(t.bash_timeout_ms),
            max: Duration::from_millis(t.max_bash_timeout_ms.max(t.bash_timeout_ms)),
            budget_left: None,
        }
    }

    /// The timeout of one command: what the model asked for (or the default), capped by
    /// the setting and by the goal's time left; with what capped it, for the result.
    pub fn resolve(&self, asked_ms: Option<u64>) -> (Duration, Option<&'static str>) {
        let mut t = asked_ms.map_or(self.default, Duration::from_millis);
        let mut why = None;
        if t > self.max {
            t = self.max;
            why = Some("capped by the setting turn.max_bash_timeout_ms");
        }
        if let Some(left) = self.budget_left
            && t > left
        {
            t = left;
            why = Some("capped by the time the session's budget has left");
        }
        (t, why)
    }
}

/// A successful tool result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    pub content: String,
    /// Ends the turn after this call (plan mode's Enter/ExitPlanMode use it).
    pub terminate: bool,
    /// Images beside the text (an MCP server's), for models that take them.
    pub images: Vec<waymark_protocol::ToolImage>,
}

impl ToolOutput {
    pub fn text(content: impl Into<String>) -> Self {
        ToolOutput {
            content: content.into(),
            terminate: false,
            images: Vec::new(),
        }
    }
}

/// A failed tool call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// Told to the model as an error result; the turn goes on.
    #[error("{0}")]
    Model(String),
    /// Ends the turn with an error.
    #[error("{0}")]
    Fatal(String),
}

/// What a tool may do besides reading, as the tool declares it. The permission guard and
/// plan mode decide a call from these, never from the tool's name, so a new kind of tool
/// (a web fetch) cannot slip through by looking like a reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Effects {
    /// Changes something: the workspace files its arguments name or, for an external tool,
    /// anything at all.
    pub writes: bool,
    /// Runs programs (a shell). What they do is confined by the sandbox, not judged by path.
    pub processes: bool,
    /// Sends requests over the network itself, outside any sandbox (a web fetch): refused in
    /// plan mode and in `read-only` unless a rule allows it, asked about in `ask` and
    /// `auto-edit`, run in `auto`.
    pub network: bool,
    /// Acts through another program the runtime cannot see into (an MCP server): its
    /// arguments name nothing the runtime can check (a `path` there is the server's), so one
    /// that writes is asked about in every mode but `auto`, as a whole.
    pub external: bool,
}

impl Effects {
    /// Reads only.
    pub const READS: Effects = Effects {
        writes: false,
        processes: false,
        network: false,
        external: false,
    };
    /// Writes the workspace files its arguments name.
    pub const WRITES: Effects = Effects {
        writes: true,
        ..Effects::READS
    };
    /// Runs shell commands (which may write).
    pub const SHELL: Effects = Effects {
        writes: true,
        processes: true,
        ..Effects::READS
    };
}

/// A tool as the model, the permission guard and plan mode see it: its name, description,
/// schema and effects. How it runs is another trait: [`FreeTool`] for one that needs nothing
/// but its call, and the extension API's `SessionTool` for one that works on the session.
/// A registry holds free tools only, so a session tool cannot be registered as a plain one:
/// it would not compile.
pub trait Tool: Send + Sync {
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    /// JSON schema of the arguments.
    fn schema(&self) -> Value;
    /// What the tool may do besides reading ([`Effects`]). The permission guard and plan
    /// mode decide from this, so a tool must declare every effect it has.
    fn effects(&self) -> Effects;
    /// The workspace paths a call writes, as the model named them (the permission guard
    /// resolves and judges each): the `path` argument unless the tool says otherwise (a
    /// patch names several).
    fn written_paths(&self, arguments: &Value) -> Vec<String> {
        arguments
            .get("path")
            .and_then(Value::as_str)
            .map(|p| vec![p.to_string()])
            .unwrap_or_default()
    }
    /// What a user's "allow for this session" covers for a call with these arguments, when
    /// it is narrower than the whole tool: the host a web fetch reaches. `None`: the whole
    /// tool.
    fn grant_scope(&self, _arguments: &Value) -> Option<String> {
        None
    }
    /// Whether the tool is offered to the model in this session's current state (plan mode
    /// offers its tools only in one mode).
    fn offered(
        &self,
        _mode: waymark_protocol::InteractionMode,
        _config: &waymark_config::Config,
    ) -> bool {
        true
    }
}

/// A tool that runs with nothing but its call: the workspace, the sandbox and the arguments
/// ([`ToolContext`]).
pub trait FreeTool: Tool {
    fn handle<'a>(
        &'a self,
        ctx: &'a ToolContext,
        args: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;
}

/// The tools of a session, in the order they are offered.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: Vec<Arc<dyn FreeTool>>,
}

impl ToolRegistry {
    /// The standard set: read, list, search, write, edit, patch, shell.
    pub fn standard() -> Self {
        let mut r = ToolRegistry::default();
        r.register(Arc::new(ReadFile));
        r.register(Arc::new(ListDir));
        r.register(Arc::new(Glob));
        r.register(Arc::new(Grep));
        r.register(Arc::new(Write));
        r.register(Arc::new(Edit));
        r.register(Arc::new(MultiEdit));
        r.register(Arc::new(Append));
        r.register(Arc::new(ApplyPatch));
        r.register(Arc::new(Bash));
        r
    }

    /// Adds a tool, replacing one of the same name.
    pub fn register(&mut self, tool: Arc<dyn FreeTool>) {
        self.tools.retain(|t| t.name() != tool.name());
        self.tools.push(tool);
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn FreeTool>> {
        self.tools.iter().find(|t| t.name() == name)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn FreeTool>> {
        self.tools.iter()
    }
}

/// Decodes a tool's arguments, with an error the model can act on.
pub fn parse_args<T: DeserializeOwned>(tool: &str, args: Value) -> Result<T, ToolError> {
    if !args.is_object() {
        return Err(ToolError::Model(format!(
            "arguments of `{tool}` must be a JSON object, got: {}",
            waymark_protocol::display::clip(&args.to_string())
        )));
    }
    serde_json::from_value(args)
        .map_err(|e| ToolError::Model(format!("invalid arguments for `{tool}`: {e}")))
}

/// Keeps the first `limit` bytes of `text` and says how much was cut.
pub fn truncate_head(text: &str, limit: usize, hint: &str) -> String {
    if text.len() <= limit {
        return text.to_string();
    }
    let cut = floor_boundary(text, limit);
    format!(
        "{}\n[output truncated: {} bytes in all, the first {} shown. {hint}]",
        &text[..cut],
        text.len(),
        cut
    )
}

/// Keeps the start and the end of `text` (errors tend to be at the end of command output).
pub fn truncate_middle(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_string();
    }
    let head = floor_boundary(text, limit / 2);
    let mut tail_start = text.len() - (limit - head);
    while !text.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    format!(
        "{}\n[… {} bytes of output omitted; {} bytes in all …]\n{}",
        &text[..head],
        tail_start - head,
        text.len(),
        &text[tail_start..]
    )
}

fn floor_boundary(text: &str, mut i: usize) -> usize {
    i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Runs blocking file-system work off the async threads.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ToolError::Fatal(format!("tool task failed: {e}")))?
}

#[cfg(test)]
pub(crate) mod test_support {
    use super::*;

    /// A workspace and session dir in a temp folder.
    pub struct Fixture {
        pub dir: tempfile::TempDir,
        pub ctx: ToolContext,
    }

    impl Fixture {
        pub fn new() -> Self {
            let dir = tempfile::tempdir().unwrap();
            let ws = dir.path().join("ws");
            let sd = dir.path().join("session");
            std::fs::create_dir_all(&ws).unwrap();
            std::fs::create_dir_all(sd.join("artifacts")).unwrap();
            let ctx = ToolContext {
                live: None,
                redactor: None,
                workspace: ws.canonicalize().unwrap(),
                session_dir: sd.canonicalize().unwrap(),
                artifacts: sd.join("artifacts").canonicalize().unwrap(),
                cancel: CancellationToken::new(),
                output_limit: 30_000,
                timeouts: Timeouts {
                    default: Duration::from_secs(20),
                    max: Duration::from_secs(20),
                    budget_left: None,
                },
                turn_id: 0,
                call_id: String::new(),
                sandbox: None,
                protected: Default::default(),
                env: Arc::new(waymark_config::secrets::ToolEnv::build(
                    &std::env::vars_os().collect::<Vec<_>>(),
                    &Default::default(),
                )),
            };
            Fixture { dir, ctx }
        }

        pub fn ws(&self) -> &std::path::Path {
            &self.ctx.workspace
        }

        pub async fn run(&self, tool: &dyn FreeTool, args: Value) -> Result<ToolOutput, ToolError> {
            tool.handle(&self.ctx, args).await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_keeps_char_boundaries_and_notes_the_cut() {
        let t = "ä".repeat(100);
        let h = truncate_head(&t, 51, "narrow it");
        assert!(h.contains("output truncated") && h.contains("narrow it"));
        let m = truncate_middle(&format!("{}END", "x".repeat(1000)), 100);
        assert!(m.ends_with("END") && m.contains("omitted"));
        assert_eq!(truncate_head("short", 100, ""), "short");
    }

    /// Every file-changing tool, aimed at every kind of escape, changes nothing outside.
    #[tokio::test]
    async fn every_mutating_tool_refuses_escapes() {
        use std::os::unix::fs::symlink;
        let f = test_support::Fixture::new();
        let outside = f.dir.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret.txt"), "secret\n").unwrap();
        std::fs::write(f.ws().join("real.txt"), "real\n").unwrap();
        symlink(&outside, f.ws().join("out-dir")).unwrap();
        // A workspace file replaced by a symlink to a file outside.
        symlink(outside.join("secret.txt"), f.ws().join("swapped.txt")).unwrap();
        symlink(f.ws().join("loop2"), f.ws().join("loop1")).unwrap();
        symlink(f.ws().join("loop1"), f.ws().join("loop2")).unwrap();
        let secret_abs = outside.join("secret.txt").display().to_string();
        let targets = [
            "../outside/secret.txt".to_string(),
            "sub/../../outside/secret.txt".to_string(),
            secret_abs.clone(),
            "/tmp/waymark-escape-test.txt".to_string(),
            "out-dir/secret.txt".to_string(),
            "out-dir/new.txt".to_string(),
            "swapped.txt".to_string(),
            "loop1".to_string(),
            "loop1/x.txt".to_string(),
        ];
        let registry = ToolRegistry::standard();
        for path in &targets {
            let calls = vec![
                (
                    "write",
                    serde_json::json!({"path": path, "content": "pwned"}),
                ),
                (
                    "edit",
                    serde_json::json!({"path": path, "old_string": "secret", "new_string": "pwned"}),
                ),
                (
                    "multiedit",
                    serde_json::json!({"path": path, "edits": [{"old_string": "secret", "new_string": "pwned"}]}),
                ),
                (
                    "append",
                    serde_json::json!({"path": path, "content": "pwned"}),
                ),
                (
                    "apply_patch",
                    serde_json::json!({"patch": format!("--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-secret\n+pwned\n")}),
                ),
                (
                    "apply_patch",
                    serde_json::json!({"patch": format!("--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+pwned\n")}),
                ),
            ];
            for (name, args) in calls {
                let tool = registry.get(name).unwrap();
                let r = f.run(tool.as_ref(), args.clone()).await;
                assert!(r.is_err(), "{name} {args} must be refused, got {r:?}");
            }
        }
        assert_eq!(
            std::fs::read_to_string(outside.join("secret.txt")).unwrap(),
            "secret\n"
        );
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);
        assert!(!std::path::Path::new("/tmp/waymark-escape-test.txt").exists());
        // The symlink planted in the workspace is still a symlink to the untouched file.
        assert!(
            std::fs::symlink_metadata(f.ws().join("swapped.txt"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(
            std::fs::read_to_string(f.ws().join("real.txt")).unwrap(),
            "real\n"
        );
    }

    #[test]
    fn registry_has_the_named_tools() {
        let r = ToolRegistry::standard();
        let names: Vec<_> = r.iter().map(|t| t.name()).collect();
        assert_eq!(
            names,
            [
                "read_file",
                "list_dir",
                "glob",
                "grep",
                "write",
                "edit",
                "multiedit",
                "append",
                "apply_patch",
                "bash"
            ]
        );
        assert!(r.get("bash").unwrap().effects().processes);
        assert!(r.get("edit").unwrap().effects().writes);
        assert!(!r.get("grep").unwrap().effects().writes);
    }
}
