//! Upgrade keeps everything, the part no read command prints: the session's instructions,
//! its compaction and its questionnaire, read from a data folder written by the release
//! before the crate split (`tests/fixtures/upgrade-v0`), reach the model as they did then.
//! The read commands themselves are compared in the CLI's own upgrade test.

use super::harness::{Recording, collect};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;
use waymark_config::Config;
use waymark_protocol::{Answer, Op};
use waymark_runtime::provider::ModelMessage;
use waymark_runtime::{Runtime, RuntimeOptions, SessionSpec};

/// Sessions store absolute paths, so the copy goes back where the fixture was made.
const ROOT: &str = "/tmp/waymark-fixture-v0";

fn fixture() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/upgrade-v0")
}

/// Takes the fixed root from other tests (the CLI's uses it too) and puts a fresh copy of
/// the fixture there; the root is free again when the file is dropped.
fn fresh_root() -> std::fs::File {
    use std::os::fd::AsRawFd as _;
    let lock = std::fs::File::create(format!("{ROOT}.lock")).unwrap();
    #[allow(unsafe_code)]
    // SAFETY: flock(2) on a descriptor this function owns; released when the file closes.
    let taken = unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) };
    assert_eq!(taken, 0, "could not lock {ROOT}.lock");
    let _ = std::fs::remove_dir_all(ROOT);
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(fixture().join("root"))
        .arg(ROOT)
        .status()
        .unwrap();
    assert!(status.success());
    lock
}

#[tokio::test]
async fn instructions_compaction_and_questions_from_before_the_split_reach_the_model() {
    let _root = fresh_root();
    let sessions: BTreeMap<String, String> = serde_json::from_str(
        &std::fs::read_to_string(fixture().join("expected/sessions.json")).unwrap(),
    )
    .unwrap();
    let rows: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixture().join("expected/rows.json")).unwrap(),
    )
    .unwrap();
    let ws = Path::new(ROOT).join("ws");
    // The session keeps the instructions it started with: a later edit of the file is not
    // what it reads.
    std::fs::write(ws.join("AGENTS.md"), "# Conventions\nIndent with spaces.\n").unwrap();
    let rec = Recording::new(json!({"responses": [{"text": "Tidied."}]}), &ws);
    let mut opts = RuntimeOptions::new(Path::new(ROOT).join("data"), Config::default());
    opts.sandbox_helper = Some(vec![env!("CARGO_BIN_EXE_waymark-sandbox").into()]);
    opts.cwd = ROOT.into();
    opts.provider_override = Some(rec.clone());
    let rt = Runtime::open(opts).unwrap();
    let chat = &sessions["chat"];
    let s = rt.open_session(chat, SessionSpec::default()).unwrap();
    let q = rt.snapshot(chat).unwrap().summary.pending_questionnaire;
    let q = q.expect("the chat waits on its question");
    let mut rx = s.subscribe();
    s.submit(Op::Answer {
        questionnaire_id: q,
        answer: Answer::Deny {
            message: Some("Not now.".into()),
        },
    })
    .await
    .unwrap();
    s.submit(Op::Resume).await.unwrap();
    collect(&mut rx).await;
    let requests = rec.requests.lock().unwrap().clone();
    let first = requests.first().expect("the turn went on");
    // The instructions stored for the session, word for word.
    let stored = rows["instructions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r[0] == chat.as_str())
        .unwrap()[2]
        .as_str()
        .unwrap()
        .to_string();
    assert!(first.system.contains(&stored), "{}", first.system);
    // The compaction's summary stands in for the older history.
    let summary = rows["compactions"][0][3].as_str().unwrap();
    let ModelMessage::User { text, .. } = &first.messages[0] else {
        panic!("{:?}", first.messages[0])
    };
    assert!(text.contains(summary), "{text}");
    s.shutdown().await.unwrap();
}
