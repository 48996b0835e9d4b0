//! Running the real `git` on a checkout: every call names its folder, never inherits a
//! repository from the environment, and reports git's own words when it fails.

use crate::{Result, WorktreeError};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Variables that would point git at another repository than the folder named.
const REPO_VARS: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES",
];

/// A worktree as Waymark hands it to git: its folder and its own git folder in the project's
/// `.git/worktrees/`, found from the project's side. The worktree's `.git` file is never
/// read: it is in the agent's workspace, and a `.git` pointing at a git folder of the agent's
/// making would have git run whatever program that folder's settings name (`core.fsmonitor`,
/// `diff.external`, hooks) outside the sandbox.
pub(crate) struct Worktree {
    pub work: PathBuf,
    pub gitdir: PathBuf,
}

/// Longest `gitdir` file read (it holds one path).
const GITDIR_FILE_MAX: u64 = 8 * 1024;

impl Worktree {
    /// The worktree at `work` of the project checked out at `repo`, as the project's own git
    /// folder records it.
    pub(crate) fn of(repo: &Path, work: &Path) -> Result<Worktree> {
        let common = run(
            repo,
            &["rev-parse", "--path-format=absolute", "--git-common-dir"],
        )?;
        let admin = Path::new(common.trim()).join("worktrees");
        let work = work.canonicalize().map_err(|e| WorktreeError::Io {
            path: work.display().to_string(),
            source: e,
        })?;
        let entries = std::fs::read_dir(&admin).map_err(|e| WorktreeError::Io {
            path: admin.display().to_string(),
            source: e,
        })?;
        for e in entries.flatten() {
            let Ok(f) = std::fs::File::open(e.path().join("gitdir")) else {
                continue;
            };
            let mut text = String::new();
            use std::io::Read as _;
            if f.take(GITDIR_FILE_MAX).read_to_string(&mut text).is_err() {
                continue;
            }
            // It names the worktree's `.git`: the worktree is the folder holding it.
            let named = Path::new(text.trim());
            let folder = named.parent().and_then(|p| p.canonicalize().ok());
            if named.file_name() == Some(std::ffi::OsStr::new(".git"))
                && folder.as_deref() == Some(work.as_path())
            {
                return Ok(Worktree {
                    work,
                    gitdir: e.path(),
                });
            }
        }
        Err(WorktreeError::Unregistered {
            path: work.display().to_string(),
            repo: repo.display().to_string(),
        })
    }

    /// `git <args>` on this worktree, with `env` added.
    pub(crate) fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> Result<Output> {
        let git_dir = format!("--git-dir={}", self.gitdir.display());
        let work_tree = format!("--work-tree={}", self.work.display());
        run_with(
            &self.work,
            &[git_dir.as_str(), work_tree.as_str()],
            args,
            env,
        )
    }

    /// `git <args>` on this worktree, which must succeed: its standard output.
    pub(crate) fn run(&self, args: &[&str]) -> Result<String> {
        ok(&self.work, args, self.run_env(args, &[])?)
    }

    /// Puts the worktree's `.git` file back as git wrote it (whatever the agent left there
    /// is removed, never written through), so git's own commands accept the worktree.
    pub(crate) fn restore_link(&self) -> Result<()> {
        let dot = self.work.join(".git");
        let io = |e| WorktreeError::Io {
            path: dot.display().to_string(),
            source: e,
        };
        match std::fs::symlink_metadata(&dot) {
            Ok(m) if m.is_dir() => std::fs::remove_dir_all(&dot).map_err(io)?,
            Ok(_) => std::fs::remove_file(&dot).map_err(io)?,
            Err(_) => {}
        }
        use std::io::Write as _;
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&dot)
            .and_then(|mut f| writeln!(f, "gitdir: {}", self.gitdir.display()))
            .map_err(io)
    }
}

/// Settings keys that name a program git would run on a file's content, or make a filter's
/// absence an error: each is set empty (or false) on every call. An agent that can run git in
/// its worktree writes the project's shared settings, so these may be its own.
const PROGRAM_KEYS: &str =
    r"^(filter|merge|diff)\..+\.(clean|smudge|process|driver|textconv|command|required)$";

/// A git command in `dir` with `repo` (the options choosing the repository) first, every
/// variable that would point it elsewhere removed, and no prompt.
fn command(dir: &Path, repo: &[&str]) -> Command {
    let mut c = Command::new("git");
    c.arg("-C").arg(dir).args(repo);
    for v in REPO_VARS {
        c.env_remove(v);
    }
    // Never stop to ask (a credential prompt, an editor for a merge message); never read
    // replacement objects or grafts, which would show one content and commit another.
    c.env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_EDITOR", "true")
        .env("GIT_MERGE_AUTOEDIT", "no")
        .env("GIT_NO_REPLACE_OBJECTS", "1")
        .env("GIT_GRAFT_FILE", "/dev/null");
    // Programs git starts are found on the PATH's absolute folders only: a relative one
    // (`node_modules/.bin`) would be looked up in the worktree git works in.
    if let Some(path) = std::env::var_os("PATH") {
        let kept: Vec<PathBuf> = std::env::split_paths(&path)
            .filter(|p| p.is_absolute())
            .collect();
        if let Ok(joined) = std::env::join_paths(kept) {
            c.env("PATH", joined);
        }
    }
    c.stdin(std::process::Stdio::null());
    c
}

/// `-c` settings that switch off, for one call, every program the repository's settings
/// name for file content (filter drivers, merge drivers, textconv, external diff), the
/// attributes file they could name, hooks and the file-system monitor.
fn neutral(dir: &Path, repo: &[&str]) -> Result<Vec<String>> {
    let mut out: Vec<String> = [
        "core.hooksPath=/dev/null",
        "core.fsmonitor=false",
        "core.attributesFile=/dev/null",
        "diff.external=",
        "core.useReplaceRefs=false",
    ]
    .iter()
    .flat_map(|kv| ["-c".to_string(), kv.to_string()])
    .collect();
    let listed = command(dir, repo)
        .args([
            "config",
            "--null",
            "--name-only",
            "--get-regexp",
            PROGRAM_KEYS,
        ])
        .output()
        .map_err(|e| io_error(dir, e))?;
    // Exit 1: none set.
    for key in String::from_utf8_lossy(&listed.stdout)
        .split('\0')
        .map(str::trim)
        .filter(|k| !k.is_empty())
    {
        out.push("-c".into());
        out.push(if key.ends_with(".required") {
            format!("{key}=false")
        } else {
            format!("{key}=")
        });
    }
    Ok(out)
}

fn io_error(dir: &Path, e: std::io::Error) -> WorktreeError {
    match e.kind() {
        std::io::ErrorKind::NotFound => WorktreeError::NoGit,
        _ => WorktreeError::Io {
            path: dir.display().to_string(),
            source: e,
        },
    }
}

/// `git <args>` in `dir`, with `env` added. No hook, no file-system monitor, and no program
/// the repository's settings name for file content runs, in the worktree or in the user's
/// checkout: a relative `core.hooksPath` (husky's `.husky/_`) or `core.fsmonitor` in the
/// user's settings names a program in the folder git works in, which in a worktree the agent
/// wrote, and the agent's git calls in its worktree write the project's shared settings.
pub(crate) fn run_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<Output> {
    run_with(dir, &[], args, env)
}

/// [`run_env`] with `repo`, the options choosing the repository, first.
fn run_with(dir: &Path, repo: &[&str], args: &[&str], env: &[(&str, &str)]) -> Result<Output> {
    let neutral = neutral(dir, repo)?;
    let mut c = command(dir, &[]);
    c.args(&neutral).args(repo).args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().map_err(|e| io_error(dir, e))
}

/// `git <args>` in `dir`, which must succeed: its standard output.
pub(crate) fn run(dir: &Path, args: &[&str]) -> Result<String> {
    ok(dir, args, run_env(dir, args, &[])?)
}

/// The output of a call that must have succeeded.
pub(crate) fn ok(dir: &Path, args: &[&str], out: Output) -> Result<String> {
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    Err(WorktreeError::Git {
        command: format!("git {}", args.join(" ")),
        dir: dir.display().to_string(),
        message: said(&out),
    })
}

/// What git said on failure, on a few lines.
pub(crate) fn said(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr);
    let text = if err.trim().is_empty() {
        String::from_utf8_lossy(&out.stdout).into_owned()
    } else {
        err.into_owned()
    };
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(8)
        .collect();
    lines.join("\n")
}

/// The NUL-separated paths of a `-z` listing.
pub(crate) fn paths(z: &str) -> Vec<String> {
    z.split('\0')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}

/// Whether the git installed takes `--attr-source` (2.40 and later), asked once.
pub(crate) fn has_attr_source() -> bool {
    static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HAS.get_or_init(|| {
        let Ok(out) = Command::new("git").arg("--version").output() else {
            return false;
        };
        let text = String::from_utf8_lossy(&out.stdout);
        let mut nums = text
            .split_whitespace()
            .nth(2)
            .unwrap_or("")
            .split('.')
            .map(|n| n.parse::<u32>().unwrap_or(0));
        let (major, minor) = (nums.next().unwrap_or(0), nums.next().unwrap_or(0));
        (major, minor) >= (2, 40)
    })
}

/// `--attr-source=<commit>` where git takes it (2.40 and later): attributes then come from
/// that commit alone, never from a work tree's `.gitattributes` (older git reads those).
pub(crate) fn attr_source(commit: &str) -> Vec<String> {
    if has_attr_source() {
        vec![format!("--attr-source={commit}")]
    } else {
        Vec::new()
    }
}
