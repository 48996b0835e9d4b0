//! Sandbox set-up cost: what confining one shell command adds (target <= 5 ms), measured the
//! way the runtime pays it. Per command the runtime builds the read set (`read_set`), starts
//! the helper with it, and the helper confines itself — file-size limit, Landlock with the
//! listed folders, every capability dropped, two seccomp filters — then execs the command.
//! The same commands run directly and sandboxed, interleaved; the difference of the medians
//! is the set-up, in wall time and CPU time. Also reports the once-per-session layer probe.

#![allow(clippy::unwrap_used, clippy::expect_used)] // benchmark code

mod support;

use std::time::{Duration, Instant};
use support::{median, spawn};
use waymark_config::ShellNetwork;
use waymark_runtime::sandbox::Sandbox;
use waymark_runtime::sandbox::reads::{Private, ReadSet};

const RUNS: usize = 300;

fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (ws, tmp, env, scope) = support::layout(dir.path());
    // What every session pays on its first tool call: the private places outside /etc (the
    // file tools check them); then a sandboxed session's read set, once, and per command.
    let t = Instant::now();
    let private = Private::new(&scope.owner);
    println!(
        "sandbox: private places outside /etc: {:.2} ms once per session",
        t.elapsed().as_secs_f64() * 1000.0
    );
    let t = Instant::now();
    let fixed = ReadSet::new(&scope, &private);
    let once = t.elapsed();
    let mut times = Vec::new();
    let mut listed = 0;
    for _ in 0..RUNS {
        let t = Instant::now();
        listed = fixed.paths(&scope, &[]).len();
        times.push(t.elapsed());
    }
    println!(
        "sandbox: read set of {listed} paths: {:.2} ms once per session, then {:.3} ms per command (median of {RUNS})",
        once.as_secs_f64() * 1000.0,
        median(times)
    );
    let helper = vec![std::ffi::OsString::from(env!(
        "CARGO_BIN_EXE_waymark-sandbox"
    ))];
    let started = Instant::now();
    let sandbox = Sandbox::new(Some(helper), None, tmp, scope);
    assert!(sandbox.probe().complete(), "{:?}", sandbox.probe());
    println!(
        "sandbox: layer probe, once per session: {:.2} ms",
        started.elapsed().as_secs_f64() * 1000.0
    );
    for (name, program, args) in [
        ("true", "/bin/true", vec![]),
        (
            "bash -c 'ls >/dev/null'",
            "/bin/bash",
            vec!["-c", "ls >/dev/null"],
        ),
    ] {
        let direct_argv: Vec<std::ffi::OsString> = std::iter::once(program)
            .chain(args.iter().copied())
            .map(Into::into)
            .collect();
        let (mut direct, mut boxed) = (Vec::new(), Vec::new());
        for _ in 0..RUNS {
            direct.push(spawn(&direct_argv, &env, &ws));
            let t = Instant::now();
            let spec = sandbox
                .spec(Vec::new(), ShellNetwork::Deny, &Default::default())
                .expect("every layer holds");
            let os_args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
            let argv = spec.command_line(std::ffi::OsStr::new(program), &os_args);
            let built = t.elapsed();
            let (wall, cpu) = spawn(&argv, &env, &ws);
            boxed.push((wall + built, cpu + built));
        }
        let part = |v: &[(Duration, Duration)], i: usize| {
            median(v.iter().map(|x| if i == 0 { x.0 } else { x.1 }).collect())
        };
        let wall = part(&boxed, 0) - part(&direct, 0);
        let cpu = part(&boxed, 1) - part(&direct, 1);
        println!(
            "sandbox: {name}: direct {:.2} ms, sandboxed {:.2} ms (medians of {RUNS})",
            part(&direct, 0),
            part(&boxed, 0)
        );
        println!(
            "sandbox: set-up per command ({name}): {wall:.2} ms wall, {cpu:.2} ms CPU  ({}: target <= 5 ms)",
            if wall <= 5.0 { "met" } else { "NOT met" }
        );
    }
}
