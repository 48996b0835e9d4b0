//! Upgrade keeps everything: a data folder written by the release before the crate split
//! (`tests/fixtures/upgrade-v0`, made by its `make.py`) opens with this build, every read
//! command prints what it printed then, and the sessions then go on as usual.

use super::support::{pending_in, text};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Sessions store absolute paths, so the copy goes back where the fixture was made.
const ROOT: &str = "/tmp/waymark-fixture-v0";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/upgrade-v0")
}

/// Holds the fixture's fixed root for one test at a time (tests run in parallel processes).
pub struct RootLock(#[allow(dead_code)] std::fs::File);

/// Takes the root, and puts a fresh copy of the fixture there.
pub fn fresh_root() -> RootLock {
    use std::os::fd::AsRawFd as _;
    let lock = std::fs::File::create(format!("{ROOT}.lock")).unwrap();
    #[allow(unsafe_code)]
    // SAFETY: flock(2) on a descriptor this function owns; released when the file closes.
    let taken = unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) };
    assert_eq!(taken, 0, "could not lock {ROOT}.lock");
    let _ = std::fs::remove_dir_all(ROOT);
    copy_dir(&fixture().join("root"), Path::new(ROOT));
    RootLock(lock)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

pub fn sessions() -> BTreeMap<String, String> {
    serde_json::from_str(
        &std::fs::read_to_string(fixture().join("expected/sessions.json")).unwrap(),
    )
    .unwrap()
}

fn waymark(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_waymark"))
        .args(["--data-dir", &format!("{ROOT}/data")])
        .args(["--config", &format!("{ROOT}/settings.json")])
        .args(args)
        .env_remove("WAYMARK_DATA_DIR")
        .env_remove("WAYMARK_CONFIG")
        .env_remove("WAYMARK_LOG")
        .output()
        .unwrap()
}

fn printed(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// What the session list prints now, without the fields added since the fixture was made
/// (`needs_you`), in the old release's order: everything it printed is still printed so.
fn without_new_fields(now: &str, then: &str) -> String {
    /// Fields added since the fixture was made: what a session needs of the user, and what
    /// its calls cost (issue 23).
    const NEW: &[&str] = &[
        "needs_you",
        "spend",
        "cost_usd",
        "cost",
        "cost_unpriced_calls",
    ];
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                for k in NEW {
                    m.remove(*k);
                }
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let (Ok(mut new), Ok(old)) = (
        serde_json::from_str::<Value>(now),
        serde_json::from_str::<Value>(then),
    ) else {
        return now.to_string();
    };
    strip(&mut new);
    if new == old {
        then.to_string()
    } else {
        now.to_string()
    }
}

/// The read commands `make.py` ran, each with the file holding what it printed.
fn reads(sessions: &BTreeMap<String, String>) -> Vec<(String, Vec<String>)> {
    let mut out = vec![("sessions.out".to_string(), vec!["sessions", "--json"])];
    let mut owned = Vec::new();
    for (name, sid) in sessions {
        for (file, args) in [
            ("show.json", vec!["show", "--session", sid, "--json"]),
            ("events.jsonl", vec!["events", "--session", sid]),
            (
                "plan-list.json",
                vec!["plan", "list", "--session", sid, "--json"],
            ),
            (
                "plan-show.json",
                vec!["plan", "show", "--session", sid, "--json"],
            ),
            (
                "plan-comments.json",
                vec!["plan", "comments", "--session", sid, "--json"],
            ),
            (
                "goal-show.json",
                vec!["goal", "show", "--session", sid, "--json"],
            ),
            (
                "goal-events.jsonl",
                vec!["goal", "events", "--session", sid],
            ),
        ] {
            owned.push((format!("{name}.{file}"), args));
        }
    }
    out.extend(owned);
    out.into_iter()
        .map(|(f, a)| (f, a.into_iter().map(str::to_string).collect()))
        .collect()
}

/// What the release before printed, with the fields renamed since: a permission question's
/// `plan_mode` flag is its grant `scope` now (absent when it has none, as in the fixture).
fn renamed(then: &str) -> String {
    then.lines()
        .filter(|l| l.trim() != r#""plan_mode": false,"#)
        .map(|l| format!("{}\n", l.replace(r#""plan_mode":false,"#, "")))
        .collect()
}

fn events(sid: &str) -> Vec<Value> {
    let out = waymark(&["events", "--session", sid]);
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn pending(sid: &str) -> String {
    let out = waymark(&["show", "--session", sid, "--json"]);
    pending_in(&serde_json::from_slice(&out.stdout).unwrap())
}

#[test]
fn a_data_folder_of_the_release_before_the_split_reads_and_writes_as_before() {
    let _root = fresh_root();
    let sessions = sessions();
    let expected = fixture().join("expected");
    for (file, args) in reads(&sessions) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let then = renamed(&std::fs::read_to_string(expected.join(&file)).unwrap());
        let now = without_new_fields(&printed(&waymark(&args)), &then);
        pretty_assertions::assert_eq!(now, then, "`waymark {}` ({file})", args.join(" "));
    }

    // The chat's open question is answered; its queued message runs next, under the two
    // grants the user gave before the upgrade (no question), and its log goes on in order.
    let chat = &sessions["chat"];
    let before = events(chat).len();
    let out = waymark(&["answer", "--session", chat, &pending(chat), "allow_once"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let all = events(chat);
    let seqs: Vec<u64> = all.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    let new = &all[before..];
    let ran: Vec<(&str, &str)> = new
        .iter()
        .filter(|e| e["type"] == "tool.result")
        .map(|e| (e["name"].as_str().unwrap(), e["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        ran,
        [("bash", "ok"), ("bash", "ok"), ("bash", "ok")],
        "{new:#?}"
    );
    assert!(
        !new.iter().any(|e| e["type"] == "questionnaire.opened"),
        "a grant from before the upgrade did not cover its command: {new:#?}"
    );
    assert!(Path::new(ROOT).join("ws/tidy.txt").exists());

    // The blocked goal takes the reply and completes.
    let blocked = &sessions["blocked"];
    let out = waymark(&[
        "goal",
        "reply",
        "--session",
        blocked,
        "--text",
        "Escape them.",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let out = waymark(&["goal", "show", "--session", blocked, "--json"]);
    let goal: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(goal["goal"]["status"], "complete", "{goal}");

    // The approved plan exports again; the deferred one still waits for its review.
    let plan = &sessions["plan"];
    let out = waymark(&[
        "plan",
        "export",
        "--session",
        plan,
        "--path",
        "docs/plans/again.md",
        "--yes",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(Path::new(ROOT).join("ws/docs/plans/again.md")).unwrap(),
        std::fs::read_to_string(Path::new(ROOT).join("ws/docs/plans/louder.md")).unwrap()
    );
    let deferred = &sessions["deferred"];
    let out = waymark(&["plan", "list", "--session", deferred]);
    assert!(printed(&out).contains("drafting"), "{}", text(&out));
}
