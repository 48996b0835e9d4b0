//! What the sandbox benchmarks share: a session's folders and read scope in a temporary
//! folder, and timing one command (wall and CPU time).

#![allow(dead_code)] // each benchmark uses what it needs

use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use waymark_runtime::sandbox::new_session;
use waymark_runtime::sandbox::reads::ReadScope;
pub use waymark_test_support::sandbox_layout::EnvVar;

/// Under `root`: a session's folders (see `waymark_test_support::sandbox_layout`); returns
/// the workspace, the temp folder, the environment commands get and the read scope.
pub fn layout(root: &Path) -> (PathBuf, PathBuf, Vec<EnvVar>, ReadScope) {
    let l = waymark_test_support::sandbox_layout::layout(root);
    (l.ws, l.tmp, l.env, l.scope)
}

/// Wall time and CPU time (user + system of the child) of one command.
pub fn spawn(
    argv: &[std::ffi::OsString],
    env: &[EnvVar],
    cwd: &std::path::Path,
) -> (Duration, Duration) {
    let started = Instant::now();
    let mut cmd = std::process::Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .current_dir(cwd)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    new_session(&mut cmd);
    // Reaped by wait4 below, which also gives the child's CPU time.
    #[allow(clippy::zombie_processes)]
    let child = cmd.spawn().expect("spawn");
    let (status, cpu) = wait4(child.id() as i32);
    let wall = started.elapsed();
    assert!(
        status.success(),
        "{argv:?} failed: {:?}",
        status.code().or(status.signal())
    );
    (wall, cpu)
}

#[allow(unsafe_code)]
pub fn wait4(pid: i32) -> (std::process::ExitStatus, Duration) {
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value; wait4(2) fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is a child this process started and has not waited for.
    let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(rc, pid, "wait4");
    let t = |tv: libc::timeval| {
        Duration::from_secs(tv.tv_sec as u64) + Duration::from_micros(tv.tv_usec as u64)
    };
    (
        std::process::ExitStatus::from_raw(status),
        t(usage.ru_utime) + t(usage.ru_stime),
    )
}

pub fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1000.0
}
