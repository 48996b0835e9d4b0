//! What a file-changing call would do, for the permission question: every file it touches,
//! the operation, and the diff — computed the way the tool will apply it, escaped for
//! display, never cut below a generous size.

use crate::display::{cut_diff, escape_block, escape_line};
use crate::guard::GuardCall;
use crate::tools::fs_policy::resolve_target;
use serde_json::Value;
use waymark_protocol::FileChange;

/// Files larger than this are not diffed (the question says so).
const MAX_DIFF_INPUT: u64 = 4 * 1024 * 1024;
/// A diff longer than this is cut, with a note saying how much was left out.
const MAX_DIFF: usize = 512 * 1024;

fn cut(diff: String) -> String {
    cut_diff(diff, MAX_DIFF)
}

/// The note on a change to a private place, whose current contents the question leaves out.
const PRIVATE_NOTE: &str = "a private place (a credential store, Waymark's data, a hidden file of the home folder): its current contents are not shown; the diff is only what the call asks to write";

/// The tools whose changes [`file_changes`] can tell before they run.
const FILE_TOOLS: &[&str] = &["write", "edit", "multiedit", "append", "apply_patch"];

/// A diff kept in a result's event longer than this is cut (the log keeps every one).
const MAX_SHOWN_DIFF: usize = 64 * 1024;

/// What an allowed call of a file tool will change, for the transcript: as the question
/// shows it, each diff cut to [`MAX_SHOWN_DIFF`]. Nothing for any other tool.
pub(crate) fn changes_to_show(call: &GuardCall<'_>) -> Vec<FileChange> {
    if !FILE_TOOLS.contains(&call.tool.name()) || call.tool.effects().processes {
        return Vec::new();
    }
    let mut files = file_changes(call);
    for f in &mut files {
        if let Some(d) = f.diff.take() {
            f.diff = Some(cut_diff(d, MAX_SHOWN_DIFF));
        }
    }
    files
}

/// Each file the call changes, with its diff.
pub(crate) fn file_changes(call: &GuardCall<'_>) -> Vec<FileChange> {
    let tool = call.tool.name();
    if tool == "apply_patch" {
        return call
            .arguments
            .get("patch")
            .and_then(Value::as_str)
            .map(|patch| {
                patch_files(patch, |name| {
                    resolve_target(call.workspace, name)
                        .is_ok_and(|t| call.protected.place_of(&t).is_some())
                })
            })
            .unwrap_or_default();
    }
    let Some(raw) = call.arguments.get("path").and_then(Value::as_str) else {
        return Vec::new();
    };
    let target = match resolve_target(call.workspace, raw) {
        Ok(t) => t,
        Err(e) => {
            return vec![FileChange {
                path: escape_line(raw),
                resolved: None,
                op: tool.to_string(),
                diff: None,
                note: Some(escape_line(&e.0)),
            }];
        }
    };
    let exists = target.exists();
    let op = match (tool, exists) {
        ("write", false) | ("append", false) => "create",
        ("write", true) => "replace",
        (other, _) => other,
    };
    let size = std::fs::metadata(&target).map(|m| m.len()).unwrap_or(0);
    let shown = escape_line(raw);
    let diff_of = |before: &str, after: &str| {
        let d = unified_diff(before, after, &format!("a/{shown}"), &format!("b/{shown}"));
        escape_block(&cut(d))
    };
    let (diff, note) = if call.protected.place_of(&target).is_some() {
        // Shown in the question, kept in the log: a private file's current contents stay
        // out, but what the model asks to put there is shown, so nobody approves blind.
        let note = PRIVATE_NOTE.to_string();
        match crate::tools::requested_text(tool, call.arguments) {
            Ok((old, new)) => (Some(diff_of(&old, &new)), Some(note)),
            Err(why) => (None, Some(format!("{note}; the call will fail: {why}"))),
        }
    } else if size > MAX_DIFF_INPUT {
        (
            None,
            Some(format!(
                "the file is {size} bytes; too large to show a diff"
            )),
        )
    } else {
        match crate::tools::before_after(tool, &target, call.arguments) {
            Ok((before, after)) => (Some(diff_of(&before, &after)), None),
            Err(why) => (None, Some(format!("the call will fail: {why}"))),
        }
    };
    vec![FileChange {
        path: escape_line(raw),
        resolved: Some(escape_line(&target.display().to_string())),
        op: op.to_string(),
        diff,
        note: note.map(|n| escape_line(&n)),
    }]
}

/// The files of a unified diff as the model sent it: each with its operation and its own
/// section of the patch, and a note on each that `private` says is a private place.
fn patch_files(patch: &str, private: impl Fn(&str) -> bool) -> Vec<FileChange> {
    let mut out = Vec::new();
    let lines: Vec<&str> = patch.split_inclusive('\n').collect();
    let starts: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(i, l)| {
            l.starts_with("--- ") && lines.get(i + 1).is_some_and(|n| n.starts_with("+++ "))
        })
        .map(|(i, _)| i)
        .collect();
    for (k, &s) in starts.iter().enumerate() {
        let end = starts.get(k + 1).copied().unwrap_or(lines.len());
        let section: String = lines[s..end].concat();
        let name = |l: &str, p: &str| {
            let n = l.trim_end_matches(['\n', '\r']).trim_start_matches(p);
            let n = n.split('\t').next().unwrap_or(n).trim();
            (n != "/dev/null").then(|| {
                n.strip_prefix("a/")
                    .or_else(|| n.strip_prefix("b/"))
                    .unwrap_or(n)
                    .to_string()
            })
        };
        let (old, new) = (name(lines[s], "--- "), name(lines[s + 1], "+++ "));
        let touches_private = old.iter().chain(new.iter()).any(|n| private(n));
        let (op, path) = match (&old, &new) {
            (None, Some(n)) => ("create", n.clone()),
            (Some(o), None) => ("delete", o.clone()),
            // The tool writes the new name from the old file and keeps the old one.
            (Some(o), Some(n)) if o != n => ("copy", format!("{o} → {n}")),
            (Some(_), Some(n)) => ("modify", n.clone()),
            (None, None) => ("invalid", "/dev/null".to_string()),
        };
        out.push(FileChange {
            path: escape_line(&path),
            resolved: None,
            op: op.to_string(),
            diff: Some(escape_block(&cut(section))),
            note: touches_private.then(|| PRIVATE_NOTE.to_string()),
        });
    }
    out
}

/// A unified diff between two texts, labelled `from` and `to`. The diff gives up looking for
/// the smallest one after a moment (two large, unlike files would otherwise hold the turn):
/// it is still a correct diff, only a longer one.
fn unified_diff(old: &str, new: &str, from: &str, to: &str) -> String {
    similar::TextDiff::configure()
        .timeout(std::time::Duration::from_millis(250))
        .diff_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(from, to)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_lists_every_file_with_its_operation() {
        let p = "--- a/x.rs\n+++ b/x.rs\n@@ -1 +1 @@\n-a\n+b\n--- /dev/null\n+++ b/new.rs\n@@ -0,0 +1 @@\n+n\n--- a/gone.rs\n+++ /dev/null\n@@ -1 +0,0 @@\n-g\n--- a/old\x1b[8m.rs\n+++ b/moved.rs\n";
        let files = patch_files(p, |n| n == "gone.rs");
        let ops: Vec<(&str, &str)> = files
            .iter()
            .map(|f| (f.op.as_str(), f.path.as_str()))
            .collect();
        assert_eq!(
            ops,
            [
                ("modify", "x.rs"),
                ("create", "new.rs"),
                ("delete", "gone.rs"),
                ("copy", "old\\x1b[8m.rs → moved.rs")
            ]
        );
        assert!(files[0].diff.as_deref().unwrap().contains("-a\n+b"));
        let notes: Vec<bool> = files.iter().map(|f| f.note.is_some()).collect();
        assert_eq!(notes, [false, false, true, false]);
    }
}
