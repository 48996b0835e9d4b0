//! Where hooks come from, each with the place it is set: the user's own settings (`hooks`),
//! and `~/.claude/settings.json` while `hooks.import_claude` is on (read leniently: a hook
//! that cannot run there is skipped and said, the rest run). That file is read once, when the
//! session opens ([`ClaudeFile`]): a command the agent runs later cannot move it away or
//! break it to take its hooks out of the session. A project's own settings
//! (`.waymark/settings.json`, `.claude/settings.json`) add theirs only once the user approved
//! them (`project.rs`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use waymark_config::Config;
use waymark_config::hooks::{HookCommand, Hooks, parse_lenient, parse_strict};

/// The place a hook is set, as `/hooks` and the `hook.ran` event name it.
pub const FROM_SETTINGS: &str = "settings";
pub const FROM_CLAUDE: &str = "~/.claude/settings.json";

/// The largest settings file of another agent that is read.
const MAX_FILE: u64 = 1024 * 1024;

/// A hook and where it is set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hook {
    pub event: String,
    pub command: HookCommand,
    /// Where it is set: [`FROM_SETTINGS`], [`FROM_CLAUDE`], or a project's file.
    pub source: String,
}

/// The hooks in force, and what was skipped (said once per session).
#[derive(Debug, Clone, Default)]
pub struct Gathered {
    pub hooks: Vec<Hook>,
    pub skipped: Vec<String>,
}

/// `~/.claude/settings.json` as read when the session opened.
#[derive(Debug, Clone, Default)]
pub struct ClaudeFile {
    pub hooks: Hooks,
    pub skipped: Vec<String>,
}

impl ClaudeFile {
    /// Reads the file of the home in `env` (the hooks' own environment).
    pub fn read(env: &[(OsString, OsString)]) -> ClaudeFile {
        let mut out = ClaudeFile::default();
        let Some(home) = home(env) else {
            return out;
        };
        let path = home.join(".claude/settings.json");
        match read_claude(&path) {
            Ok(Some((hooks, skipped))) => {
                out.hooks = hooks;
                out.skipped = skipped
                    .into_iter()
                    .map(|(k, why)| format!("{}: `{k}` {why}; skipped", path.display()))
                    .collect();
            }
            Ok(None) => {}
            Err(why) => out.skipped.push(format!("{}: {why}", path.display())),
        }
        out
    }
}

/// The hooks of the user's settings, when on of `~/.claude/settings.json` as read when the
/// session opened, and the project's once approved.
pub fn gather(config: &Config, claude: &ClaudeFile, project: &Gathered) -> Gathered {
    let mut out = Gathered::default();
    // The settings were checked when they loaded; a failure here would be a bug, said.
    let own = parse_strict(&config.hooks).unwrap_or_else(|e| {
        out.skipped.push(format!("settings: {e}"));
        Hooks::default()
    });
    add(&mut out.hooks, &own, FROM_SETTINGS);
    let import = config.hooks.is_empty() || own.import_claude;
    if import {
        add(&mut out.hooks, &claude.hooks, FROM_CLAUDE);
        out.skipped.extend(claude.skipped.iter().cloned());
    }
    for hook in &project.hooks {
        push(&mut out.hooks, hook.clone());
    }
    out.skipped.extend(project.skipped.iter().cloned());
    out
}

fn add(into: &mut Vec<Hook>, hooks: &Hooks, source: &str) {
    for (event, commands) in &hooks.by_event {
        for c in commands {
            push(
                into,
                Hook {
                    event: event.clone(),
                    command: c.clone(),
                    source: source.to_string(),
                },
            );
        }
    }
}

/// Adds `hook` unless the same command on the same event and matcher is there: it runs once.
fn push(into: &mut Vec<Hook>, hook: Hook) {
    if !into
        .iter()
        .any(|h| h.event == hook.event && h.command == hook.command)
    {
        into.push(hook);
    }
}

fn home(env: &[(OsString, OsString)]) -> Option<PathBuf> {
    env.iter()
        .find(|(k, _)| k == "HOME")
        .map(|(_, v)| PathBuf::from(v))
        .filter(|p| p.is_absolute())
}

type Lenient = (Hooks, Vec<(String, String)>);

/// Why `~/.claude/settings.json` could not be read (named in the message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ClaudeFileError(pub String);

impl From<String> for ClaudeFileError {
    fn from(s: String) -> Self {
        ClaudeFileError(s)
    }
}

impl From<&str> for ClaudeFileError {
    fn from(s: &str) -> Self {
        ClaudeFileError(s.to_string())
    }
}

/// The `hooks` of another agent's settings file; `None` when there is no file or no hooks.
fn read_claude(path: &Path) -> Result<Option<Lenient>, ClaudeFileError> {
    use std::io::Read;
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string().into()),
    };
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a plain file".into());
    }
    let mut text = String::new();
    file.take(MAX_FILE + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("not UTF-8 text: {e}"))?;
    if text.len() as u64 > MAX_FILE {
        return Err(ClaudeFileError(format!(
            "over {} KiB; not read",
            MAX_FILE / 1024
        )));
    }
    let json: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("not JSON: {e}"))?;
    let Some(section) = json.get("hooks") else {
        return Ok(None);
    };
    Ok(Some(parse_lenient(section)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_codes_hooks_are_read_unless_turned_off() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join(".claude")).unwrap();
        std::fs::write(
            home.path().join(".claude/settings.json"),
            r#"{"model": "x", "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": "./guard.sh"},
                {"type": "prompt", "prompt": "judge it"}]}]}}"#,
        )
        .unwrap();
        let env = vec![(OsString::from("HOME"), home.path().as_os_str().to_owned())];
        let g = gather(
            &Config::default(),
            &ClaudeFile::read(&env),
            &Gathered::default(),
        );
        assert_eq!(g.hooks.len(), 1);
        assert_eq!(g.hooks[0].source, FROM_CLAUDE);
        assert_eq!(g.hooks[0].command.command, "./guard.sh");
        assert_eq!(g.skipped.len(), 1, "{:?}", g.skipped);

        let off = Config::from_json(r#"{"hooks": {"import_claude": false}}"#).unwrap();
        assert!(
            gather(&off, &ClaudeFile::read(&env), &Gathered::default())
                .hooks
                .is_empty()
        );

        // Read once: moving the file away later changes nothing for a session that read it.
        let read = ClaudeFile::read(&env);
        std::fs::remove_file(home.path().join(".claude/settings.json")).unwrap();
        assert_eq!(
            gather(&Config::default(), &read, &Gathered::default())
                .hooks
                .len(),
            1
        );

        std::fs::write(home.path().join(".claude/settings.json"), "{not json").unwrap();
        let g = gather(
            &Config::default(),
            &ClaudeFile::read(&env),
            &Gathered::default(),
        );
        assert!(g.hooks.is_empty());
        assert!(g.skipped[0].contains("not JSON"), "{:?}", g.skipped);
    }
}
