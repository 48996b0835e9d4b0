//! Firing an event: the hooks set on it whose matcher takes the tool (by Claude Code's name
//! or Waymark's) run at once, each with the event's JSON on stdin; each run is logged as a
//! `hook.ran` event; what they say together is the strictest of it ([`combine`]).

use crate::outcome::{Said, combine, read};
use crate::run::run;
use crate::sources::{ClaudeFile, Hook, gather};
use futures_util::future::join_all;
use serde_json::{Map, Value, json};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use waymark_config::hooks::{MatcherKind, matcher_kind};
use waymark_extension::SessionApi;
use waymark_protocol::display::escape_line;
use waymark_protocol::{EventKind, InteractionMode, PermissionMode};

/// One event to fire.
pub struct Firing<'a> {
    pub event: &'static str,
    /// The turn it belongs to, for the `hook.ran` event.
    pub turn_id: Option<i64>,
    /// The tool a tool event is about (Waymark's name).
    pub tool: Option<&'a str>,
    /// The event's own fields, besides the common ones.
    pub fields: Map<String, Value>,
    /// Whether a hook that times out, crashes or cannot start blocks (before a tool call).
    pub fail_closed: bool,
    /// Whether a hook's plain stdout is context for the model.
    pub plain_stdout_is_context: bool,
}

/// Whether `matcher` takes the tool called `tool` (Waymark's name).
pub fn matches(matcher: &str, tool: Option<&str>) -> bool {
    let Some(tool) = tool else {
        return true;
    };
    let names = crate::names::matched_names(tool);
    match matcher_kind(matcher) {
        MatcherKind::All => true,
        MatcherKind::Exact(exact) => exact.iter().any(|n| names.contains(&n.as_str())),
        MatcherKind::Regex(r) => regex::Regex::new(&r)
            .map(|re| names.iter().any(|n| re.is_match(n)))
            // A matcher that does not compile (checked when the settings load) takes
            // every tool rather than none: a guard that silently stopped matching would
            // let everything through.
            .unwrap_or(true),
    }
}

/// `~/.claude/settings.json` as this session read it when it opened (read now, once, if
/// the session was opened without the extension's `after_open`).
#[derive(Default)]
pub struct Snapshot(std::sync::Mutex<Option<std::sync::Arc<ClaudeFile>>>);

pub fn claude_file(api: &SessionApi) -> std::sync::Arc<ClaudeFile> {
    let slot = api.state::<Snapshot>();
    let mut held = slot.0.lock().unwrap_or_else(|p| p.into_inner());
    held.get_or_insert_with(|| std::sync::Arc::new(ClaudeFile::read(&api.tool_env().plain)))
        .clone()
}

/// The hooks in force in the session now: the project's only while their files hold what
/// was approved (checked each time; see `project::current`).
pub fn gathered(api: &SessionApi) -> crate::sources::Gathered {
    with_project(api, crate::project::current(api))
}

/// The hooks in force as last approved, the files not read again (for `/hooks`, which runs
/// inside a transaction and must not ask anything).
pub fn gathered_as_approved(api: &SessionApi) -> crate::sources::Gathered {
    with_project(api, api.state::<crate::project::Approved>().get())
}

fn with_project(
    api: &SessionApi,
    project: Option<std::sync::Arc<crate::project::ProjectHooks>>,
) -> crate::sources::Gathered {
    let project = project
        .map(|p| crate::sources::Gathered {
            hooks: p.hooks.clone(),
            skipped: p.skipped.clone(),
        })
        .unwrap_or_default();
    gather(&api.config(), &claude_file(api), &project)
}

/// The hooks set on `event` for `tool`.
pub fn hooks_for(api: &SessionApi, event: &str, tool: Option<&str>) -> Vec<Hook> {
    gathered(api)
        .hooks
        .into_iter()
        .filter(|h| h.event == event && matches(&h.command.matcher, tool))
        .collect()
}

/// Fires `f`, and says what its hooks said; `Proceed` with no context when none is set.
pub async fn fire(api: &SessionApi, f: Firing<'_>, cancel: &CancellationToken) -> Said {
    let hooks = hooks_for(api, f.event, f.tool);
    if hooks.is_empty() {
        return Said::Proceed { context: None };
    }
    let input = input(api, &f);
    let env = api.tool_env();
    let runs = hooks.iter().map(|h| {
        let input = &input;
        let env = &env.plain;
        async move {
            let r = run(
                &h.command.command,
                input,
                api.workspace(),
                env,
                Duration::from_secs(h.command.timeout_s),
                cancel,
            )
            .await;
            (h, r)
        }
    });
    let mut said = Vec::new();
    for (hook, r) in join_all(runs).await {
        let mut s = read(&r, f.plain_stdout_is_context);
        if let Said::Failed(why) = &s
            && !f.fail_closed
        {
            s = Said::Error(why.clone());
        }
        let exit_code = match r.ended {
            crate::run::Ended::Exited(c) => Some(c),
            _ => None,
        };
        let event = EventKind::HookRan {
            turn_id: f.turn_id,
            event: f.event.to_string(),
            command: escape_line(&hook.command.command),
            source: hook.source.clone(),
            duration_ms: u64::try_from(r.took.as_millis()).unwrap_or(u64::MAX),
            exit_code,
            outcome: s.outcome(),
        };
        let sid = api.id().to_string();
        if let Err(e) = api.write(|tx| Ok(tx.emit(&sid, event)?)) {
            tracing::warn!("a hook's run could not be logged: {e}");
        }
        said.push(s);
    }
    combine(said)
}

/// The event's JSON: the fields every event has, in Claude Code's names, then its own.
fn input(api: &SessionApi, f: &Firing<'_>) -> Vec<u8> {
    let mut all = Map::new();
    all.insert("session_id".into(), json!(api.id()));
    all.insert(
        "transcript_path".into(),
        json!(api.session_dir().display().to_string()),
    );
    all.insert("cwd".into(), json!(api.workspace().display().to_string()));
    all.insert("hook_event_name".into(), json!(f.event));
    let (mode, interaction) = api
        .read(|c| {
            Ok(waymark_extension::store::sessions::get(c, api.id())?
                .map(|s| (s.permission_mode, s.interaction_mode)))
        })
        .ok()
        .flatten()
        .unwrap_or((PermissionMode::Ask, InteractionMode::Default));
    all.insert(
        "permission_mode".into(),
        json!(claude_mode(mode, interaction)),
    );
    for (k, v) in &f.fields {
        all.insert(k.clone(), v.clone());
    }
    serde_json::to_vec(&Value::Object(all)).unwrap_or_default()
}

/// The session's mode in Claude Code's words.
fn claude_mode(mode: PermissionMode, interaction: InteractionMode) -> &'static str {
    if interaction == InteractionMode::Plan {
        return "plan";
    }
    match mode {
        PermissionMode::Ask | PermissionMode::ReadOnly => "default",
        PermissionMode::AutoEdit => "acceptEdits",
        PermissionMode::Auto => "bypassPermissions",
    }
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn a_matcher_takes_either_name() {
        assert!(matches("Bash", Some("bash")));
        assert!(matches("bash", Some("bash")));
        assert!(!matches("Bash", Some("write")));
        assert!(matches("Edit|Write", Some("write")));
        assert!(matches("*", Some("grep")));
        assert!(matches("", Some("grep")));
        assert!(matches("mcp__github__.*", Some("mcp__github__search")));
        assert!(!matches("mcp__github", Some("mcp__github__search")));
        assert!(matches("Notebook.*|Web.*", Some("web_fetch")));
        assert!(matches("Bash", None));
    }
}
