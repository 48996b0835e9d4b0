//! Waymark's tools under Claude Code's names and fields, so a hook written for Claude Code
//! (`tool_name == "Bash"`, `tool_input.command`, `tool_input.file_path`) works unchanged.
//! A matcher may use either name; the hook's input carries Claude Code's, with Waymark's own
//! beside it.

use serde_json::{Map, Value, json};
use std::path::Path;

/// Claude Code's name for a Waymark tool, when it has one (MCP tools keep theirs:
/// `mcp__server__tool` is the same in both).
pub fn claude_name(tool: &str) -> Option<&'static str> {
    Some(match tool {
        "bash" => "Bash",
        "write" => "Write",
        "edit" => "Edit",
        "multiedit" => "MultiEdit",
        "read_file" => "Read",
        "list_dir" => "LS",
        "glob" => "Glob",
        "grep" => "Grep",
        "web_fetch" => "WebFetch",
        "task" => "Task",
        _ => return None,
    })
}

/// The name a hook's input gives the tool: Claude Code's where it has one.
pub fn hook_name(tool: &str) -> String {
    claude_name(tool).map_or_else(|| tool.to_string(), str::to_string)
}

/// Every name a matcher may take the tool by: Waymark's, Claude Code's, and for a writing
/// tool Claude Code has no twin of, the names of Claude Code's writing tools, so a hook set on
/// `Edit|Write` sees every write however it is made.
pub fn matched_names(tool: &str) -> Vec<&str> {
    let mut names = vec![tool];
    if let Some(c) = claude_name(tool) {
        names.push(c);
    }
    match tool {
        "apply_patch" => names.extend(["Edit", "Write", "MultiEdit"]),
        "append" => names.extend(["Write", "Edit"]),
        _ => {}
    }
    names
}

/// A call's input in Claude Code's fields (`file_path` absolute, `timeout` for the shell),
/// with every field Waymark's tool has kept as well.
pub fn hook_input(tool: &str, arguments: &Value, workspace: &Path) -> Value {
    let Some(args) = arguments.as_object() else {
        return arguments.clone();
    };
    let mut out: Map<String, Value> = args.clone();
    let absolute = |p: &str| resolved(workspace, p).display().to_string();
    match tool {
        "bash" => {
            if let Some(t) = args.get("timeout_ms") {
                out.insert("timeout".into(), t.clone());
            }
        }
        "write" | "edit" | "multiedit" | "read_file" | "append" => {
            if let Some(p) = args.get("path").and_then(Value::as_str) {
                out.insert("file_path".into(), json!(absolute(p)));
            }
        }
        "apply_patch" => {
            let patch = args.get("patch").and_then(Value::as_str).unwrap_or("");
            let paths: Vec<String> = waymark_tools::patch_paths(patch)
                .unwrap_or_default()
                .iter()
                .map(|p| absolute(p))
                .collect();
            if let Some(first) = paths.first() {
                out.insert("file_path".into(), json!(first));
            }
            out.insert("file_paths".into(), json!(paths));
        }
        "grep" => {
            if let Some(i) = args.get("case_insensitive") {
                out.insert("-i".into(), i.clone());
            }
        }
        "task" => {
            if let Some(a) = args.get("agent") {
                out.insert("subagent_type".into(), a.clone());
            }
        }
        _ => {}
    }
    Value::Object(out)
}

/// Where `path` leads from the workspace: links and `..` followed as far as the path
/// exists, the rest as written (a hook judging the path sees the file a write would reach).
fn resolved(workspace: &Path, path: &str) -> std::path::PathBuf {
    let joined = workspace.join(path);
    let mut existing = joined.as_path();
    let mut rest = Vec::new();
    while std::fs::symlink_metadata(existing).is_err() {
        match (existing.file_name(), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent;
            }
            _ => return joined,
        }
    }
    let Ok(mut target) = existing.canonicalize() else {
        return joined;
    };
    target.extend(rest.iter().rev());
    target
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_read_as_claude_code_writes_them() {
        let ws = Path::new("/w");
        assert_eq!(hook_name("bash"), "Bash");
        assert_eq!(hook_name("mcp__github__search"), "mcp__github__search");
        let i = hook_input("bash", &json!({"command": "rm -rf x", "timeout_ms": 5}), ws);
        assert_eq!(i["command"], "rm -rf x");
        assert_eq!(i["timeout"], 5);
        let i = hook_input("write", &json!({"path": "src/a.rs", "content": "x"}), ws);
        assert_eq!(i["file_path"], "/w/src/a.rs");
        assert_eq!(i["content"], "x");
        assert_eq!(i["path"], "src/a.rs");
        let i = hook_input(
            "read_file",
            &json!({"path": "/etc/hostname", "offset": 2}),
            ws,
        );
        assert_eq!(i["file_path"], "/etc/hostname");
        assert_eq!(i["offset"], 2);
    }

    /// A link inside the workspace is followed: the hook sees where the write lands.
    #[test]
    fn a_path_through_a_link_is_given_where_it_leads() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        std::fs::write(ws.join(".env"), "KEY=1").unwrap();
        std::os::unix::fs::symlink(ws.join(".env"), ws.join("notes.txt")).unwrap();
        let i = hook_input("write", &json!({"path": "notes.txt", "content": "x"}), &ws);
        assert_eq!(i["file_path"], ws.join(".env").display().to_string());
        let i = hook_input(
            "apply_patch",
            &json!({"patch": "--- /dev/null\n+++ b/a/b.txt\n@@ -0,0 +1 @@\n+x\n"}),
            &ws,
        );
        assert_eq!(i["file_path"], ws.join("a/b.txt").display().to_string());
        assert!(matched_names("apply_patch").contains(&"Edit"));
    }
}
