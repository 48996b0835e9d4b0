//! A project's own servers (`.mcp.json` in the session's workspace, the form Claude Code
//! and Cursor read). Nothing in it starts before the user approves it: the first session
//! opened on it asks, with each server's command line or URL, and the answer is remembered
//! for that folder and that exact content. Any change to the file asks again. An approved
//! project's servers serve the sessions of that folder alone.

use crate::hub::{McpHub, target};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use waymark_config::mcp::{McpServerConfig, project_servers};
use waymark_extension::store::{self, Tx};
use waymark_extension::{Result, SessionApi};
use waymark_protocol::display::escape_line;
use waymark_protocol::{
    Approval, ErrorInfo, EventKind, ProjectServer, ProjectServersQuestion, Question, TypedAnswer,
};

/// The file, in the workspace's top folder.
pub const FILE: &str = ".mcp.json";
/// The largest file read.
pub const MAX_BYTES: u64 = 1024 * 1024;

/// What is wrong with a project's file (named in the message).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct ProjectFileError(pub String);

impl From<String> for ProjectFileError {
    fn from(s: String) -> Self {
        ProjectFileError(s)
    }
}

/// A project's file as read: its bytes' SHA-256 and its servers.
pub struct ProjectFile {
    pub sha256: String,
    pub servers: BTreeMap<String, McpServerConfig>,
}

/// The file of `folder`, read; `None` when there is none.
pub fn read(folder: &Path) -> std::result::Result<Option<ProjectFile>, ProjectFileError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let path = folder.join(FILE);
    let fail = |what: String| ProjectFileError(format!("{}: {what}", path.display()));
    // Never through a link (it could point at a device or outside the project), and only a
    // plain file, read up to the limit whatever size it claims.
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(fail("a symbolic link, which is not read".into()));
        }
        Err(e) => return Err(fail(e.to_string())),
    };
    let meta = file.metadata().map_err(|e| fail(e.to_string()))?;
    if !meta.is_file() {
        return Err(fail("not a plain file".into()));
    }
    let mut bytes = Vec::new();
    file.take(MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| fail(e.to_string()))?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(fail(format!("over {} KiB", MAX_BYTES / 1024)));
    }
    let text =
        std::str::from_utf8(&bytes).map_err(|_| format!("{} is not UTF-8 text", path.display()))?;
    let servers = project_servers(text).map_err(|e| format!("{}: {e}", path.display()))?;
    let sha = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok(Some(ProjectFile {
        sha256: sha,
        servers,
    }))
}

/// Whether a server's argument reads as a path relative to the folder it starts in: `.`,
/// `..`, `./…`, `../…`, or such a path as an option's value (`--root=.`). Names such as
/// `server.js` or `@scope/pkg` are left alone: they may as well be a package or a module.
fn reads_as_relative_path(arg: &str) -> bool {
    let value = match arg.split_once('=') {
        Some((key, v)) if key.starts_with('-') => v,
        _ => arg,
    };
    matches!(value, "." | "..") || value.starts_with("./") || value.starts_with("../")
}

fn decision(tx: &Tx<'_>, folder: &str, sha: &str) -> Result<Option<bool>> {
    use rusqlite::OptionalExtension;
    Ok(tx
        .conn()
        .query_row(
            "SELECT approved FROM mcp_project_decisions WHERE folder = ?1 AND sha256 = ?2",
            [folder, sha],
            |r| r.get::<_, bool>(0),
        )
        .optional()
        .map_err(store::StoreError::from)?)
}

/// On a session's open: starts an approved project's servers, or asks about a file not
/// decided yet (once per content, even across sessions while the question is pending).
pub(crate) fn on_open(
    hub: &Arc<McpHub>,
    tx: &mut Tx<'_>,
    session_id: &str,
    workspace: &Path,
) -> Result<()> {
    let folder = workspace.display().to_string();
    let (sha, servers) = match read(workspace) {
        Ok(Some(found)) => (found.sha256, found.servers),
        Ok(None) => {
            hub.drop_project(workspace);
            return Ok(());
        }
        Err(why) => {
            hub.drop_project(workspace);
            // The session opens; the project's servers do not start, and it says why.
            tx.emit(
                session_id,
                EventKind::SessionError {
                    error: ErrorInfo::new(
                        "mcp_project_invalid",
                        format!("the project's MCP servers are not started: {why}"),
                    ),
                },
            )?;
            return Ok(());
        }
    };
    // Only what the file says now, and only once approved: servers of an earlier content
    // stop.
    match decision(tx, &folder, &sha)? {
        Some(true) => {
            hub.add_project(workspace, servers);
            return Ok(());
        }
        Some(false) => {
            hub.drop_project(workspace);
            return Ok(());
        }
        None => hub.drop_project(workspace),
    }
    let asked = store::questionnaires::list(tx.conn(), session_id)?
        .into_iter()
        .any(|q| {
            q.is_pending() && matches!(&q.question, Question::ProjectServers(p) if p.sha256 == sha)
        });
    if asked {
        return Ok(());
    }
    let question = Question::ProjectServers(ProjectServersQuestion {
        path: escape_line(&workspace.join(FILE).display().to_string()),
        sha256: sha,
        servers: servers
            .iter()
            .map(|(name, s)| ProjectServer {
                name: escape_line(name),
                target: escape_line(&target(s)),
                env: s
                    .env
                    .iter()
                    .map(|(k, v)| escape_line(&format!("{k}={v}")))
                    .collect(),
                headers: s
                    .headers
                    .iter()
                    .map(|(k, v)| escape_line(&format!("{k}: {v}")))
                    .collect(),
                cwd: s
                    .command
                    .is_some()
                    .then(|| escape_line(&crate::hub::project_cwd(workspace, s.cwd.as_deref()))),
                relative_args: if s.command.is_some() && s.cwd.is_none() {
                    s.args
                        .iter()
                        .filter(|a| reads_as_relative_path(a))
                        .map(|a| escape_line(a))
                        .collect()
                } else {
                    Vec::new()
                },
            })
            .collect(),
    });
    let id = format!(
        "q_mcp_{}",
        &session_id
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
    );
    let id = format!("{id}_{}", tx.now());
    tx.open_questionnaire(&id, session_id, None, &question)?;
    tx.emit(
        session_id,
        EventKind::QuestionnaireOpened {
            id,
            question: Box::new(question),
        },
    )?;
    Ok(())
}

/// The answer: remembered for the folder and content asked about; on approval the servers
/// start, if the file still has that content (else the next open asks about the new one).
pub(crate) fn on_answer(
    hub: &Arc<McpHub>,
    tx: &mut Tx<'_>,
    api: &SessionApi,
    q: &store::QuestionnaireRow,
    answer: &waymark_protocol::Answer,
) -> Result<()> {
    let (Question::ProjectServers(p), Ok(TypedAnswer::ProjectServers(a))) =
        (&q.question, q.question.accepts(answer))
    else {
        return Ok(());
    };
    let workspace: PathBuf = api.workspace().to_path_buf();
    let folder = workspace.display().to_string();
    let approved = a == Approval::Approve;
    let now = tx.now();
    tx.conn()
        .execute(
            "INSERT INTO mcp_project_decisions (folder, sha256, approved, decided_at)
             VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (folder, sha256) DO UPDATE SET approved = ?3, decided_at = ?4",
            rusqlite::params![folder, p.sha256, approved, now],
        )
        .map_err(store::StoreError::from)?;
    if approved {
        match read(&workspace) {
            Ok(Some(found)) if found.sha256 == p.sha256 => {
                hub.add_project(&workspace, found.servers)
            }
            // Changed since it was shown: nothing starts, and the new content is asked
            // about (or said to be wrong) now.
            _ => {
                tx.emit(
                    api.id(),
                    EventKind::SessionError {
                        error: ErrorInfo::new(
                            "mcp_project_changed",
                            format!(
                                "{} changed after it was shown to you; nothing was started",
                                p.path
                            ),
                        ),
                    },
                )?;
                on_open(hub, tx, api.id(), &workspace)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::reads_as_relative_path;

    #[test]
    fn relative_paths_among_a_servers_arguments_are_told_apart() {
        for a in [".", "..", "./data", "../shared", "--root=.", "--dir=./x"] {
            assert!(reads_as_relative_path(a), "{a}");
        }
        for a in [
            "/srv/data",
            "-y",
            "@modelcontextprotocol/server-filesystem",
            "server.js",
            "--port=8080",
            "x=./y",
            ".env",
        ] {
            assert!(!reads_as_relative_path(a), "{a}");
        }
    }
}
