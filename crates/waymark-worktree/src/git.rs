//! Running the real `git` on a checkout: every call names its folder, never inherits a
//! repository from the environment, and reports git's own words when it fails.

use crate::{Result, WorktreeError};
use std::path::Path;
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

/// `git <args>` in `dir`, with `env` added.
pub(crate) fn run_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<Output> {
    let mut c = Command::new("git");
    c.arg("-C").arg(dir).args(args);
    for v in REPO_VARS {
        c.env_remove(v);
    }
    // Never stop to ask (a credential prompt, an editor for a merge message).
    c.env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_EDITOR", "true")
        .env("GIT_MERGE_AUTOEDIT", "no");
    for (k, v) in env {
        c.env(k, v);
    }
    c.stdin(std::process::Stdio::null());
    c.output().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => WorktreeError::NoGit,
        _ => WorktreeError::Io {
            path: dir.display().to_string(),
            source: e,
        },
    })
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
