//! The agents `task` can hand work to: the built-in `explore` (read-only tools) and
//! `general` (the parent's tools), and custom ones from Markdown files with a front matter
//! (`name`, `description`, `tools`, `model`) and the agent's prompt after it, in Claude
//! Code's format: `.waymark/agents/` and `.claude/agents/` in the workspace, then
//! `~/.config/waymark/agents/` and `~/.claude/agents/`; the first of a name wins. A project's
//! agent file is instructions, not code: it needs no approval, and its `tools` list can only
//! narrow what the parent may do.
//!
//! The front matter is read here rather than with a YAML library: it is four flat keys, and
//! a list of tool names either comma-separated, in brackets or as `- name` lines.

use std::path::{Path, PathBuf};

/// The largest agent file read.
const MAX_FILE: u64 = 256 * 1024;
/// The most agent files read from one folder.
const MAX_FILES: usize = 200;

/// What an agent may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tools {
    /// The tools that only read (no writes, programs, network or other program's tools).
    ReadOnly,
    /// The parent's tools.
    Parent,
    /// These tools of the parent's (Waymark's names).
    Named(Vec<String>),
}

/// What is wrong with an agent file (named in the message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AgentFileError(pub String);

impl From<String> for AgentFileError {
    fn from(s: String) -> Self {
        AgentFileError(s)
    }
}

impl From<&str> for AgentFileError {
    fn from(s: &str) -> Self {
        AgentFileError(s.to_string())
    }
}

/// One agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDef {
    pub name: String,
    pub description: String,
    pub tools: Tools,
    /// `None`: the parent's model (`inherit`).
    pub model: Option<String>,
    pub prompt: String,
    /// Where it is defined (`built-in` or the file).
    pub source: String,
}

/// The built-in agents.
pub fn builtin() -> Vec<AgentDef> {
    vec![
        AgentDef {
            name: "explore".into(),
            description: "Investigates the code base with read-only tools and reports what it found. Use it for searches and questions that need many reads.".into(),
            tools: Tools::ReadOnly,
            model: None,
            prompt: "You explore a code base to answer a question. You can only read: list folders, find files, search and read them. Be thorough but brief: end with a clear answer that names the files and lines that matter.".into(),
            source: "built-in".into(),
        },
        AgentDef {
            name: "general".into(),
            description: "Does a self-contained piece of work with the same tools and permissions as you.".into(),
            tools: Tools::Parent,
            model: None,
            prompt: "You do one self-contained task for another agent. Work until it is done, then end with a short report of what you did and what you found.".into(),
            source: "built-in".into(),
        },
    ]
}

/// The custom agents of `workspace` and `home`, in precedence order, and what was skipped.
pub fn custom(workspace: &Path, home: Option<&Path>) -> (Vec<AgentDef>, Vec<String>) {
    let mut dirs: Vec<PathBuf> = vec![
        workspace.join(".waymark/agents"),
        workspace.join(".claude/agents"),
    ];
    if let Some(home) = home {
        dirs.push(home.join(".config/waymark/agents"));
        dirs.push(home.join(".claude/agents"));
    }
    let mut found: Vec<AgentDef> = Vec::new();
    let mut skipped = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "md"))
            .collect();
        files.sort();
        for path in files.into_iter().take(MAX_FILES) {
            match read(&path) {
                Ok(def) if found.iter().any(|f| f.name == def.name) => {}
                Ok(def) => found.push(def),
                Err(why) => skipped.push(format!("{}: {why}", path.display())),
            }
        }
    }
    (found, skipped)
}

/// One agent file.
fn read(path: &Path) -> Result<AgentDef, AgentFileError> {
    use std::io::Read;
    let meta = std::fs::symlink_metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a plain file".into());
    }
    let mut text = String::new();
    std::fs::File::open(path)
        .map_err(|e| e.to_string())?
        .take(MAX_FILE + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("not UTF-8 text: {e}"))?;
    if text.len() as u64 > MAX_FILE {
        return Err(AgentFileError(format!("over {} KiB", MAX_FILE / 1024)));
    }
    parse(&text, &path.display().to_string())
}

/// An agent file's text.
pub fn parse(text: &str, source: &str) -> Result<AgentDef, AgentFileError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or("has no front matter (a `---` line first)")?;
    let (front, prompt) = match rest.find("\n---") {
        Some(at) => {
            let after = &rest[at + 4..];
            (&rest[..at], after.trim_start_matches(['\r', '\n']))
        }
        None => return Err("its front matter never ends (no closing `---` line)".into()),
    };
    let mut name = None;
    let mut description = None;
    let mut tools: Option<Vec<String>> = None;
    let mut model = None;
    let mut in_tools_list = false;
    for line in front.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if in_tools_list && let Some(item) = trimmed.strip_prefix("- ") {
            tools
                .get_or_insert_with(Vec::new)
                .push(unquote(item).to_string());
            continue;
        }
        in_tools_list = false;
        let Some((key, value)) = trimmed.split_once(':') else {
            return Err(AgentFileError(format!(
                "`{}` is not `key: value`",
                clip(trimmed)
            )));
        };
        let value = unquote(value.trim());
        match key.trim() {
            "name" => name = Some(value.to_string()),
            "description" => description = Some(value.to_string()),
            "model" => model = Some(value.to_string()),
            "tools" => {
                if value.is_empty() {
                    in_tools_list = true;
                } else {
                    let list = value.trim_start_matches('[').trim_end_matches(']');
                    tools = Some(
                        list.split(',')
                            .map(|t| unquote(t.trim()).to_string())
                            .filter(|t| !t.is_empty())
                            .collect(),
                    );
                }
            }
            // Claude Code's other keys (colour, permissions) mean nothing here.
            _ => {}
        }
    }
    let name = name.ok_or("has no `name`")?;
    let valid = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !valid {
        return Err(AgentFileError(format!(
            "its name `{}` must be letters, digits, `-` and `_` (at most 64)",
            clip(&name)
        )));
    }
    let tools = match tools {
        None => Tools::Parent,
        Some(list) => Tools::Named(list.iter().map(|t| waymark_name(t)).collect()),
    };
    let model = model.filter(|m| !m.is_empty() && m != "inherit");
    Ok(AgentDef {
        name,
        description: description.unwrap_or_default(),
        tools,
        model,
        prompt: prompt.trim().to_string(),
        source: source.to_string(),
    })
}

/// Waymark's name for a tool named the way Claude Code names it (other names as they are).
pub fn waymark_name(tool: &str) -> String {
    match tool {
        "Bash" => "bash",
        "Read" => "read_file",
        "Write" => "write",
        "Edit" => "edit",
        "MultiEdit" => "multiedit",
        "Glob" => "glob",
        "Grep" => "grep",
        "LS" => "list_dir",
        "WebFetch" => "web_fetch",
        other => other,
    }
    .to_string()
}

fn unquote(s: &str) -> &str {
    let s = s.trim();
    s.strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .or_else(|| s.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')))
        .unwrap_or(s)
}

fn clip(s: &str) -> String {
    s.chars().take(80).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claude_code_agent_file_reads_as_it_is() {
        let def = parse(
            "---\nname: reviewer\ndescription: \"Reviews diffs\"\ntools: Read, Grep, Glob, Bash\nmodel: inherit\ncolor: blue\n---\n\nYou review code.\n",
            "x.md",
        )
        .unwrap();
        assert_eq!(def.name, "reviewer");
        assert_eq!(def.description, "Reviews diffs");
        assert_eq!(
            def.tools,
            Tools::Named(vec![
                "read_file".into(),
                "grep".into(),
                "glob".into(),
                "bash".into()
            ])
        );
        assert_eq!(def.model, None);
        assert_eq!(def.prompt, "You review code.");
        let listed = parse(
            "---\nname: a\ntools:\n  - Read\n  - mcp__gh__search\nmodel: sonnet\n---\nP",
            "y",
        )
        .unwrap();
        assert_eq!(
            listed.tools,
            Tools::Named(vec!["read_file".into(), "mcp__gh__search".into()])
        );
        assert_eq!(listed.model.as_deref(), Some("sonnet"));
        assert_eq!(
            parse("---\nname: b\n---\nP", "z").unwrap().tools,
            Tools::Parent
        );
    }

    #[test]
    fn a_broken_agent_file_says_what_is_wrong() {
        for (text, said) in [
            ("no front matter", "no front matter"),
            ("---\nname: a\n", "never ends"),
            ("---\ndescription: x\n---\n", "no `name`"),
            ("---\nname: ../../etc\n---\n", "must be letters"),
            ("---\njust words\n---\n", "key: value"),
        ] {
            let e = parse(text, "f").unwrap_err().to_string();
            assert!(e.contains(said), "{text}: {e}");
        }
    }
}
