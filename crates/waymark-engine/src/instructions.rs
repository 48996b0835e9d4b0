//! Project instructions: the `AGENTS.md` files people keep for coding agents.
//!
//! When a session starts it reads, in this order:
//! - the user's own file in the config folder (`~/.config/waymark/AGENTS.md`), for every
//!   project;
//! - from the git root down to the workspace, each folder's `AGENTS.md`, or its `CLAUDE.md`
//!   where it has none (outside a git repository: the workspace folder alone).
//!
//! The text is capped at [`CAP_BYTES`] in all, with a note saying what was left out, and
//! kept with the session: the model sees the same instructions for the session's whole life,
//! whatever happens to the files later. Only regular files are read (a FIFO named
//! `AGENTS.md` cannot stall a session start).

use crate::tools::fs_policy::describe_type;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use waymark_protocol::{InstructionFile, InstructionScope};

/// The most instruction text a session takes, over all files.
pub const CAP_BYTES: usize = 32 * 1024;

/// The names looked for in each folder, first found wins.
pub use crate::tools::fs_policy::INSTRUCTION_FILES as FILE_NAMES;

/// The user-level file beside the settings file.
pub fn user_file(settings_file: &Path) -> Option<PathBuf> {
    Some(settings_file.parent()?.join(FILE_NAMES[0]))
}

pub use crate::store::Instructions;

/// The folders searched, outermost first: the git root (the nearest folder at or above the
/// workspace holding `.git`) down to the workspace; the workspace alone outside a repository.
fn folders(workspace: &Path) -> Vec<PathBuf> {
    let chain: Vec<&Path> = workspace.ancestors().collect();
    let root = chain.iter().position(|d| d.join(".git").exists());
    let mut out: Vec<PathBuf> = match root {
        Some(i) => chain[..=i].iter().map(|d| d.to_path_buf()).collect(),
        None => vec![workspace.to_path_buf()],
    };
    out.reverse();
    out
}

/// The file a folder contributes: `AGENTS.md`, else `CLAUDE.md`, if either exists (as
/// anything: a FIFO by that name is reported, not skipped silently).
fn pick(folder: &Path) -> Option<PathBuf> {
    FILE_NAMES
        .iter()
        .map(|n| folder.join(n))
        .find(|p| std::fs::symlink_metadata(p).is_ok())
}

/// Why an instructions file was not read (shown with the file).
#[derive(Debug, thiserror::Error)]
enum Unread {
    #[error("it is {0}; only regular files are read")]
    NotRegular(&'static str),
    #[error("cannot read it: {0}")]
    Io(#[from] std::io::Error),
}

impl Unread {
    fn not_regular(ft: std::fs::FileType) -> Self {
        Unread::NotRegular(if ft.is_dir() {
            "a directory"
        } else {
            describe_type(ft)
        })
    }
}

/// Reads one file: regular files only, at most `room` bytes (plus one, to see a cut).
fn read(path: &Path, room: usize) -> Result<(u32, Vec<u8>), Unread> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(Unread::not_regular(meta.file_type()));
    }
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(Unread::not_regular(meta.file_type()));
    }
    let mut buf = Vec::new();
    f.take(room as u64).read_to_end(&mut buf)?;
    Ok((u32::try_from(meta.len()).unwrap_or(u32::MAX), buf))
}

/// Cuts `bytes` to at most `n`, at a character boundary, as text (invalid UTF-8 replaced).
fn text_within(bytes: &[u8], n: usize) -> String {
    let s = String::from_utf8_lossy(&bytes[..bytes.len().min(n)]);
    let mut s = s.into_owned();
    while s.len() > n {
        s.pop();
    }
    s
}

/// Reads the instructions for a session in `workspace` (canonical), with the user's file at
/// `user` (if any).
pub fn discover(workspace: &Path, user: Option<&Path>) -> Instructions {
    let mut found: Vec<(PathBuf, InstructionScope)> = Vec::new();
    if let Some(u) = user
        && std::fs::symlink_metadata(u).is_ok()
    {
        found.push((u.to_path_buf(), InstructionScope::User));
    }
    found.extend(
        folders(workspace)
            .iter()
            .filter_map(|d| pick(d))
            .map(|p| (p, InstructionScope::Project)),
    );
    // Project files must stay inside the project: an AGENTS.md a repository links to
    // `~/.ssh/id_ed25519` is not read into the prompt.
    let root = folders(workspace)
        .into_iter()
        .next()
        .and_then(|r| r.canonicalize().ok());
    let mut out = Instructions::default();
    let mut body = String::new();
    // Text taken so far, headings included: the cap holds however many files there are.
    let mut used = 0usize;
    let mut left_out: Vec<String> = Vec::new();
    let mut no_room = 0usize;
    for (path, scope) in found {
        let shown = path.display().to_string();
        let from = match scope {
            InstructionScope::User => "the user's own instructions, for every project",
            InstructionScope::Project => "the project",
        };
        let heading = format!("\n\n## {shown} ({from})\n\n");
        let room = CAP_BYTES.saturating_sub(used + heading.len());
        let outside = scope == InstructionScope::Project
            && !path
                .canonicalize()
                .is_ok_and(|p| root.as_ref().is_some_and(|r| p.starts_with(r)));
        if outside {
            out.files.push(InstructionFile {
                path: shown,
                scope,
                bytes: 0,
                included_bytes: 0,
                error: Some("it links outside the project; only files inside it are read".into()),
            });
            continue;
        }
        if room == 0 {
            no_room += 1;
            let size = std::fs::metadata(&path).map_or(0, |m| m.len());
            out.files.push(InstructionFile {
                path: shown,
                scope,
                bytes: u32::try_from(size).unwrap_or(u32::MAX),
                included_bytes: 0,
                error: None,
            });
            continue;
        }
        match read(&path, room) {
            Err(error) => out.files.push(InstructionFile {
                path: shown,
                scope,
                bytes: 0,
                included_bytes: 0,
                error: Some(error.to_string()),
            }),
            Ok((size, bytes)) => {
                let text = text_within(&bytes, room);
                if (text.len() as u64) < u64::from(size) {
                    left_out.push(format!(
                        "{} more bytes of {shown}",
                        u64::from(size) - text.len() as u64
                    ));
                }
                if !text.trim().is_empty() {
                    used += heading.len() + text.len();
                    body.push_str(&heading);
                    body.push_str(text.trim_end());
                }
                out.files.push(InstructionFile {
                    path: shown,
                    scope,
                    bytes: size,
                    included_bytes: text.len() as u32,
                    error: None,
                });
            }
        }
    }
    if !body.is_empty() {
        out.text = format!(
            "# Instructions from the user and the project\n\
             These files were written for coding agents working here. Follow them as you would \
             the user's own words, unless a message from the user says otherwise. Where two \
             disagree, the one listed later (closer to the workspace) wins.{body}"
        );
        if no_room > 0 {
            left_out.push(format!("{no_room} more files (listed by /instructions)"));
        }
        if !left_out.is_empty() {
            out.text.push_str(&format!(
                "\n\n[Instructions are capped at {} KiB; left out: {}. Read the files themselves if you need the rest.]",
                CAP_BYTES / 1024,
                left_out.join(", ")
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(p: &Path, text: &str) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    /// Nested files from the git root down, CLAUDE.md only where there is no AGENTS.md,
    /// folders above the git root ignored, the user's file first.
    #[test]
    fn reads_nested_files_from_the_git_root_down_with_the_fallback() {
        let d = tempfile::tempdir().unwrap();
        let top = d.path();
        write(&top.join("AGENTS.md"), "above the repository: never read");
        let repo = top.join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        write(&repo.join("AGENTS.md"), "root rules");
        write(&repo.join("CLAUDE.md"), "shadowed by AGENTS.md");
        write(&repo.join("pkg/CLAUDE.md"), "package rules");
        let ws = repo.join("pkg/app");
        write(&ws.join("AGENTS.md"), "app rules");
        let user = top.join("config/AGENTS.md");
        write(&user, "my rules");

        let got = discover(&ws, Some(&user));
        let paths: Vec<&str> = got.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                user.to_str().unwrap(),
                repo.join("AGENTS.md").to_str().unwrap(),
                repo.join("pkg/CLAUDE.md").to_str().unwrap(),
                ws.join("AGENTS.md").to_str().unwrap(),
            ]
        );
        assert_eq!(got.files[0].scope, InstructionScope::User);
        assert!(
            got.files[1..]
                .iter()
                .all(|f| f.scope == InstructionScope::Project)
        );
        let order: Vec<usize> = ["my rules", "root rules", "package rules", "app rules"]
            .iter()
            .map(|t| got.text.find(t).unwrap())
            .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{}", got.text);
        assert!(!got.text.contains("never read") && !got.text.contains("shadowed"));
    }

    #[test]
    fn outside_a_repository_only_the_workspace_is_read_and_none_means_no_text() {
        let d = tempfile::tempdir().unwrap();
        write(&d.path().join("AGENTS.md"), "parent");
        let ws = d.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let none = discover(&ws, Some(&d.path().join("missing/AGENTS.md")));
        assert_eq!(none, Instructions::default());
        write(&ws.join("CLAUDE.md"), "fallback");
        let got = discover(&ws, None);
        assert_eq!(got.files.len(), 1);
        assert!(got.text.contains("fallback") && !got.text.contains("parent"));
    }

    /// A huge file is read only up to the cap; what follows is left out with a note naming
    /// it, and the text never passes the cap (plus its fixed framing).
    #[test]
    fn the_cap_holds_over_all_files_with_a_note() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path();
        std::fs::create_dir(ws.join(".git")).unwrap();
        let user = ws.join("cfg/AGENTS.md");
        write(&user, &"é".repeat(CAP_BYTES / 2 - 1)); // 2 bytes each: just under the cap
        write(&ws.join("AGENTS.md"), &"x".repeat(10 * CAP_BYTES));
        let got = discover(ws, Some(&user));
        let included: u32 = got.files.iter().map(|f| f.included_bytes).sum();
        assert!(included as usize <= CAP_BYTES);
        // The user's file (with its heading) takes the room: it is cut, the project file has
        // none left and is counted.
        let first = &got.files[0];
        assert!(first.included_bytes > 0 && first.included_bytes < first.bytes);
        assert_eq!(got.files[1].bytes as usize, 10 * CAP_BYTES);
        assert_eq!(got.files[1].included_bytes, 0);
        let cut = first.bytes - first.included_bytes;
        assert!(
            got.text
                .contains(&format!("left out: {cut} more bytes of {}", user.display())),
            "{}",
            &got.text[got.text.len() - 300..]
        );
        assert!(got.text.contains("1 more files"));
        assert!(got.text.len() < CAP_BYTES + 1024, "{}", got.text.len());
    }

    /// Hundreds of nested folders with a tiny AGENTS.md each: headings count toward the cap,
    /// so the text stays within it; the files past it are counted, not each named
    /// (red-team finding).
    #[test]
    fn many_files_cannot_grow_the_text_past_the_cap() {
        let d = tempfile::tempdir().unwrap();
        let mut dir = d.path().to_path_buf();
        std::fs::create_dir(dir.join(".git")).unwrap();
        for i in 0..300 {
            write(&dir.join("AGENTS.md"), "x");
            dir = dir.join(format!("level{i:03}"));
        }
        std::fs::create_dir_all(&dir).unwrap();
        let got = discover(&dir, None);
        assert_eq!(got.files.len(), 300);
        assert!(got.text.len() < CAP_BYTES + 1024, "{}", got.text.len());
        assert!(got.text.contains("more files (listed by /instructions)"));
    }

    /// A project AGENTS.md linking outside the project is not read (a repository cannot pull
    /// the user's private files into the prompt); the user's own file may link anywhere.
    #[test]
    fn a_project_file_linking_outside_is_not_read() {
        let d = tempfile::tempdir().unwrap();
        let secret = d.path().join("home/.ssh/id_ed25519");
        write(&secret, "PRIVATE KEY");
        let ws = d.path().join("repo");
        std::fs::create_dir_all(ws.join(".git")).unwrap();
        std::os::unix::fs::symlink(&secret, ws.join("AGENTS.md")).unwrap();
        let user = d.path().join("cfg/AGENTS.md");
        std::fs::create_dir_all(user.parent().unwrap()).unwrap();
        write(&d.path().join("dotfiles/agents.md"), "my rules");
        std::os::unix::fs::symlink(d.path().join("dotfiles/agents.md"), &user).unwrap();
        let got = discover(&ws.canonicalize().unwrap(), Some(&user));
        assert!(!got.text.contains("PRIVATE KEY"), "{}", got.text);
        assert!(got.text.contains("my rules"));
        assert!(
            got.files[1]
                .error
                .as_deref()
                .unwrap()
                .contains("outside the project")
        );
    }

    /// A FIFO named AGENTS.md (which would block a read forever) is reported, not read, and
    /// does not fall through to CLAUDE.md.
    #[test]
    fn a_fifo_is_reported_not_read() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path();
        let fifo = ws.join("AGENTS.md");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        #[allow(unsafe_code)]
        let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
        assert_eq!(rc, 0);
        write(&ws.join("CLAUDE.md"), "fallback");
        let got = discover(ws, None);
        assert_eq!(got.files.len(), 1);
        assert!(
            got.files[0].error.as_deref().unwrap().contains("FIFO"),
            "{:?}",
            got.files
        );
        assert_eq!(got.text, "");
    }
}
