//! The scratch layer on disk: the folder that holds what a scratch-shell command wrote over
//! the workspace (an overlayfs upper layer, see [`crate::mount`]). It is kept between the
//! commands of one owner (a goal's checks, a session's plan-mode shell), so a second build
//! reuses the first one's output, and dropped when the owner ends.
//!
//! Layout: `upper/` (the changes), `work/` (overlayfs's own), `lock` (one command at a time:
//! two mounts over one upper layer are undefined).

use std::path::{Path, PathBuf};

/// A scratch layer and the workspace it lies over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scratch {
    /// The workspace the command sees, read-only underneath.
    pub workspace: PathBuf,
    /// The layer's folder (private to the user).
    pub layer: PathBuf,
    /// The most the layer may hold (bytes on disk); past it the command is stopped and the
    /// layer emptied before the next one.
    pub max_bytes: u64,
    /// What the layer keeps from one command to the next.
    pub keep: Keep,
}

/// What a layer keeps between commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Keep {
    /// Everything a command wrote, but what the workspace changed since (plan mode: a
    /// file made by one command is there for the next).
    #[default]
    All,
    /// Only build output and caches (`target/`, `node_modules/`, `__pycache__/`, lock
    /// files…): a goal's baseline run, whose build is then frozen as the layer's base.
    BuildOutput,
    /// Nothing: the command starts from the frozen base alone. A goal's checks after the
    /// baseline, so no output of code from an earlier state of the workspace (a planted
    /// `.pyc`, a changed test binary, a `conftest.py`) reaches the run that decides (G-51).
    Nothing,
}

/// Folders (anywhere) and files a build or a test runner makes and reads back: what a
/// [`Keep::BuildOutput`] layer keeps.
const BUILD_OUTPUT: &[&str] = &[
    "target",
    "node_modules",
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".tox",
    ".nox",
    ".venv",
    "venv",
    "dist",
    "build",
    "_build",
    ".gradle",
    ".next",
    ".nuxt",
    ".svelte-kit",
    ".turbo",
    ".parcel-cache",
    ".cache",
    "coverage",
    ".hypothesis",
    ".eggs",
    ".dart_tool",
    "zig-cache",
    "zig-out",
    "Cargo.lock",
    "package-lock.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "poetry.lock",
    "go.sum",
    ".coverage",
];

/// Why a layer could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ScratchError {
    #[error("the scratch layer {path} could not be prepared: {source}")]
    Prepare {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "the path {0} holds a comma, colon, backslash or line break, which overlayfs cannot take; the scratch shell is not available for it"
    )]
    UnmountablePath(PathBuf),
}

impl Scratch {
    pub fn upper(&self) -> PathBuf {
        self.layer.join("upper")
    }

    pub fn work(&self) -> PathBuf {
        self.layer.join("work")
    }

    /// Makes the layer's folders (private), and checks the paths can be given to overlayfs.
    pub fn prepare(&self) -> Result<(), ScratchError> {
        for p in [&self.workspace, &self.layer] {
            let s = p.as_os_str().as_encoded_bytes();
            if s.iter().any(|b| matches!(b, b',' | b':' | b'\\' | b'\n')) {
                return Err(ScratchError::UnmountablePath(p.clone()));
            }
        }
        let private = |p: &Path| {
            use std::os::unix::fs::DirBuilderExt as _;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(p)
                .map_err(|source| ScratchError::Prepare {
                    path: p.to_path_buf(),
                    source,
                })
        };
        private(&self.layer)?;
        private(&self.upper())?;
        private(&self.work())
    }

    /// Holds the layer's lock until the returned file is closed (blocking while another
    /// command has it).
    pub fn lock(&self) -> Result<std::fs::File, ScratchError> {
        // Beside the layer, never removed: a discard that removed it while a command waited
        // on it would let the next command lock a new file and mount the layer alongside.
        let path = self.layer.with_extension("lock");
        let err = |source| ScratchError::Prepare {
            path: path.clone(),
            source,
        };
        use std::os::unix::fs::OpenOptionsExt as _;
        let f = std::fs::OpenOptions::new()
            .mode(0o600)
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(err)?;
        use std::os::fd::AsRawFd as _;
        loop {
            #[allow(unsafe_code)]
            // SAFETY: flock(2) on a descriptor this function owns; no memory is passed.
            let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) };
            if rc == 0 {
                return Ok(f);
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(err(e));
            }
        }
    }

    /// What the layer holds now: bytes on disk and entries (see [`crate::temp::usage`]).
    pub fn usage(&self) -> (u64, u64) {
        crate::temp::usage(&self.upper(), self.max_bytes)
    }

    /// Makes the layer fit to mount again (the lock held): emptied when it is over its cap;
    /// overlayfs's leftovers from the last mount removed (a `volatile` mount refuses to
    /// mount over them); and every change it holds to a path the workspace changed since
    /// dropped, so the next command sees the workspace's newer file, not its stale copy.
    pub fn refresh(&self) -> std::io::Result<()> {
        if crate::temp::over(&self.upper(), self.max_bytes) {
            remove_tree(&self.upper())?;
            std::fs::create_dir(self.upper())?;
        }
        match remove_tree(&self.work().join("work")) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        match self.keep {
            Keep::All => drop_stale(&self.workspace, &self.upper()),
            Keep::BuildOutput => keep_build_output(&self.upper()),
            Keep::Nothing => {
                remove_tree(&self.upper())?;
                std::fs::create_dir(self.upper())
            }
        }
    }

    /// The frozen base: build output of a trusted run, a read-only layer under the changes.
    pub fn base(&self) -> PathBuf {
        self.layer.join("base")
    }

    /// Freezes what the layer holds, pruned to build output and caches, as its base (the
    /// one before goes), and starts the changes empty: the goal's baseline build, made by
    /// the user's code as it was when the goal started, stays for every later check.
    pub fn freeze(&self) -> std::io::Result<()> {
        if !self.layer.exists() {
            return Ok(());
        }
        let lock = self.lock().map_err(std::io::Error::other)?;
        keep_build_output(&self.upper())?;
        remove_tree(&self.base())?;
        std::fs::rename(self.upper(), self.base())?;
        {
            use std::os::unix::fs::DirBuilderExt as _;
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(self.upper())?;
        }
        drop(lock);
        Ok(())
    }

    /// Removes the layer (the lock held while it goes).
    pub fn discard(&self) -> std::io::Result<()> {
        if !self.layer.exists() {
            return Ok(());
        }
        let lock = self.lock().map_err(std::io::Error::other)?;
        remove_tree(&self.upper())?;
        remove_tree(&self.base())?;
        remove_tree(&self.work())?;
        drop(lock);
        // A command that waited for the lock makes the folders again; then they stay.
        match std::fs::remove_dir(&self.layer) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(_) if self.upper().exists() => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// The change time of a file's metadata, in nanoseconds.
fn ctime(m: &std::fs::Metadata) -> i128 {
    use std::os::unix::fs::MetadataExt as _;
    i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec())
}

/// Whether `m` is an overlayfs whiteout (a character device 0:0): a deletion.
fn whiteout(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _};
    m.file_type().is_char_device() && m.rdev() == 0
}

/// Whether the upper folder `dir` hides the lower folder under it entirely.
fn opaque(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt as _;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    let mut v = [0u8; 4];
    #[allow(unsafe_code)]
    // SAFETY: lgetxattr(2) reads a NUL-terminated path and a NUL-terminated name, and
    // writes at most `v.len()` bytes into `v`.
    let n = unsafe {
        libc::lgetxattr(
            c.as_ptr(),
            c"user.overlay.opaque".as_ptr(),
            v.as_mut_ptr().cast(),
            v.len(),
        )
    };
    n > 0 && v[0] == b'y'
}

/// Drops every entry of `upper` whose workspace counterpart changed after it was written
/// (copied up, written, deleted by the command), walking only folders both sides have.
fn drop_stale(workspace: &Path, upper: &Path) -> std::io::Result<()> {
    let mut todo = vec![PathBuf::new()];
    while let Some(rel) = todo.pop() {
        let Ok(list) = std::fs::read_dir(upper.join(&rel)) else {
            continue;
        };
        for e in list.flatten() {
            let rel = rel.join(e.file_name());
            let (Ok(up), Ok(low)) = (
                e.path().symlink_metadata(),
                workspace.join(&rel).symlink_metadata(),
            ) else {
                // Made by the command alone: nothing of the workspace's is hidden by it.
                continue;
            };
            let newer = ctime(&low) > ctime(&up);
            if up.is_dir() && low.is_dir() && !opaque(&e.path()) && !whiteout(&up) {
                // A merged folder: its entries are judged one by one.
                todo.push(rel);
            } else if newer {
                remove_tree(&e.path())?;
            }
        }
    }
    Ok(())
}

/// Drops every entry of `upper` but build output and caches ([`BUILD_OUTPUT`], and
/// `*.egg-info`), whatever made it: a change, a new file, a deletion.
fn keep_build_output(upper: &Path) -> std::io::Result<()> {
    prune(upper, 0).map(|_| ())
}

/// [`keep_build_output`] under `dir`; whether `dir` is empty afterwards (an empty folder
/// left in the layer goes too: the workspace's own shows through, or none).
fn prune(dir: &Path, depth: usize) -> std::io::Result<bool> {
    // Deeper than any real tree: removed whole rather than walked further.
    if depth > 256 {
        remove_tree(dir)?;
        return Ok(true);
    }
    let mut empty = true;
    for e in std::fs::read_dir(dir)?.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if BUILD_OUTPUT.contains(&name.as_ref()) || name.ends_with(".egg-info") {
            empty = false;
            continue;
        }
        let path = e.path();
        match path.symlink_metadata() {
            // A folder merged with the workspace's: its entries are judged one by one.
            Ok(m) if m.is_dir() && !opaque(&path) => {
                if prune(&path, depth + 1)? {
                    std::fs::remove_dir(&path)?;
                } else {
                    empty = false;
                }
            }
            Ok(_) => remove_tree(&path)?,
            Err(_) => {}
        }
    }
    Ok(empty)
}

/// Removes `path` (a file, link or folder tree, links never followed). Folders overlayfs
/// made without permissions (its work folder) are opened up first.
pub fn remove_tree(path: &Path) -> std::io::Result<()> {
    let m = match path.symlink_metadata() {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    if !m.is_dir() {
        return std::fs::remove_file(path);
    }
    if std::fs::remove_dir_all(path).is_ok() {
        return Ok(());
    }
    // Open up every folder (never through a link), then try again.
    let mut todo = vec![path.to_path_buf()];
    while let Some(d) = todo.pop() {
        use std::os::unix::fs::PermissionsExt as _;
        let _ = std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700));
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                todo.push(e.path());
            }
        }
    }
    std::fs::remove_dir_all(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(dir: &Path) -> Scratch {
        let s = Scratch {
            workspace: dir.join("ws"),
            layer: dir.join("layer"),
            max_bytes: 1 << 20,
            keep: Keep::All,
        };
        std::fs::create_dir_all(&s.workspace).unwrap();
        s.prepare().unwrap();
        s
    }

    /// A copy the command made goes once the workspace's file changes after it; one of a
    /// file left alone, and what the command made itself, stay.
    #[test]
    fn a_change_to_a_file_the_workspace_changed_since_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let s = layer(dir.path());
        std::fs::create_dir_all(s.workspace.join("src")).unwrap();
        std::fs::write(s.workspace.join("src/lib.rs"), "old").unwrap();
        std::fs::write(s.workspace.join("README"), "same").unwrap();
        std::fs::create_dir_all(s.upper().join("src")).unwrap();
        std::fs::create_dir_all(s.upper().join("target/debug")).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(s.upper().join("src/lib.rs"), "copied").unwrap();
        std::fs::write(s.upper().join("README"), "copied").unwrap();
        std::fs::write(s.upper().join("target/debug/app"), "built").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(s.workspace.join("src/lib.rs"), "the agent's edit").unwrap();
        s.refresh().unwrap();
        assert!(
            !s.upper().join("src/lib.rs").exists(),
            "the stale copy went"
        );
        assert!(
            s.upper().join("README").exists(),
            "an unchanged file's copy stays"
        );
        assert!(
            s.upper().join("target/debug/app").exists(),
            "a build output stays"
        );
    }

    #[test]
    fn a_layer_over_its_cap_is_emptied_and_a_discarded_one_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let s = layer(dir.path());
        std::fs::write(s.upper().join("big"), vec![1u8; 2 << 20]).unwrap();
        // overlayfs's work folder is made without permissions.
        std::fs::create_dir_all(s.work().join("work/inner")).unwrap();
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(
                s.work().join("work"),
                std::fs::Permissions::from_mode(0o000),
            )
            .unwrap();
        }
        s.refresh().unwrap();
        assert_eq!(std::fs::read_dir(s.upper()).unwrap().count(), 0);
        assert!(!s.work().join("work").exists());
        std::fs::write(s.upper().join("x"), "y").unwrap();
        s.discard().unwrap();
        assert!(!s.layer.exists());
        assert!(s.workspace.exists(), "the workspace is never touched");
    }

    #[test]
    fn paths_overlayfs_cannot_take_are_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let s = Scratch {
            workspace: dir.path().join("a,b"),
            layer: dir.path().join("layer"),
            max_bytes: 1,
            keep: Keep::All,
        };
        let e = s.prepare().unwrap_err().to_string();
        assert!(e.contains("a,b") && e.contains("comma"), "{e}");
    }
}
