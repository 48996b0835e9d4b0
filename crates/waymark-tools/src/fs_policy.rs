//! Where tools may write: inside the workspace or the session's `artifacts/` folder, on
//! canonical paths. `..`, absolute paths elsewhere, symlinks leading out and symlink loops are
//! refused; writes go through a temp file and a rename, which replaces a symlink planted at
//! the target instead of following it.

use super::{ToolContext, ToolError};
use std::io::Write as _;
use std::path::{Component, Path, PathBuf};

/// A path a write may not go to, with the reason for the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PathRefused(pub String);

impl From<PathRefused> for ToolError {
    fn from(e: PathRefused) -> Self {
        ToolError::Model(e.0)
    }
}

/// Resolves a path for reading (relative to the workspace). The file must exist.
pub fn resolve_read(ctx: &ToolContext, raw: &str) -> Result<PathBuf, ToolError> {
    let p = join(ctx, raw)?;
    let p = p
        .canonicalize()
        .map_err(|e| ToolError::Model(format!("cannot open `{raw}`: {}", describe_io(&e))))?;
    // Checked where the path leads now, whatever the guard saw.
    if let Some(place) = ctx.protected.place_of(&p) {
        return Err(ToolError::Model(format!(
            "`{raw}` is private: it lies in {}, which Waymark keeps from the model; ask the user instead",
            place.display()
        )));
    }
    Ok(p)
}

/// Opens a file for reading only when it is a regular file. FIFOs, sockets and devices are
/// refused with a clear error: they can block a read forever or never end. The open itself
/// is non-blocking (a FIFO without a writer would otherwise stall it), and the type is
/// checked on the opened descriptor, so a file swapped for a FIFO after a check is caught.
pub fn open_regular(path: &Path, raw: &str) -> Result<std::fs::File, ToolError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let refuse = |ft: std::fs::FileType| {
        ToolError::Model(format!(
            "`{raw}` is {}; only regular files can be read",
            describe_type(ft)
        ))
    };
    // Sockets cannot be opened at all (ENXIO): say what they are first.
    if let Ok(m) = std::fs::metadata(path)
        && !m.is_file()
    {
        return Err(refuse(m.file_type()));
    }
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| ToolError::Model(format!("cannot read `{raw}`: {}", describe_io(&e))))?;
    let ft = f
        .metadata()
        .map_err(|e| ToolError::Model(format!("cannot read `{raw}`: {}", describe_io(&e))))?
        .file_type();
    if ft.is_file() { Ok(f) } else { Err(refuse(ft)) }
}

/// What a non-regular file is, for error messages.
pub fn describe_type(ft: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    if ft.is_dir() {
        "a directory (use list_dir)"
    } else if ft.is_fifo() {
        "a FIFO (named pipe)"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else {
        "not a regular file"
    }
}

/// Resolves a path for writing; the result is canonical and inside an allowed root.
pub fn resolve_write(ctx: &ToolContext, raw: &str) -> Result<PathBuf, ToolError> {
    let target = resolve_target(&ctx.workspace, raw)?;
    if !inside_allowed_root(ctx, &target) {
        return Err(ToolError::Model(format!(
            "writing `{raw}` is refused: it resolves to {}, outside the workspace ({}) and the session artifacts folder ({})",
            target.display(),
            ctx.workspace.display(),
            ctx.artifacts.display()
        )));
    }
    if target.is_dir() {
        return Err(ToolError::Model(format!("`{raw}` is a directory")));
    }
    Ok(target)
}

/// Where a write to `raw` (relative to `workspace`) would land: the canonical path, with
/// symlinks followed and `..` refused. The target itself need not exist.
pub fn resolve_target(workspace: &Path, raw: &str) -> Result<PathBuf, PathRefused> {
    let p = join_path(workspace, raw)?;
    if p.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(PathRefused(format!(
            "`{raw}` contains `..`; name the file by its path inside the workspace"
        )));
    }
    // The deepest part of the path that exists is canonicalized (following symlinks); the
    // rest does not exist yet and is appended as plain names.
    let mut existing = p.clone();
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    while std::fs::symlink_metadata(&existing).is_err() {
        let Some(name) = existing.file_name().map(|n| n.to_os_string()) else {
            return Err(PathRefused(format!(
                "cannot write `{raw}`: no such location"
            )));
        };
        rest.push(name);
        if !existing.pop() {
            return Err(PathRefused(format!(
                "cannot write `{raw}`: no such location"
            )));
        }
    }
    let mut target = existing
        .canonicalize()
        .map_err(|e| PathRefused(format!("cannot write `{raw}`: {}", describe_io(&e))))?;
    for name in rest.iter().rev() {
        target.push(name);
    }
    Ok(target)
}

fn inside_allowed_root(ctx: &ToolContext, target: &Path) -> bool {
    target.starts_with(&ctx.workspace) || target.starts_with(&ctx.artifacts)
}

fn join(ctx: &ToolContext, raw: &str) -> Result<PathBuf, ToolError> {
    Ok(join_path(&ctx.workspace, raw)?)
}

/// `raw` as an absolute path (relative ones are taken from the workspace).
fn join_path(workspace: &Path, raw: &str) -> Result<PathBuf, PathRefused> {
    if raw.is_empty() {
        return Err(PathRefused("the path is empty".into()));
    }
    if raw.contains('\0') {
        return Err(PathRefused("the path contains a NUL byte".into()));
    }
    let p = Path::new(raw);
    Ok(if p.is_absolute() {
        p.to_path_buf()
    } else {
        workspace.join(p)
    })
}

fn describe_io(e: &std::io::Error) -> String {
    if e.raw_os_error() == Some(libc::ELOOP) {
        "too many levels of symbolic links (a symlink loop)".into()
    } else if e.kind() == std::io::ErrorKind::NotFound {
        "no such file or directory".into()
    } else {
        e.to_string()
    }
}

/// Writes `bytes` to `path` through a temp file in the same folder and a rename. Creates
/// missing parent folders (the caller has checked that they lie inside an allowed root).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ToolError> {
    let placed = write_temp(path, bytes).and_then(|tmp| {
        std::fs::rename(&tmp, path).inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
    });
    placed.map_err(|e| ToolError::Model(format!("cannot write {}: {e}", path.display())))
}

/// `bytes` in a new hidden temp file beside `path` (parent folders created, the permission
/// bits of a regular file already at `path` kept, set-id bits aside); its path. The temp file
/// is never readable by more than that file is while the bytes go in (a private file's new
/// content is private from the first byte). Removed again if writing fails.
pub fn write_temp(path: &Path, bytes: &[u8]) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
    let parent = path
        .parent()
        .ok_or_else(|| std::io::Error::other("it has no parent folder"))?;
    std::fs::create_dir_all(parent)?;
    let tmp = temp_sibling(path);
    // A link at `path` is replaced, not followed: its bits are not the file's.
    let kept = std::fs::symlink_metadata(path)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.permissions().mode() & 0o777);
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(kept.unwrap_or(0o666))
            .open(&tmp)?;
        if let Some(bits) = kept {
            // The umask may have narrowed them: exactly the file's.
            f.set_permissions(std::fs::Permissions::from_mode(bits))?;
        }
        f.write_all(bytes)?;
        Ok(())
    })();
    match written {
        Ok(()) => Ok(tmp),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// A hidden temp name beside `path`.
pub fn temp_sibling(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.waymark-{:08x}.tmp", fastrand::u32(..)))
}

/// Reads a text file for editing; binary or non-UTF-8 files are refused.
pub fn read_text(path: &Path, raw: &str) -> Result<String, ToolError> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    open_regular(path, raw)?
        .read_to_end(&mut bytes)
        .map_err(|e| ToolError::Model(format!("cannot read `{raw}`: {}", describe_io(&e))))?;
    String::from_utf8(bytes)
        .map_err(|_| ToolError::Model(format!("`{raw}` is not UTF-8 text; it cannot be edited")))
}

/// The names of instruction files (looked for in each folder, first found wins).
pub const INSTRUCTION_FILES: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];

/// Whether a resolved path lies inside a `.git` folder.
pub fn in_git_dir(p: &Path) -> bool {
    p.components()
        .any(|c| matches!(c, Component::Normal(n) if n == ".git"))
}

/// Files besides the instructions that steer later sessions: a project's MCP servers.
pub const STEERING_FILES: [&str; 1] = [".mcp.json"];

/// Whether a resolved path is an instructions file (`AGENTS.md`, `CLAUDE.md`) or another
/// file that steers later sessions (`.mcp.json`, whose servers a later session asks to
/// start) in any folder: the model writing one is the user's decision, like `.git/` hooks.
pub fn is_instructions_file(p: &Path) -> bool {
    p.file_name().is_some_and(|n| {
        INSTRUCTION_FILES
            .iter()
            .chain(STEERING_FILES.iter())
            .any(|f| n.eq_ignore_ascii_case(f))
    }) || steers_hooks(p)
}

/// Whether `p` is where a project's hooks are set or kept: `.claude/` or `.waymark/`'s
/// `settings.json` and `settings.local.json`, or anything in their `hooks/` folders. A later
/// session asks before running them, but the model slipping one line into them should be
/// the user's decision as it happens.
fn steers_hooks(p: &Path) -> bool {
    let names: Vec<&std::ffi::OsStr> = p
        .components()
        .filter_map(|c| match c {
            std::path::Component::Normal(n) => Some(n),
            _ => None,
        })
        .collect();
    let is = |n: &std::ffi::OsStr, what: &[&str]| what.iter().any(|w| n.eq_ignore_ascii_case(w));
    let agent_dir = [".claude", ".waymark"];
    names
        .windows(2)
        .any(|w| is(w[0], &agent_dir) && is(w[1], &["hooks"]))
        || matches!(names.as_slice(), [.., dir, file]
            if is(dir, &agent_dir) && is(file, &["settings.json", "settings.local.json"]))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::Fixture;
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_projects_hook_settings_and_scripts_are_steering_files() {
        for p in [
            "/w/.claude/settings.json",
            "/w/.claude/settings.local.json",
            "/w/.waymark/settings.json",
            "/w/.Claude/Settings.JSON",
            "/w/.claude/hooks/check.sh",
            "/w/.waymark/hooks/lib/deep.py",
            "/w/.mcp.json",
        ] {
            assert!(is_instructions_file(Path::new(p)), "{p}");
        }
        for p in [
            "/w/settings.json",
            "/w/config/settings.json",
            "/w/.claude/agents/x.md",
            "/w/src/hooks/use_state.ts",
            "/w/.claude",
        ] {
            assert!(!is_instructions_file(Path::new(p)), "{p}");
        }
    }

    #[test]
    fn relative_and_absolute_paths_inside_are_allowed() {
        let f = Fixture::new();
        let a = resolve_write(&f.ctx, "src/new.rs").unwrap();
        assert_eq!(a, f.ws().join("src/new.rs"));
        let abs = f.ws().join("x.txt");
        assert_eq!(resolve_write(&f.ctx, abs.to_str().unwrap()).unwrap(), abs);
        let art = f.ctx.artifacts.join("notes.md");
        assert_eq!(resolve_write(&f.ctx, art.to_str().unwrap()).unwrap(), art);
        assert_eq!(
            resolve_write(&f.ctx, "a//b/./c.txt").unwrap(),
            f.ws().join("a/b/c.txt")
        );
    }

    #[test]
    fn escapes_are_refused() {
        let f = Fixture::new();
        let outside = f.dir.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret"), "s").unwrap();
        symlink(&outside, f.ws().join("link-out")).unwrap();
        symlink(outside.join("secret"), f.ws().join("file-link")).unwrap();
        symlink(f.ws().join("loop-a"), f.ws().join("loop-b")).unwrap();
        symlink(f.ws().join("loop-b"), f.ws().join("loop-a")).unwrap();
        for bad in [
            "../outside/secret",
            "src/../../outside/x",
            "/etc/passwd",
            outside.join("new").to_str().unwrap(),
            "link-out/new.txt",
            "file-link",
            "loop-a",
            "loop-a/x",
            "",
        ] {
            assert!(resolve_write(&f.ctx, bad).is_err(), "{bad} must be refused");
        }
        let e = resolve_write(&f.ctx, "loop-a").unwrap_err().to_string();
        assert!(e.contains("loop"), "{e}");
    }

    /// The second red-team's finding: a private file's new content sat in a temp file others
    /// could read while the write tool wrote it. The temp file has the file's own bits from
    /// its first byte (set-id bits aside), and a link in the file's place lends it none.
    #[test]
    fn a_private_files_new_content_is_never_readable_by_others() {
        use std::os::unix::fs::PermissionsExt as _;
        let f = Fixture::new();
        let mode = |p: &Path| std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777;
        let secret = f.ws().join("secret.env");
        std::fs::write(&secret, "TOKEN=old\n").unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
        let tmp = write_temp(&secret, b"TOKEN=new\n").unwrap();
        assert_eq!(mode(&tmp), 0o600);
        std::fs::remove_file(&tmp).unwrap();
        let tool = f.ws().join("tool");
        std::fs::write(&tool, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o4750)).unwrap();
        write_atomic(&tool, b"#!/bin/sh\necho hi\n").unwrap();
        assert_eq!(mode(&tool), 0o750, "no set-id bit kept");
        let link = f.ws().join("link");
        symlink(&secret, &link).unwrap();
        write_atomic(&link, b"plain\n").unwrap();
        assert_ne!(mode(&link) & 0o777, 0o777, "a link's bits are not lent");
        assert_eq!(mode(&secret), 0o600);
    }

    #[test]
    fn atomic_write_replaces_a_symlink_instead_of_following_it() {
        let f = Fixture::new();
        let outside = f.dir.path().join("victim");
        std::fs::write(&outside, "keep").unwrap();
        let target = f.ws().join("a.txt");
        std::fs::write(&target, "old").unwrap();
        let resolved = resolve_write(&f.ctx, "a.txt").unwrap();
        // A symlink swapped in after the check is replaced, not followed.
        std::fs::remove_file(&target).unwrap();
        symlink(&outside, &target).unwrap();
        write_atomic(&resolved, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "keep");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
    }
}
