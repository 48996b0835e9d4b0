//! What file tools changed, as their results' events carry it for the transcript and the
//! changes view: each file with its diff, only for calls that succeeded. (A private file's
//! contents stay out: `red_team::private_places`.)

use super::harness::{Harness, changes, run, user};
use serde_json::json;
use waymark_config::Config;
use waymark_protocol::{PermissionMode, ToolStatus};

#[tokio::test]
async fn a_file_tool_result_carries_the_diff_of_what_it_changed() {
    let h = Harness::new(Config::default());
    let patch = "--- a/notes/a.txt\n+++ b/notes/a.txt\n@@ -1,2 +1,2 @@\n alpha\n-gamma\n+delta\n";
    let s = h.session(
        json!({"responses": [
            {"tool_calls": [{"name": "write", "arguments": {"path": "notes/a.txt", "content": "alpha\nbeta\n"}}]},
            {"tool_calls": [{"name": "edit", "arguments": {"path": "notes/a.txt", "old_string": "beta", "new_string": "gamma"}}]},
            {"tool_calls": [{"name": "edit", "arguments": {"path": "notes/a.txt", "old_string": "absent", "new_string": "x"}}]},
            {"tool_calls": [{"name": "apply_patch", "arguments": {"patch": patch}}]},
            {"tool_calls": [{"name": "bash", "arguments": {"command": "echo hi > b.txt"}}]},
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes/a.txt"}}]},
            {"text": "Done."}
        ]}),
        PermissionMode::Auto,
    );
    let ev = run(&s, user("make the notes")).await;
    let got = changes(&ev);
    let names: Vec<(&str, ToolStatus, usize)> = got
        .iter()
        .map(|(n, st, c)| (n.as_str(), *st, c.len()))
        .collect();
    assert_eq!(
        names,
        [
            ("write", ToolStatus::Ok, 1),
            ("edit", ToolStatus::Ok, 1),
            // A call that failed changed nothing, so it shows no diff.
            ("edit", ToolStatus::Error, 0),
            ("apply_patch", ToolStatus::Ok, 1),
            // The shell's changes are not known before it runs (checkpoints will see them).
            ("bash", ToolStatus::Ok, 0),
            ("read_file", ToolStatus::Ok, 0),
        ]
    );
    let created = &got[0].2[0];
    assert_eq!(
        (created.path.as_str(), created.op.as_str()),
        ("notes/a.txt", "create")
    );
    assert!(
        created.diff.as_deref().unwrap().contains("+alpha\n+beta\n"),
        "{created:?}"
    );
    let edited = got[1].2[0].diff.as_deref().unwrap();
    assert!(
        edited.contains("-beta\n+gamma\n") && edited.contains(" alpha\n"),
        "{edited}"
    );
    let patched = &got[3].2[0];
    assert_eq!(patched.op, "modify");
    assert!(
        patched.diff.as_deref().unwrap().contains("+delta"),
        "{patched:?}"
    );
    let log = h.runtime.events(s.id(), 0, 10_000).unwrap();
    assert_eq!(changes(&log), got, "the log keeps what was streamed");
    s.shutdown().await.unwrap();
}
