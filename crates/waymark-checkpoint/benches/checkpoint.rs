//! Checkpoint cost on a generated workspace of 10,000 files / 200 MB, a git repository
//! with everything committed: the first checkpoint of the tree; then, five files changed
//! per round, a checkpoint against `git status --porcelain` on the same tree in the same
//! run; and how much the store grows per round. Prints; asserts nothing.

#![allow(clippy::unwrap_used, clippy::expect_used)] // benchmark code

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use waymark_checkpoint::{Limits, Store};

const FILES: usize = 10_000;
const DIRS: usize = 100;
const FILE_BYTES: usize = 20 * 1024;
const ROUNDS: usize = 9;

fn git(ws: &Path, args: &[&str]) -> Duration {
    let started = Instant::now();
    let out = Command::new("git")
        .args(args)
        .current_dir(ws)
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.invalid")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.invalid")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    started.elapsed()
}

fn bytes_of(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| {
                    let m = e.metadata().unwrap();
                    if m.is_dir() {
                        bytes_of(&e.path())
                    } else {
                        m.len()
                    }
                })
                .sum()
        })
        .unwrap_or(0)
}

/// This process's CPU time so far, in seconds (all threads).
fn cpu() -> f64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap();
    let f: Vec<&str> = s.rsplit(')').next().unwrap().split_whitespace().collect();
    (f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap()) / 100.0
}

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1000.0
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    for i in 0..FILES {
        let d = ws.join(format!("d{:03}", i % DIRS));
        std::fs::create_dir_all(&d).unwrap();
        // Distinct content per file (nothing shared by chance).
        let line = format!("file {i} of the generated workspace, some text to fill it\n");
        let body = line.repeat(FILE_BYTES / line.len() + 1);
        std::fs::write(
            d.join(format!("f{i:05}.txt")),
            &body.as_bytes()[..FILE_BYTES],
        )
        .unwrap();
    }
    git(&ws, &["init", "-q"]);
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-qm", "generated"]);
    let store = Store::open(&dir.path().join("store")).unwrap();
    let limits = Limits::default();
    let started = Instant::now();
    let cpu0 = cpu();
    let first = store.snapshot(&ws, &limits).unwrap();
    let first_ms = started.elapsed().as_secs_f64() * 1000.0;
    let first_cpu = (cpu() - cpu0) * 1000.0;
    let after_first = bytes_of(&store.dir().join("objects"));
    // Let the files' times fall out of the cache's racy window (60 s: a file written through
    // a memory map shows no new time until the kernel writes it back), as a project's files
    // are between turns; the checkpoint after it is the one whose cache the rounds use.
    std::thread::sleep(Duration::from_secs(61));
    store.snapshot(&ws, &limits).unwrap();
    let (mut ours, mut theirs, mut growth) = (Vec::new(), Vec::new(), Vec::new());
    let mut last = first.tree;
    for round in 0..ROUNDS {
        for k in 0..5 {
            let i = (round * 997 + k * 131) % FILES;
            let p = ws
                .join(format!("d{:03}", i % DIRS))
                .join(format!("f{i:05}.txt"));
            std::fs::write(&p, format!("round {round} changed file {i}\n").repeat(400)).unwrap();
        }
        let before = bytes_of(&store.dir().join("objects"));
        theirs.push(git(&ws, &["status", "--porcelain"]));
        let started = Instant::now();
        let s = store.snapshot(&ws, &limits).unwrap();
        ours.push(started.elapsed());
        growth.push(bytes_of(&store.dir().join("objects")) - before);
        let changed = store.changes(Some(&last), &s.tree).unwrap().len();
        assert_eq!(changed, 5);
        last = s.tree;
    }
    let (o, t) = (median(ours), median(theirs));
    println!(
        "checkpoint/first: {first_ms:.0} ms ({first_cpu:.0} ms CPU on all threads) for {FILES} files / {} MB (target <= 5000 ms); store {} MB",
        FILES * FILE_BYTES / (1024 * 1024),
        after_first / (1024 * 1024)
    );
    println!(
        "checkpoint/turn: {o:.1} ms with 5 files changed, git status --porcelain {t:.1} ms: {:.2}x (targets <= 1.5x and <= 50 ms)",
        o / t
    );
    growth.sort();
    println!(
        "checkpoint/growth: the store grows {} KB per round (median; 5 changed files of ~18 KB, compressed, and their trees)",
        growth[growth.len() / 2] / 1024
    );
}
