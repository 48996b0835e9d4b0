//! `apply_patch`: a unified diff over one or more files, applied all or nothing.

use super::fs_policy::{resolve_write, temp_sibling, write_atomic};
use super::text;
use super::{Tool, ToolContext, ToolError, ToolOutput, blocking, parse_args};
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::PathBuf;

/// Applies a unified diff.
pub struct ApplyPatch;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PatchArgs {
    patch: String,
}

#[derive(Debug, Default)]
struct Hunk {
    old_start: usize,
    lines: Vec<(char, String)>,
}

#[derive(Debug)]
struct FilePatch {
    old: Option<String>,
    new: Option<String>,
    hunks: Vec<Hunk>,
}

fn strip_prefix(p: &str) -> Option<String> {
    let p = p.split('\t').next().unwrap_or(p).trim();
    if p == "/dev/null" {
        return None;
    }
    Some(
        p.strip_prefix("a/")
            .or_else(|| p.strip_prefix("b/"))
            .unwrap_or(p)
            .to_string(),
    )
}

fn parse(patch: &str) -> Result<Vec<FilePatch>, ToolError> {
    let bad =
        |msg: String| ToolError::Model(format!("the patch is not a valid unified diff: {msg}"));
    let mut files: Vec<FilePatch> = Vec::new();
    let mut lines = patch.lines().peekable();
    while let Some(line) = lines.next() {
        if let Some(old) = line.strip_prefix("--- ") {
            let Some(new) = lines.next().and_then(|l| l.strip_prefix("+++ ")) else {
                return Err(bad("a `---` line must be followed by a `+++` line".into()));
            };
            files.push(FilePatch {
                old: strip_prefix(old),
                new: strip_prefix(new),
                hunks: Vec::new(),
            });
        } else if let Some(h) = line.strip_prefix("@@ ") {
            let Some(file) = files.last_mut() else {
                return Err(bad("a hunk comes before any `---`/`+++` header".into()));
            };
            let old_range = h
                .split_whitespace()
                .next()
                .and_then(|r| r.strip_prefix('-'))
                .ok_or_else(|| bad(format!("hunk header `@@ {h}`")))?;
            let old_start: usize = old_range
                .split(',')
                .next()
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| bad(format!("hunk header `@@ {h}`")))?;
            let mut hunk = Hunk {
                old_start,
                lines: Vec::new(),
            };
            while let Some(next) = lines.peek() {
                if next.starts_with("@@ ") || next.starts_with("--- ") || next.starts_with("diff ")
                {
                    break;
                }
                let l = lines.next().unwrap_or_default();
                if l.starts_with('\\') {
                    continue; // "\ No newline at end of file"
                }
                let (tag, rest) = match l.chars().next() {
                    Some(c @ (' ' | '-' | '+')) => (c, &l[1..]),
                    None => (' ', ""),
                    Some(_) => return Err(bad(format!("unexpected line in a hunk: `{l}`"))),
                };
                hunk.lines.push((tag, rest.to_string()));
            }
            file.hunks.push(hunk);
        }
    }
    if files.is_empty() {
        return Err(bad("no `---`/`+++` file headers found".into()));
    }
    Ok(files)
}

/// A line's text without its line break.
fn body(line: &str) -> &str {
    match line.strip_suffix('\n') {
        Some(l) => l.strip_suffix('\r').unwrap_or(l),
        None => line,
    }
}

/// A line's break (`\r\n`, `\n`, or none on a last line without one).
fn terminator(line: &str) -> &str {
    &line[body(line).len()..]
}

/// Applies hunks to `text`; each hunk must match exactly (searched near its line number).
/// Lines keep their own line breaks: a replaced line takes the break of the line it
/// replaces, an added one the file's dominant break, so CRLF and mixed files stay as they
/// were. (The final-newline state is restored by the caller's encoding.)
fn apply_hunks(text: &str, hunks: &[Hunk], name: &str) -> Result<String, ToolError> {
    let eol = super::text::dominant_break(text);
    let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_string).collect();
    let mut shift: isize = 0;
    let mut floor = 0usize;
    for (i, h) in hunks.iter().enumerate() {
        let old: Vec<&str> = h
            .lines
            .iter()
            .filter(|(t, _)| *t != '+')
            .map(|(_, s)| s.as_str())
            .collect();
        let new: Vec<&str> = h
            .lines
            .iter()
            .filter(|(t, _)| *t != '-')
            .map(|(_, s)| s.as_str())
            .collect();
        let hint = ((h.old_start.max(1) - 1) as isize + shift).max(0) as usize;
        let fits = |at: usize| {
            at.checked_add(old.len())
                .is_some_and(|end| end <= lines.len())
                && lines[at..at + old.len()]
                    .iter()
                    .map(|l| body(l))
                    .eq(old.iter().copied())
        };
        let at = if old.is_empty() {
            Some(hint.min(lines.len()))
        } else if hint >= floor && fits(hint) {
            Some(hint)
        } else {
            (floor..lines.len()).find(|&at| fits(at))
        };
        let Some(at) = at else {
            return Err(ToolError::Model(format!(
                "hunk #{} does not match {name}: its context and removed lines are not in the file; read the file and make a fresh patch",
                i + 1
            )));
        };
        // Lines inserted after a last line that had no break: it gets one now.
        if at > 0 && terminator(&lines[at - 1]).is_empty() {
            lines[at - 1].push_str(eol);
        }
        let replacement: Vec<String> = new
            .iter()
            .enumerate()
            .map(|(k, s)| {
                let brk = lines
                    .get(at + k)
                    .filter(|_| k < old.len())
                    .map(|l| terminator(l))
                    .filter(|t| !t.is_empty())
                    .unwrap_or(eol);
                format!("{s}{brk}")
            })
            .collect();
        shift += replacement.len() as isize - old.len() as isize;
        floor = at + replacement.len();
        lines.splice(at..at + old.len(), replacement);
    }
    Ok(lines.concat())
}

enum Change {
    Write {
        path: PathBuf,
        content: String,
        original: Option<Vec<u8>>,
    },
    Delete {
        path: PathBuf,
        original: Vec<u8>,
    },
}

fn apply(ctx: &ToolContext, patch: &str) -> Result<ToolOutput, ToolError> {
    let files = parse(patch)?;
    let mut changes = Vec::new();
    let mut summary = Vec::new();
    for f in &files {
        match (&f.old, &f.new) {
            (_, Some(new)) => {
                let target = resolve_write(ctx, new)?;
                let source = match &f.old {
                    Some(old) if old != new => {
                        let source = resolve_write(ctx, old)?;
                        // Another name takes the old file's text, patched: a copy, and of a
                        // private file it would show what Waymark keeps from the model.
                        if ctx.protected.place_of(&source).is_some() {
                            return Err(ToolError::Model(copy_refused(old, new)));
                        }
                        source
                    }
                    _ => target.clone(),
                };
                let (base, style, original) = if f.old.is_some() {
                    let (t, style) = text::read(&source, f.old.as_deref().unwrap_or(new))?;
                    let orig = std::fs::read(&target).ok();
                    (t, style, orig)
                } else {
                    if target.exists() {
                        return Err(ToolError::Model(format!(
                            "the patch creates {new}, which already exists"
                        )));
                    }
                    (String::new(), text::TextStyle::NEW, None)
                };
                let content = text::encode(&apply_hunks(&base, &f.hunks, new)?, &style);
                summary.push(format!(
                    "{} {new}",
                    if f.old.is_none() {
                        "created"
                    } else {
                        "patched"
                    }
                ));
                changes.push(Change::Write {
                    path: target,
                    content,
                    original,
                });
            }
            (Some(old), None) => {
                let target = resolve_write(ctx, old)?;
                let original = std::fs::read(&target)
                    .map_err(|e| ToolError::Model(format!("cannot delete {old}: {e}")))?;
                summary.push(format!("deleted {old}"));
                changes.push(Change::Delete {
                    path: target,
                    original,
                });
            }
            (None, None) => {
                return Err(ToolError::Model(
                    "a file header names /dev/null twice".into(),
                ));
            }
        }
    }
    // Stage every new content beside its target, then swap them in; on failure put back what
    // was already swapped.
    let mut staged = Vec::new();
    for c in &changes {
        if let Change::Write { path, content, .. } = c {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|e| {
                    ToolError::Model(format!("cannot create {}: {e}", parent.display()))
                })?;
            }
            let tmp = temp_sibling(path);
            if let Err(e) = std::fs::write(&tmp, content) {
                for t in &staged {
                    let _ = std::fs::remove_file(t);
                }
                let _ = std::fs::remove_file(&tmp);
                return Err(ToolError::Model(format!(
                    "cannot write {}: {e}",
                    path.display()
                )));
            }
            staged.push(tmp);
        }
    }
    let mut done: Vec<&Change> = Vec::new();
    let mut tmp_iter = staged.iter();
    for c in &changes {
        let r = match c {
            Change::Write { path, .. } => match tmp_iter.next() {
                Some(tmp) => std::fs::rename(tmp, path),
                None => Ok(()),
            },
            Change::Delete { path, .. } => std::fs::remove_file(path),
        };
        if let Err(e) = r {
            for d in done {
                match d {
                    Change::Write {
                        path,
                        original: Some(o),
                        ..
                    }
                    | Change::Delete { path, original: o } => {
                        let _ = write_atomic(path, o);
                    }
                    Change::Write {
                        path,
                        original: None,
                        ..
                    } => {
                        let _ = std::fs::remove_file(path);
                    }
                }
            }
            for t in tmp_iter {
                let _ = std::fs::remove_file(t);
            }
            return Err(ToolError::Model(format!(
                "the patch could not be applied, nothing changed: {e}"
            )));
        }
        done.push(c);
    }
    Ok(ToolOutput::text(summary.join("\n")))
}

impl Tool for ApplyPatch {
    fn name(&self) -> &'static str {
        "apply_patch"
    }
    fn description(&self) -> &'static str {
        "Apply a unified diff (`--- a/path`, `+++ b/path`, `@@ -l,n +l,n @@` hunks; /dev/null to create or delete). All files change or none."
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {"patch": {"type": "string"}}, "required": ["patch"]})
    }
    fn effects(&self) -> crate::Effects {
        crate::Effects::WRITES
    }
    fn written_paths(&self, arguments: &serde_json::Value) -> Vec<String> {
        arguments
            .get("patch")
            .and_then(serde_json::Value::as_str)
            .and_then(|p| patch_paths(p).ok())
            .unwrap_or_default()
    }
}

impl crate::FreeTool for ApplyPatch {
    fn handle<'a>(
        &'a self,
        ctx: &'a ToolContext,
        args: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let a: PatchArgs = parse_args(self.name(), args)?;
            let ctx = ctx.clone();
            blocking(move || apply(&ctx, &a.patch)).await
        })
    }
}

/// Why a patch may not take a private file's text into another file.
pub fn copy_refused(old: &str, new: &str) -> String {
    format!(
        "the patch would copy `{old}`, a private place, into `{new}`: Waymark keeps private files' contents from the model; edit the file under its own name instead"
    )
}

/// The files a patch copies to another name, patched (old and new both named, and not the
/// same), as the model wrote them.
pub fn patch_copies(patch: &str) -> Vec<(String, String)> {
    parse(patch)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|f| match (f.old, f.new) {
            (Some(o), Some(n)) if o != n => Some((o, n)),
            _ => None,
        })
        .collect()
}

/// The target paths a patch names (for guards), or an error if it does not parse.
pub fn patch_paths(patch: &str) -> Result<Vec<String>, ToolError> {
    Ok(parse(patch)?
        .into_iter()
        .flat_map(|f| [f.old, f.new])
        .flatten()
        .collect())
}

#[cfg(test)]
mod tests {
    use super::super::test_support::Fixture;
    use super::*;

    #[tokio::test]
    async fn patches_several_files_atomically() {
        let f = Fixture::new();
        std::fs::write(f.ws().join("a.txt"), "one\ntwo\nthree\n").unwrap();
        std::fs::write(f.ws().join("gone.txt"), "bye\n").unwrap();
        let patch = "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n--- /dev/null\n+++ b/new/b.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n";
        let out = f.run(&ApplyPatch, json!({"patch": patch})).await.unwrap();
        assert!(out.content.contains("patched a.txt"));
        assert_eq!(
            std::fs::read_to_string(f.ws().join("a.txt")).unwrap(),
            "one\n2\nthree\n"
        );
        assert_eq!(
            std::fs::read_to_string(f.ws().join("new/b.txt")).unwrap(),
            "hello\nworld\n"
        );
        assert!(!f.ws().join("gone.txt").exists());
    }

    /// The tool checks the copy's source where it leads now, whatever the guard saw.
    #[tokio::test]
    async fn a_private_file_is_never_copied_to_another_name() {
        let mut f = Fixture::new();
        let secret = f.ws().join("sa.json");
        std::fs::write(&secret, "{\"private_key\": \"k\"}\n").unwrap();
        f.ctx.protected = waymark_sandbox::private::Protected::new(
            std::sync::Arc::new(vec![secret.clone()]),
            Default::default(),
            Default::default(),
            Vec::new(),
            Default::default(),
        );
        let patch = "--- a/sa.json\n+++ b/sa-copy.txt\n";
        let e = f
            .run(&ApplyPatch, json!({"patch": patch}))
            .await
            .unwrap_err();
        assert!(e.to_string().contains("would copy"), "{e}");
        assert!(!f.ws().join("sa-copy.txt").exists());
    }

    #[tokio::test]
    async fn a_failing_hunk_changes_nothing() {
        let f = Fixture::new();
        std::fs::write(f.ws().join("a.txt"), "one\ntwo\n").unwrap();
        std::fs::write(f.ws().join("b.txt"), "x\n").unwrap();
        let patch = "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-nomatch\n+y\n";
        let e = f
            .run(&ApplyPatch, json!({"patch": patch}))
            .await
            .unwrap_err();
        assert!(
            e.to_string().contains("hunk #1 does not match b.txt"),
            "{e}"
        );
        assert_eq!(
            std::fs::read_to_string(f.ws().join("a.txt")).unwrap(),
            "one\ntwo\n"
        );
    }

    #[tokio::test]
    async fn headers_naming_files_outside_are_refused() {
        let f = Fixture::new();
        std::fs::write(f.ws().join("a.txt"), "one\n").unwrap();
        let patch = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+1\n--- /dev/null\n+++ b/../escape.txt\n@@ -0,0 +1 @@\n+x\n";
        assert!(f.run(&ApplyPatch, json!({"patch": patch})).await.is_err());
        assert_eq!(
            std::fs::read_to_string(f.ws().join("a.txt")).unwrap(),
            "one\n"
        );
        assert!(!f.dir.path().join("escape.txt").exists());
        assert!(
            f.run(&ApplyPatch, json!({"patch": "not a diff"}))
                .await
                .is_err()
        );
    }

    #[test]
    fn hunks_found_when_line_numbers_drift() {
        let h = parse("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n c\n-d\n+D\n").unwrap();
        let out = apply_hunks("a\nb\nc\nd\n", &h[0].hunks, "x").unwrap();
        assert_eq!(out, "a\nb\nc\nD\n");
        assert_eq!(patch_paths("--- a/x\n+++ b/y\n").unwrap(), vec!["x", "y"]);
    }
}
