//! A project's own hooks: the `hooks` of `.waymark/settings.json`, `.claude/settings.json`
//! and their `.local.json`, in the workspace. They would run the project's commands on this
//! machine, so none runs before the user approves them, each command shown in full, as with
//! `.mcp.json`. The answer is remembered for that folder and that exact content of the files;
//! any change asks again. The files are read once, when the session opens: what the agent
//! writes into them later changes nothing until a session opens on them again and asks.

use crate::sources::Hook;
use sha2::{Digest, Sha256};
use std::path::Path;
use waymark_config::hooks::{Hooks, parse_lenient};
use waymark_extension::store::{self, Tx};
use waymark_extension::{Result, SessionApi};
use waymark_protocol::display::escape_line;
use waymark_protocol::{
    Approval, EventKind, ProjectHook, ProjectHooksQuestion, Question, TypedAnswer,
};

/// The files read, in order, relative to the workspace.
pub const FILES: [&str; 4] = [
    ".waymark/settings.json",
    ".waymark/settings.local.json",
    ".claude/settings.json",
    ".claude/settings.local.json",
];
/// The largest file read.
const MAX_BYTES: u64 = 1024 * 1024;
/// The most hooks a project sets that are shown and run (one question must stay readable).
const MAX_HOOKS: usize = 64;

/// A project's hooks as read: one hash over the files read and their bytes, and the hooks
/// each sets; `skipped` says what could not be used and why.
#[derive(Debug, Clone, Default)]
pub struct ProjectHooks {
    pub sha256: String,
    pub files: Vec<String>,
    pub hooks: Vec<Hook>,
    pub skipped: Vec<String>,
    /// The other files whose bytes the hash covers (`covered.rs`), relative to the project.
    pub scripts: Vec<String>,
}

/// Why a project's settings file cannot be read (named in the message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {why}")]
pub struct ProjectFileError {
    pub file: String,
    pub why: String,
}

/// One file's bytes; `None` when there is none. Never through a link (it could point
/// outside the project or at a device), only a plain file, at most [`MAX_BYTES`].
fn read_file(
    workspace: &Path,
    file: &str,
) -> std::result::Result<Option<Vec<u8>>, ProjectFileError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let fail = |why: String| ProjectFileError {
        file: file.to_string(),
        why,
    };
    // The folder too: `.claude` as a link to elsewhere is not followed.
    let dir = workspace.join(file.split('/').next().unwrap_or(""));
    match std::fs::symlink_metadata(&dir) {
        Ok(m) if m.file_type().is_symlink() => {
            return Err(fail(
                "its folder is a symbolic link, which is not followed".into(),
            ));
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(fail(e.to_string())),
    }
    let f = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(workspace.join(file))
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(fail("a symbolic link, which is not read".into()));
        }
        Err(e) => return Err(fail(e.to_string())),
    };
    let meta = f.metadata().map_err(|e| fail(e.to_string()))?;
    if !meta.is_file() {
        return Err(fail("not a plain file".into()));
    }
    let mut bytes = Vec::new();
    f.take(MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| fail(e.to_string()))?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(fail(format!("over {} KiB; not read", MAX_BYTES / 1024)));
    }
    Ok(Some(bytes))
}

/// The project's hooks in `workspace`; `None` when no file sets any. A file that cannot be
/// read or parsed is skipped and said, and still counts in the hash (its bytes, or the
/// error), so fixing it asks again.
pub fn read(workspace: &Path) -> Option<ProjectHooks> {
    let mut out = ProjectHooks::default();
    let mut hash = Sha256::new();
    for file in FILES {
        let bytes = match read_file(workspace, file) {
            Ok(None) => continue,
            Ok(Some(b)) => b,
            Err(e) => {
                hash.update(format!("{file}\0error\0{}\0", e.why));
                out.skipped.push(e.to_string());
                continue;
            }
        };
        hash.update(format!("{file}\0{}\0", bytes.len()));
        hash.update(&bytes);
        let section = match serde_json::from_slice::<serde_json::Value>(&bytes) {
            Ok(v) => match v.get("hooks") {
                Some(s) => s.clone(),
                None => continue,
            },
            Err(e) => {
                out.skipped.push(format!("{file}: not JSON ({e})"));
                continue;
            }
        };
        let (hooks, skipped): (Hooks, _) = parse_lenient(&section);
        out.skipped.extend(
            skipped
                .into_iter()
                .map(|(k, why)| format!("{file}: `{k}` {why}; skipped")),
        );
        let before = out.hooks.len();
        for (event, commands) in &hooks.by_event {
            for c in commands {
                out.hooks.push(Hook {
                    event: event.clone(),
                    command: c.clone(),
                    source: file.to_string(),
                });
            }
        }
        if out.hooks.len() > before {
            out.files.push(file.to_string());
        }
    }
    if out.hooks.len() > MAX_HOOKS {
        out.skipped.push(format!(
            "the project's settings set {} hooks; only the first {MAX_HOOKS} are shown and run",
            out.hooks.len()
        ));
        out.hooks.truncate(MAX_HOOKS);
    }
    let commands: Vec<&str> = out
        .hooks
        .iter()
        .map(|h| h.command.command.as_str())
        .collect();
    out.scripts = crate::covered::cover(workspace, &commands, &mut hash);
    out.sha256 = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
    (!out.hooks.is_empty()).then_some(out)
}

fn decision(tx: &Tx<'_>, folder: &str, sha: &str) -> Result<Option<bool>> {
    use rusqlite::OptionalExtension;
    Ok(tx
        .conn()
        .query_row(
            "SELECT approved FROM hooks_project_decisions WHERE folder = ?1 AND sha256 = ?2",
            [folder, sha],
            |r| r.get::<_, bool>(0),
        )
        .optional()
        .map_err(store::StoreError::from)?)
}

/// The project's hooks this session runs: those read when it opened, once approved.
#[derive(Default)]
pub struct Approved(std::sync::Mutex<Option<std::sync::Arc<ProjectHooks>>>);

impl Approved {
    pub fn get(&self) -> Option<std::sync::Arc<ProjectHooks>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
    fn set(&self, hooks: Option<ProjectHooks>) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = hooks.map(std::sync::Arc::new);
    }
}

/// What the user is shown: each hook's event, matcher and command, in full.
fn question(found: &ProjectHooks) -> Question {
    Question::ProjectHooks(ProjectHooksQuestion {
        files: found.files.clone(),
        scripts: found.scripts.iter().map(|s| escape_line(s)).collect(),
        sha256: found.sha256.clone(),
        hooks: found
            .hooks
            .iter()
            .map(|h| ProjectHook {
                file: h.source.clone(),
                event: escape_line(&h.event),
                matcher: escape_line(if h.command.matcher.is_empty() {
                    "*"
                } else {
                    &h.command.matcher
                }),
                command: escape_line(&h.command.command),
            })
            .collect(),
    })
}

/// Set once approved hooks' files changed in the session: no project hook runs, and every
/// tool call is refused (a guard the agent took away by rewriting it must not just vanish)
/// until the user answers about the files as they are now.
#[derive(Default)]
pub struct Suspended(std::sync::atomic::AtomicBool);

/// Whether tool calls are refused because the approved hooks' files changed.
pub fn suspended(api: &SessionApi) -> bool {
    api.state::<Suspended>()
        .0
        .load(std::sync::atomic::Ordering::Acquire)
}

/// What a call is told while [`suspended`].
pub const SUSPENDED: &str = "The project's hook files changed after the user approved them, so no tool call runs until the user answers about them again (or opens the session again). Stop and tell the user.";

/// The approved project hooks, if their files (settings and the scripts they run) still hold
/// what was approved. A change takes them away, suspends tool calls and asks about the new
/// content. Read before every firing, so a script rewritten mid-session never runs.
pub fn current(api: &SessionApi) -> Option<std::sync::Arc<ProjectHooks>> {
    let approved = api.state::<Approved>().get()?;
    let now = read(api.workspace());
    if now.as_ref().is_some_and(|n| n.sha256 == approved.sha256) {
        return Some(approved);
    }
    api.state::<Approved>().set(None);
    api.state::<Suspended>()
        .0
        .store(true, std::sync::atomic::Ordering::Release);
    let text = match now {
        Some(found) => {
            if let Err(e) = api.write(|tx| ask(tx, api, &found)) {
                tracing::warn!("cannot ask about the project's changed hooks: {e}");
            }
            "The project's hook files changed after you approved them: its hooks no longer run, and tool calls are refused until you answer about them again."
        }
        // Removed: nothing to ask about, and a guard taken away must not just vanish.
        None => {
            "The project's hook settings were removed after you approved them: tool calls are refused in this session. Open the session again to go on without them."
        }
    };
    api.transient(EventKind::SessionNotice {
        turn_id: None,
        text: text.into(),
    });
    None
}

/// Asks about `found`, unless a question about this very content already waits.
fn ask(tx: &mut Tx<'_>, api: &SessionApi, found: &ProjectHooks) -> Result<()> {
    let asked = store::questionnaires::list(tx.conn(), api.id())?
        .into_iter()
        .any(|q| {
            q.is_pending()
                && matches!(&q.question, Question::ProjectHooks(p) if p.sha256 == found.sha256)
        });
    if asked {
        return Ok(());
    }
    let id: String = api
        .id()
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    let id = format!("q_hooks_{id}_{}", tx.now());
    let question = question(found);
    tx.open_questionnaire(&id, api.id(), None, &question)?;
    tx.emit(
        api.id(),
        EventKind::QuestionnaireOpened {
            id,
            question: Box::new(question),
        },
    )?;
    Ok(())
}

/// On a session's open: the project's hooks run in it if this content was approved; if it
/// was not decided yet, the user is asked (once per content while the question waits).
pub fn on_open(api: &SessionApi) -> Result<Vec<String>> {
    let workspace = api.workspace().to_path_buf();
    let found = read(&workspace);
    let slot = api.state::<Approved>();
    slot.set(None);
    api.state::<Suspended>()
        .0
        .store(false, std::sync::atomic::Ordering::Release);
    let Some(found) = found else {
        return Ok(Vec::new());
    };
    let folder = workspace.display().to_string();
    let skipped = found.skipped.clone();
    api.write(|tx| {
        match decision(tx, &folder, &found.sha256)? {
            Some(true) => {
                slot.set(Some(found));
                return Ok(());
            }
            Some(false) => return Ok(()),
            None => {}
        }
        ask(tx, api, &found)
    })?;
    Ok(skipped)
}

/// The answer: remembered for the folder and the content asked about. On approval the hooks
/// run in this session from now on, if the files still hold that content (else the new
/// content is asked about).
pub fn on_answer(
    tx: &mut Tx<'_>,
    api: &SessionApi,
    q: &store::QuestionnaireRow,
    answer: &waymark_protocol::Answer,
) -> Result<()> {
    let (Question::ProjectHooks(p), Ok(TypedAnswer::ProjectHooks(a))) =
        (&q.question, q.question.accepts(answer))
    else {
        return Ok(());
    };
    let workspace = api.workspace().to_path_buf();
    let folder = workspace.display().to_string();
    let approved = a == Approval::Approve;
    // Answered: calls go on, with the hooks approved now or without any.
    api.state::<Suspended>()
        .0
        .store(false, std::sync::atomic::Ordering::Release);
    let now = tx.now();
    tx.conn()
        .execute(
            "INSERT INTO hooks_project_decisions (folder, sha256, approved, decided_at)
             VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (folder, sha256) DO UPDATE SET approved = ?3, decided_at = ?4",
            rusqlite::params![folder, p.sha256, approved, now],
        )
        .map_err(store::StoreError::from)?;
    if !approved {
        return Ok(());
    }
    match read(&workspace) {
        Some(found) if found.sha256 == p.sha256 => api.state::<Approved>().set(Some(found)),
        _ => {
            tx.emit(
                api.id(),
                EventKind::SessionNotice {
                    turn_id: None,
                    text: "The project's hook settings changed after they were shown to you: none of its hooks runs. Open the session again to be asked about them as they are now.".into(),
                },
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn hooks_on(event: &str, command: &str) -> String {
        json!({"hooks": {event: [{"matcher": "", "hooks": [{"type": "command", "command": command}]}]}})
            .to_string()
    }

    #[test]
    fn every_file_is_read_in_order_and_a_linked_folder_or_file_is_not_followed() {
        let ws = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(
            outside.path().join("settings.json"),
            hooks_on("Stop", "touch /tmp/never"),
        )
        .unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.path().join(".claude")).unwrap();
        std::fs::create_dir_all(ws.path().join(".waymark")).unwrap();
        std::fs::write(
            ws.path().join(".waymark/settings.json"),
            hooks_on("Stop", "echo one"),
        )
        .unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("settings.json"),
            ws.path().join(".waymark/settings.local.json"),
        )
        .unwrap();
        let found = read(ws.path()).unwrap();
        assert_eq!(found.files, [".waymark/settings.json"]);
        assert_eq!(found.hooks.len(), 1);
        assert_eq!(found.hooks[0].source, ".waymark/settings.json");
        assert_eq!(found.skipped.len(), 3, "{:?}", found.skipped);
        assert!(
            found
                .skipped
                .iter()
                .any(|s| s.contains("its folder is a symbolic link"))
        );
        assert!(
            found
                .skipped
                .iter()
                .any(|s| s.contains("a symbolic link, which is not read"))
        );
    }

    #[test]
    fn any_change_to_the_files_changes_the_hash_and_no_hooks_is_none() {
        let ws = tempfile::tempdir().unwrap();
        assert!(read(ws.path()).is_none());
        std::fs::create_dir_all(ws.path().join(".claude")).unwrap();
        std::fs::write(ws.path().join(".claude/settings.json"), r#"{"model": "x"}"#).unwrap();
        assert!(
            read(ws.path()).is_none(),
            "a settings file without hooks asks nothing"
        );
        std::fs::write(
            ws.path().join(".claude/settings.json"),
            hooks_on("Stop", "echo a"),
        )
        .unwrap();
        let a = read(ws.path()).unwrap().sha256;
        std::fs::write(ws.path().join(".claude/settings.local.json"), r#"{"x": 1}"#).unwrap();
        let b = read(ws.path()).unwrap().sha256;
        assert_ne!(a, b, "another file's bytes count too");
        std::fs::write(ws.path().join(".claude/settings.json"), "{broken").unwrap();
        assert!(read(ws.path()).is_none());
    }
}
