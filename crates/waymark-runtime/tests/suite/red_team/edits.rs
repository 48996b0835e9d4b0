//! Item 11: edit, multiedit and apply_patch keep each file's line endings, BOM and
//! final-newline state.

use super::super::harness::{results, run, user};
use super::harness;
use serde_json::json;
use waymark_protocol::{PermissionMode, ToolStatus};

#[tokio::test]
async fn edits_keep_crlf_bom_and_the_final_newline_state() {
    let h = harness();
    let w = |name: &str, bytes: &str| std::fs::write(h.ws.join(name), bytes).unwrap();
    w("crlf.txt", "\u{feff}alpha\r\nbeta\r\ngamma");
    w("multi.txt", "one\r\ntwo\r\nthree\r\n");
    w("patched.txt", "\u{feff}line 1\r\nline 2\r\nline 3");
    w("mixed.txt", "a\r\nb\nc\r\n");
    w("lf.txt", "x\ny");
    let patch = concat!(
        "--- a/patched.txt\n+++ b/patched.txt\n@@ -1,3 +1,4 @@\n line 1\n-line 2\n+line two\n+line 2.5\n line 3\n",
        "--- a/mixed.txt\n+++ b/mixed.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n",
        "--- a/lf.txt\n+++ b/lf.txt\n@@ -2 +2,2 @@\n-y\n+y\n+z\n",
    );
    let s = h.session(
        json!({"responses": [{"tool_calls": [
            {"name": "edit", "arguments": {"path": "crlf.txt", "old_string": "alpha\nbeta", "new_string": "alpha\nBETA\nbeta"}},
            {"name": "edit", "arguments": {"path": "crlf.txt", "old_string": "gamma", "new_string": "gamma\r\n"}},
            {"name": "multiedit", "arguments": {"path": "multi.txt", "edits": [
                {"old_string": "one\r\ntwo", "new_string": "one\ntwo\nthree-ish"},
                {"old_string": "three\n", "new_string": "3\n"}
            ]}},
            {"name": "apply_patch", "arguments": {"patch": patch}},
        ]}, {"text": "done"}]}),
        PermissionMode::Auto,
    );
    let ev = run(&s, user("go")).await;
    let r = results(&ev);
    assert!(r.iter().all(|(_, st, _)| *st == ToolStatus::Ok), "{r:?}");
    let read = |name: &str| std::fs::read_to_string(h.ws.join(name)).unwrap();
    assert_eq!(read("crlf.txt"), "\u{feff}alpha\r\nBETA\r\nbeta\r\ngamma");
    assert_eq!(read("multi.txt"), "one\r\ntwo\r\nthree-ish\r\n3\r\n");
    assert_eq!(
        read("patched.txt"),
        "\u{feff}line 1\r\nline two\r\nline 2.5\r\nline 3"
    );
    assert_eq!(read("mixed.txt"), "a\r\nB\nc\r\n");
    assert_eq!(read("lf.txt"), "x\ny\nz");
    s.shutdown().await.unwrap();
}
