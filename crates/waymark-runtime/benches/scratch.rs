//! The scratch layer's cost (issue 39) on a workspace of 10,000 files / 200 MB holding a
//! small Rust crate:
//! - a check's own set-up and tear-down: `/bin/true` in the scratch shell against the same
//!   in the plain sandbox, interleaved, with the layer empty and then holding a build
//!   (target <= 20 ms);
//! - a second `cargo test` in the goal's layer against a plain second `cargo test` in a copy
//!   of the tree (target <= 1.2x): the first is the goal's baseline, whose build is frozen
//!   as the layer's base; the second starts from that base, as every later check does.
//!
//! Prints; asserts nothing.

#![allow(clippy::unwrap_used, clippy::expect_used)] // benchmark code

mod support;

use std::path::Path;
use std::time::{Duration, Instant};
use support::{EnvVar, median, spawn};
use waymark_config::ShellNetwork;
use waymark_runtime::sandbox::Sandbox;
use waymark_runtime::sandbox::scratch::{Keep, Scratch};

const FILES: usize = 10_000;
const DIRS: usize = 100;
const FILE_BYTES: usize = 20 * 1024;
const RUNS: usize = 40;

/// The tree: `FILES` files of `FILE_BYTES` in `DIRS` folders, and a crate with two tests.
fn make_tree(ws: &Path) {
    let chunk: Vec<u8> = (0..FILE_BYTES).map(|i| b'a' + (i % 26) as u8).collect();
    for i in 0..FILES {
        let d = ws.join(format!("data/d{:03}", i % DIRS));
        if i < DIRS {
            std::fs::create_dir_all(&d).unwrap();
        }
        std::fs::write(d.join(format!("f{i:05}.txt")), &chunk).unwrap();
    }
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(
        ws.join("Cargo.toml"),
        "[package]\nname = \"adder\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(
        ws.join("src/lib.rs"),
        "pub fn add(a: i32, b: i32) -> i32 { a + b }\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() { assert_eq!(super::add(2, 2), 4); }\n    #[test]\n    fn zero() { assert_eq!(super::add(0, 0), 0); }\n}\n",
    )
    .unwrap();
    std::fs::write(ws.join(".gitignore"), "target/\n").unwrap();
}

fn scratch_argv(
    sandbox: &Sandbox,
    layer: &Scratch,
    program: &str,
    args: &[&str],
) -> Vec<std::ffi::OsString> {
    let mut spec = sandbox
        .spec(Vec::new(), ShellNetwork::Deny, &Default::default())
        .expect("every layer holds");
    spec.scratch = Some(layer.clone());
    let args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
    spec.command_line(std::ffi::OsStr::new(program), &args)
}

fn plain_argv(sandbox: &Sandbox, program: &str) -> Vec<std::ffi::OsString> {
    let spec = sandbox
        .spec(Vec::new(), ShellNetwork::Deny, &Default::default())
        .expect("every layer holds");
    spec.command_line(std::ffi::OsStr::new(program), &[])
}

/// The scratch shell's own cost per command: scratch against plain, medians of `RUNS`.
fn set_up(sandbox: &Sandbox, layer: &Scratch, env: &[EnvVar], ws: &Path, what: &str) {
    let (mut plain, mut scratch) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        plain.push(spawn(&plain_argv(sandbox, "/bin/true"), env, ws).0);
        scratch.push(spawn(&scratch_argv(sandbox, layer, "/bin/true", &[]), env, ws).0);
    }
    let (p, s) = (median(plain), median(scratch));
    let cost = s - p;
    println!(
        "scratch: set-up and tear-down per check ({what}): {cost:.2} ms (scratch {s:.2} ms, plain sandbox {p:.2} ms; medians of {RUNS}; target <= 20 ms: {})",
        if cost <= 20.0 { "met" } else { "NOT met" }
    );
}

/// How many times a second run is timed (the median is taken).
const SECOND_RUNS: usize = 9;

/// The median time of `run` over [`SECOND_RUNS`] runs, after `first` ran once.
fn second_cargo_test(first: impl FnOnce() -> Duration, run: impl Fn() -> Duration) -> Duration {
    let first = first();
    let seconds: Vec<Duration> = (0..SECOND_RUNS).map(|_| run()).collect();
    let second = Duration::from_secs_f64(median(seconds) / 1000.0);
    println!(
        "  first {:.0} ms, then a median of {:.0} ms over {SECOND_RUNS} runs",
        first.as_secs_f64() * 1000.0,
        second.as_secs_f64() * 1000.0
    );
    second
}

fn cargo_test(argv: &[std::ffi::OsString], env: &[EnvVar], cwd: &Path) -> Duration {
    let started = Instant::now();
    let out = std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .current_dir(cwd)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("2 passed"),
        "cargo test failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    started.elapsed()
}

fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (ws, tmp, env, scope) = support::layout(dir.path());
    let t = Instant::now();
    make_tree(&ws);
    println!(
        "scratch: a tree of {FILES} files / {} MB made in {:.1} s",
        FILES * FILE_BYTES / (1024 * 1024),
        t.elapsed().as_secs_f64()
    );
    let helper = vec![std::ffi::OsString::from(env!(
        "CARGO_BIN_EXE_waymark-sandbox"
    ))];
    let sandbox = Sandbox::new(Some(helper), None, tmp.clone(), scope);
    assert!(sandbox.probe().complete(), "{:?}", sandbox.probe());
    let layer = Scratch {
        workspace: ws.clone(),
        layer: dir.path().join("data/sessions/s1/scratch/goal-bench"),
        max_bytes: 8192 << 20,
        keep: Keep::Nothing,
    };
    let mut env = env;
    env.push(("TMPDIR".into(), tmp.clone().into_os_string()));
    set_up(&sandbox, &layer, &env, &ws, "empty layer");

    // A plain second `cargo test` in a copy of the tree (its own target/).
    let copy = dir.path().join("copy");
    let ok = std::process::Command::new("cp")
        .args(["-a"])
        .arg(&ws)
        .arg(&copy)
        .status()
        .unwrap();
    assert!(ok.success());
    let cargo = ["test", "--offline", "-q"];
    let plain_cargo: Vec<std::ffi::OsString> = std::iter::once("cargo")
        .chain(cargo)
        .map(Into::into)
        .collect();
    println!("scratch: cargo test in a copy of the tree:");
    let plain = second_cargo_test(
        || cargo_test(&plain_cargo, &env, &copy),
        || cargo_test(&plain_cargo, &env, &copy),
    );
    println!("scratch: cargo test in the goal's scratch layer (baseline, then a check):");
    let mut baseline = layer.clone();
    baseline.keep = Keep::BuildOutput;
    let in_layer = second_cargo_test(
        || {
            let t = cargo_test(
                &scratch_argv(&sandbox, &baseline, "cargo", &cargo),
                &env,
                &ws,
            );
            baseline.freeze().unwrap();
            t
        },
        || cargo_test(&scratch_argv(&sandbox, &layer, "cargo", &cargo), &env, &ws),
    );
    let ratio = in_layer.as_secs_f64() / plain.as_secs_f64();
    println!(
        "scratch: second cargo test in the layer / in a copy: {ratio:.2}x ({:.0} ms / {:.0} ms; target <= 1.2x: {})",
        in_layer.as_secs_f64() * 1000.0,
        plain.as_secs_f64() * 1000.0,
        if ratio <= 1.2 { "met" } else { "NOT met" }
    );
    set_up(&sandbox, &layer, &env, &ws, "over a frozen cargo build");
}
