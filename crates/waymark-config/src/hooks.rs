//! The `hooks` section, in Claude Code's shape: event name → matcher groups, each with
//! commands to run. Parsed the same way from Waymark's settings (strictly: a mistake is an
//! error naming its key) and from another agent's settings file (leniently: what cannot run
//! is skipped and said).
//!
//! ```json
//! { "PreToolUse": [ { "matcher": "Bash|write", "hooks": [ { "type": "command", "command": "./check.sh", "timeout": 30 } ] } ],
//!   "import_claude": true }
//! ```

use crate::error::ConfigError;
use serde_json::Value;
use std::collections::BTreeMap;

/// The events hooks can be set on: Claude Code's, then Waymark's own.
pub const EVENTS: &[&str] = &[
    "PreToolUse",
    "PostToolUse",
    "UserPromptSubmit",
    "Stop",
    "SessionStart",
    "SessionEnd",
    "PreCompact",
    "Notification",
    "PlanSubmitted",
    "PlanDecided",
    "GoalStatusChanged",
];

/// The key that turns reading `~/.claude/settings.json`'s hooks on or off.
pub const IMPORT_CLAUDE: &str = "import_claude";

/// How long a hook may run when it says nothing (Claude Code's default).
pub const DEFAULT_TIMEOUT_S: u64 = 60;
/// The longest a hook may be given.
pub const MAX_TIMEOUT_S: u64 = 3600;

/// One command to run on an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookCommand {
    /// The tool names it runs for (`*` or empty: every tool; ignored by events without tools).
    pub matcher: String,
    /// A shell command line, run with `sh -c`.
    pub command: String,
    pub timeout_s: u64,
}

/// The hooks of one settings file, by event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hooks {
    pub by_event: BTreeMap<String, Vec<HookCommand>>,
    /// Whether `~/.claude/settings.json`'s hooks run too (default on).
    pub import_claude: bool,
}

impl Hooks {
    pub fn is_empty(&self) -> bool {
        self.by_event.values().all(Vec::is_empty)
    }
}

/// Parses a `hooks` section strictly: the first mistake is an error naming its key
/// (`hooks.PreToolUse[0].hooks[1].timeout`).
pub fn parse_strict(section: &BTreeMap<String, Value>) -> Result<Hooks, ConfigError> {
    let mut skipped = Vec::new();
    let hooks = parse(section, &mut |key, why| skipped.push((key, why)));
    match skipped.into_iter().next() {
        Some((key, why)) => Err(ConfigError::new(key, why)),
        None => Ok(hooks),
    }
}

/// Parses a `hooks` section leniently (another agent's file): what cannot run is skipped,
/// and each skip is said as `(key, why)`.
pub fn parse_lenient(section: &Value) -> (Hooks, Vec<(String, String)>) {
    let mut skipped = Vec::new();
    let Some(map) = section.as_object() else {
        skipped.push(("hooks".to_string(), "must be an object".to_string()));
        return (Hooks::default(), skipped);
    };
    let map: BTreeMap<String, Value> = map.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    let hooks = parse(&map, &mut |key, why| skipped.push((key, why)));
    (hooks, skipped)
}

fn parse(section: &BTreeMap<String, Value>, skip: &mut dyn FnMut(String, String)) -> Hooks {
    let mut hooks = Hooks {
        import_claude: true,
        ..Hooks::default()
    };
    for (event, groups) in section {
        let key = format!("hooks.{event}");
        if event == IMPORT_CLAUDE {
            match groups.as_bool() {
                Some(on) => hooks.import_claude = on,
                None => skip(key, "must be true or false".into()),
            }
            continue;
        }
        if !EVENTS.contains(&event.as_str()) {
            skip(
                key,
                format!(
                    "is not an event hooks can be set on; the events are {}, and {IMPORT_CLAUDE} turns reading ~/.claude/settings.json on or off",
                    EVENTS.join(", ")
                ),
            );
            continue;
        }
        let Some(groups) = groups.as_array() else {
            skip(
                key,
                "must be a list of {\"matcher\", \"hooks\"} groups".into(),
            );
            continue;
        };
        let mut commands = Vec::new();
        for (i, group) in groups.iter().enumerate() {
            group_commands(group, &format!("{key}[{i}]"), &mut commands, skip);
        }
        hooks.by_event.insert(event.clone(), commands);
    }
    hooks
}

fn group_commands(
    group: &Value,
    key: &str,
    out: &mut Vec<HookCommand>,
    skip: &mut dyn FnMut(String, String),
) {
    let Some(group) = group.as_object() else {
        skip(key.into(), "must be an object with `hooks`".into());
        return;
    };
    if let Some(extra) = group
        .keys()
        .find(|k| !matches!(k.as_str(), "matcher" | "hooks"))
    {
        skip(
            format!("{key}.{extra}"),
            "is not a key of a hook group (matcher, hooks)".into(),
        );
        return;
    }
    let matcher = match group.get("matcher") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(m)) => m.clone(),
        Some(_) => {
            skip(format!("{key}.matcher"), "must be a string".into());
            return;
        }
    };
    if let Err(why) = crate::hooks::check_matcher(&matcher) {
        skip(format!("{key}.matcher"), why.0);
        return;
    }
    let Some(list) = group.get("hooks").and_then(Value::as_array) else {
        skip(format!("{key}.hooks"), "must be a list of commands".into());
        return;
    };
    for (j, h) in list.iter().enumerate() {
        let key = format!("{key}.hooks[{j}]");
        match command(h, &key) {
            Ok(mut c) => {
                c.matcher = matcher.clone();
                out.push(c);
            }
            Err((k, why)) => skip(k, why),
        }
    }
}

fn command(h: &Value, key: &str) -> Result<HookCommand, (String, String)> {
    let fail = |k: &str, why: &str| (format!("{key}{k}"), why.to_string());
    let h = h.as_object().ok_or_else(|| fail("", "must be an object"))?;
    if let Some(extra) = h
        .keys()
        .find(|k| !matches!(k.as_str(), "type" | "command" | "timeout"))
    {
        return Err(fail(
            &format!(".{extra}"),
            "is not a key of a hook (type, command, timeout)",
        ));
    }
    match h.get("type").and_then(Value::as_str) {
        Some("command") => {}
        Some(other) => {
            return Err(fail(
                ".type",
                &format!("`{other}` hooks are not supported; only \"command\" hooks run"),
            ));
        }
        None => return Err(fail(".type", "must be \"command\"")),
    }
    let command = h
        .get("command")
        .and_then(Value::as_str)
        .filter(|c| !c.trim().is_empty())
        .ok_or_else(|| fail(".command", "must be a command line"))?;
    if command.len() > 16 * 1024 || command.contains('\0') {
        return Err(fail(".command", "is too long or holds a NUL character"));
    }
    let timeout_s = match h.get("timeout") {
        None | Some(Value::Null) => DEFAULT_TIMEOUT_S,
        Some(t) => t
            .as_u64()
            .filter(|t| (1..=MAX_TIMEOUT_S).contains(t))
            .ok_or_else(|| {
                fail(
                    ".timeout",
                    &format!("must be a whole number of seconds from 1 to {MAX_TIMEOUT_S}"),
                )
            })?,
    };
    Ok(HookCommand {
        matcher: String::new(),
        command: command.to_string(),
        timeout_s,
    })
}

/// How a matcher reads: every tool, a list of exact names, or a regular expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MatcherKind {
    All,
    /// Only letters, digits, `_`, `-`, spaces, `,` and `|`: exact names, split on `|` or `,`.
    Exact(Vec<String>),
    /// Anything else: a regular expression, found anywhere in the name.
    Regex(String),
}

/// How `matcher` reads, the way Claude Code reads it.
pub fn matcher_kind(matcher: &str) -> MatcherKind {
    let m = matcher.trim();
    if m.is_empty() || m == "*" {
        return MatcherKind::All;
    }
    let plain = m
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ' ' | ',' | '|'));
    if plain {
        return MatcherKind::Exact(
            m.split(['|', ','])
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect(),
        );
    }
    MatcherKind::Regex(m.to_string())
}

/// Why a matcher cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct MatcherError(pub String);

/// Whether `matcher` can be used (a regular expression must compile, and stay small).
pub fn check_matcher(matcher: &str) -> Result<(), MatcherError> {
    if matcher.len() > 1024 {
        return Err(MatcherError("is longer than 1024 characters".into()));
    }
    if let MatcherKind::Regex(r) = matcher_kind(matcher) {
        regex::RegexBuilder::new(&r)
            .size_limit(1 << 20)
            .build()
            .map_err(|e| MatcherError(format!("`{r}` is not a regular expression: {e}")))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn strict(v: Value) -> Result<Hooks, ConfigError> {
        let map: BTreeMap<String, Value> = serde_json::from_value(v).unwrap();
        parse_strict(&map)
    }

    #[test]
    fn claude_codes_shape_parses() {
        let h = strict(json!({
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./a.sh", "timeout": 5}]}],
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo hi"}]}],
            "import_claude": false
        }))
        .unwrap();
        assert!(!h.import_claude);
        assert_eq!(h.by_event["PreToolUse"][0].timeout_s, 5);
        assert_eq!(h.by_event["PreToolUse"][0].matcher, "Bash");
        assert_eq!(
            h.by_event["UserPromptSubmit"][0].timeout_s,
            DEFAULT_TIMEOUT_S
        );
    }

    #[test]
    fn mistakes_name_their_key() {
        for (v, key) in [
            (json!({"PreToolCall": []}), "hooks.PreToolCall"),
            (json!({"Stop": {}}), "hooks.Stop"),
            (
                json!({"Stop": [{"hooks": [{"type": "prompt", "prompt": "x"}]}]}),
                "hooks.Stop[0].hooks[0].prompt",
            ),
            (
                json!({"Stop": [{"hooks": [{"type": "prompt"}]}]}),
                "hooks.Stop[0].hooks[0].type",
            ),
            (
                json!({"Stop": [{"hooks": [{"type": "command", "command": " "}]}]}),
                "hooks.Stop[0].hooks[0].command",
            ),
            (
                json!({"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": 0}]}]}),
                "hooks.Stop[0].hooks[0].timeout",
            ),
            (
                json!({"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": 1e9}]}]}),
                "hooks.Stop[0].hooks[0].timeout",
            ),
            (
                json!({"PreToolUse": [{"matcher": "Bash(", "hooks": []}]}),
                "hooks.PreToolUse[0].matcher",
            ),
            (json!({"import_claude": "yes"}), "hooks.import_claude"),
        ] {
            let e = strict(v.clone()).unwrap_err();
            assert_eq!(e.key, key, "{v}: {e}");
        }
    }

    #[test]
    fn another_agents_file_is_read_leniently() {
        let (h, skipped) = parse_lenient(&json!({
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "prompt", "prompt": "judge"}, {"type": "command", "command": "./ok.sh"}]}
            ],
            "PermissionRequest": []
        }));
        assert_eq!(h.by_event["PreToolUse"].len(), 1);
        assert_eq!(skipped.len(), 2, "{skipped:?}");
    }

    #[test]
    fn matchers_read_as_claude_code_reads_them() {
        assert_eq!(matcher_kind(""), MatcherKind::All);
        assert_eq!(matcher_kind("*"), MatcherKind::All);
        assert_eq!(
            matcher_kind("Edit|Write"),
            MatcherKind::Exact(vec!["Edit".into(), "Write".into()])
        );
        assert_eq!(
            matcher_kind("Edit, Write"),
            MatcherKind::Exact(vec!["Edit".into(), "Write".into()])
        );
        assert_eq!(
            matcher_kind("mcp__brave-search"),
            MatcherKind::Exact(vec!["mcp__brave-search".into()])
        );
        assert_eq!(
            matcher_kind("mcp__github__.*"),
            MatcherKind::Regex("mcp__github__.*".into())
        );
    }
}
