//! Read-only tools: read_file, list_dir, glob, grep. Search respects .gitignore.

use super::fs_policy::resolve_read;
use super::{Tool, ToolContext, ToolError, ToolOutput, blocking, parse_args, truncate_head};
use futures_util::future::BoxFuture;
use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, SearcherBuilder, sinks::UTF8};
use serde::Deserialize;
use serde_json::{Value, json};
use std::io::Read as _;
use std::path::{Path, PathBuf};

const DEFAULT_LINES: usize = 2000;
const MAX_LINE_CHARS: usize = 2000;
const MAX_FILE_BYTES: u64 = 20 * 1024 * 1024;
const MAX_ENTRIES: usize = 1000;
const MAX_MATCHES: usize = 500;

/// Reads a text file with line numbers.
pub struct ReadFile;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    path: String,
    #[serde(default)]
    offset: Option<usize>,
    #[serde(default)]
    limit: Option<usize>,
}

impl Tool for ReadFile {
    fn name(&self) -> &'static str {
        "read_file"
    }
    fn description(&self) -> &'static str {
        "Read a text file. Lines come numbered. `offset` is the first line (1-based), `limit` the number of lines (default 2000)."
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "path": {"type": "string", "description": "File path, relative to the workspace or absolute"},
            "offset": {"type": "integer", "minimum": 1},
            "limit": {"type": "integer", "minimum": 1}
        }, "required": ["path"]})
    }
    fn is_mutating(&self) -> bool {
        false
    }
    fn handle<'a>(
        &'a self,
        ctx: &'a ToolContext,
        args: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let a: ReadArgs = parse_args(self.name(), args)?;
            let path = resolve_read(ctx, &a.path)?;
            let limit = ctx.output_limit;
            blocking(move || read_file(&path, &a, limit)).await
        })
    }
}

fn read_file(path: &Path, a: &ReadArgs, output_limit: usize) -> Result<ToolOutput, ToolError> {
    let meta = std::fs::metadata(path)
        .map_err(|e| ToolError::Model(format!("cannot read `{}`: {e}", a.path)))?;
    if meta.is_dir() {
        return Err(ToolError::Model(format!(
            "`{}` is a directory; use list_dir",
            a.path
        )));
    }
    if meta.len() > MAX_FILE_BYTES && a.offset.is_none() && a.limit.is_none() {
        return Err(ToolError::Model(format!(
            "`{}` is {} bytes; read it in parts with offset and limit",
            a.path,
            meta.len()
        )));
    }
    let mut f = std::fs::File::open(path)
        .map_err(|e| ToolError::Model(format!("cannot read `{}`: {e}", a.path)))?;
    let mut head = vec![0u8; 8192];
    let n = f
        .read(&mut head)
        .map_err(|e| ToolError::Model(e.to_string()))?;
    if head[..n].contains(&0) {
        return Ok(ToolOutput::text(format!(
            "`{}` is a binary file ({} bytes); its content is not shown",
            a.path,
            meta.len()
        )));
    }
    let bytes = std::fs::read(path)
        .map_err(|e| ToolError::Model(format!("cannot read `{}`: {e}", a.path)))?;
    let text = String::from_utf8_lossy(&bytes);
    let start = a.offset.unwrap_or(1).max(1);
    let count = a.limit.unwrap_or(DEFAULT_LINES);
    let total = text.lines().count();
    if total == 0 {
        return Ok(ToolOutput::text(format!("`{}` is empty", a.path)));
    }
    if start > total {
        return Err(ToolError::Model(format!(
            "`{}` has {total} lines; offset {start} is past the end",
            a.path
        )));
    }
    let mut out = String::new();
    for (i, line) in text.lines().enumerate().skip(start - 1).take(count) {
        let shown: String = if line.chars().count() > MAX_LINE_CHARS {
            let s: String = line.chars().take(MAX_LINE_CHARS).collect();
            format!("{s}… [line cut at {MAX_LINE_CHARS} characters]")
        } else {
            line.to_string()
        };
        out.push_str(&format!("{:>6}\t{shown}\n", i + 1));
    }
    let end = (start - 1).saturating_add(count).min(total);
    if end < total {
        out.push_str(&format!(
            "[lines {start}-{end} of {total}; use offset {} to read on]\n",
            end + 1
        ));
    }
    Ok(ToolOutput::text(truncate_head(
        &out,
        output_limit,
        "Read a smaller range with offset and limit.",
    )))
}

/// Lists a directory.
pub struct ListDir;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    path: String,
}

impl Tool for ListDir {
    fn name(&self) -> &'static str {
        "list_dir"
    }
    fn description(&self) -> &'static str {
        "List the entries of a directory (folders end with `/`, symlinks with `@`)."
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})
    }
    fn is_mutating(&self) -> bool {
        false
    }
    fn handle<'a>(
        &'a self,
        ctx: &'a ToolContext,
        args: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let a: ListArgs = parse_args(self.name(), args)?;
            let path = resolve_read(ctx, &a.path)?;
            blocking(move || {
                let rd = std::fs::read_dir(&path)
                    .map_err(|e| ToolError::Model(format!("cannot list `{}`: {e}", a.path)))?;
                let mut names: Vec<String> = Vec::new();
                for entry in rd.flatten() {
                    let name = entry.file_name().to_string_lossy().into_owned();
                    let ft = entry.file_type().ok();
                    let suffix = match ft {
                        Some(t) if t.is_symlink() => "@",
                        Some(t) if t.is_dir() => "/",
                        _ => "",
                    };
                    names.push(format!("{name}{suffix}"));
                }
                names.sort();
                let total = names.len();
                names.truncate(MAX_ENTRIES);
                let mut out = names.join("\n");
                if total > MAX_ENTRIES {
                    out.push_str(&format!(
                        "\n[{total} entries; the first {MAX_ENTRIES} shown]"
                    ));
                }
                if total == 0 {
                    out = "(empty directory)".into();
                }
                Ok(ToolOutput::text(out))
            })
            .await
        })
    }
}

/// Finds files by glob pattern.
pub struct Glob;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GlobArgs {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
}

fn search_root(ctx: &ToolContext, path: &Option<String>) -> Result<PathBuf, ToolError> {
    match path {
        Some(p) => resolve_read(ctx, p),
        None => Ok(ctx.workspace.clone()),
    }
}

fn display_path(root: &Path, ws: &Path, p: &Path) -> String {
    p.strip_prefix(ws)
        .or_else(|_| p.strip_prefix(root))
        .unwrap_or(p)
        .display()
        .to_string()
}

impl Tool for Glob {
    fn name(&self) -> &'static str {
        "glob"
    }
    fn description(&self) -> &'static str {
        "Find files whose path matches a glob such as `**/*.rs` (relative to `path`, default the workspace). Respects .gitignore."
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "pattern": {"type": "string"}, "path": {"type": "string"}
        }, "required": ["pattern"]})
    }
    fn is_mutating(&self) -> bool {
        false
    }
    fn handle<'a>(
        &'a self,
        ctx: &'a ToolContext,
        args: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let a: GlobArgs = parse_args(self.name(), args)?;
            let root = search_root(ctx, &a.path)?;
            let ws = ctx.workspace.clone();
            blocking(move || {
                let matcher = globset::GlobBuilder::new(&a.pattern)
                    .literal_separator(true)
                    .build()
                    .map_err(|e| ToolError::Model(format!("invalid glob `{}`: {e}", a.pattern)))?
                    .compile_matcher();
                let mut hits = Vec::new();
                let mut total = 0usize;
                for entry in ignore::WalkBuilder::new(&root)
                    .hidden(false)
                    .filter_entry(|e| e.file_name() != ".git")
                    .build()
                    .flatten()
                {
                    if !entry.file_type().is_some_and(|t| t.is_file()) {
                        continue;
                    }
                    let rel = entry.path().strip_prefix(&root).unwrap_or(entry.path());
                    if matcher.is_match(rel) {
                        total += 1;
                        if hits.len() < MAX_ENTRIES {
                            hits.push(display_path(&root, &ws, entry.path()));
                        }
                    }
                }
                hits.sort();
                let mut out = if hits.is_empty() {
                    format!("no files match `{}`", a.pattern)
                } else {
                    hits.join("\n")
                };
                if total > MAX_ENTRIES {
                    out.push_str(&format!(
                        "\n[{total} files match; the first {MAX_ENTRIES} shown]"
                    ));
                }
                Ok(ToolOutput::text(out))
            })
            .await
        })
    }
}

/// Searches file contents with a regular expression.
pub struct Grep;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GrepArgs {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    glob: Option<String>,
    #[serde(default)]
    case_insensitive: Option<bool>,
}

impl Tool for Grep {
    fn name(&self) -> &'static str {
        "grep"
    }
    fn description(&self) -> &'static str {
        "Search file contents with a regular expression; prints `path:line:text`. `glob` filters files (e.g. `*.rs`). Respects .gitignore."
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "pattern": {"type": "string"}, "path": {"type": "string"},
            "glob": {"type": "string"}, "case_insensitive": {"type": "boolean"}
        }, "required": ["pattern"]})
    }
    fn is_mutating(&self) -> bool {
        false
    }
    fn handle<'a>(
        &'a self,
        ctx: &'a ToolContext,
        args: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let a: GrepArgs = parse_args(self.name(), args)?;
            let root = search_root(ctx, &a.path)?;
            let ws = ctx.workspace.clone();
            let limit = ctx.output_limit;
            blocking(move || grep(&a, &root, &ws, limit)).await
        })
    }
}

fn grep(
    a: &GrepArgs,
    root: &Path,
    ws: &Path,
    output_limit: usize,
) -> Result<ToolOutput, ToolError> {
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(a.case_insensitive.unwrap_or(false))
        .build(&a.pattern)
        .map_err(|e| {
            ToolError::Model(format!("invalid regular expression `{}`: {e}", a.pattern))
        })?;
    let filter = match &a.glob {
        Some(g) => Some(
            globset::Glob::new(g)
                .map_err(|e| ToolError::Model(format!("invalid glob `{g}`: {e}")))?
                .compile_matcher(),
        ),
        None => None,
    };
    let mut searcher = SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(0))
        .line_number(true)
        .build();
    let mut lines = Vec::new();
    let mut total = 0usize;
    for entry in ignore::WalkBuilder::new(root)
        .hidden(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build()
        .flatten()
    {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        if let Some(f) = &filter {
            let name_ok = entry.path().file_name().is_some_and(|n| f.is_match(n));
            let rel = entry.path().strip_prefix(root).unwrap_or(entry.path());
            if !name_ok && !f.is_match(rel) {
                continue;
            }
        }
        let shown = display_path(root, ws, entry.path());
        let _ = searcher.search_path(
            &matcher,
            entry.path(),
            UTF8(|n, line| {
                total += 1;
                if lines.len() < MAX_MATCHES {
                    let l = line.trim_end_matches(['\n', '\r']);
                    let l: String = l.chars().take(500).collect();
                    lines.push(format!("{shown}:{n}:{l}"));
                }
                Ok(true)
            }),
        );
    }
    let mut out = if lines.is_empty() {
        format!("no matches for `{}`", a.pattern)
    } else {
        lines.join("\n")
    };
    if total > MAX_MATCHES {
        out.push_str(&format!("\n[{total} matching lines; the first {MAX_MATCHES} shown. Narrow the pattern or the path.]"));
    }
    Ok(ToolOutput::text(truncate_head(
        &out,
        output_limit,
        "Narrow the pattern or the path.",
    )))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::Fixture;
    use super::*;

    #[tokio::test]
    async fn read_file_ranges_and_binary() {
        let f = Fixture::new();
        let body: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        std::fs::write(f.ws().join("a.txt"), body).unwrap();
        std::fs::write(f.ws().join("b.bin"), [0u8, 1, 2, 3]).unwrap();
        let out = f
            .run(&ReadFile, json!({"path": "a.txt", "offset": 3, "limit": 2}))
            .await
            .unwrap();
        assert!(
            out.content.contains("     3\tline 3\n     4\tline 4\n"),
            "{}",
            out.content
        );
        assert!(out.content.contains("use offset 5"));
        let bin = f.run(&ReadFile, json!({"path": "b.bin"})).await.unwrap();
        assert!(bin.content.contains("binary file"));
        let missing = f
            .run(&ReadFile, json!({"path": "nope.txt"}))
            .await
            .unwrap_err();
        assert!(missing.to_string().contains("no such file"));
        let bad = f
            .run(&ReadFile, json!({"file": "a.txt"}))
            .await
            .unwrap_err();
        assert!(bad.to_string().contains("invalid arguments"), "{bad}");
    }

    #[tokio::test]
    async fn list_glob_and_grep_respect_gitignore() {
        let f = Fixture::new();
        std::fs::create_dir_all(f.ws().join("src")).unwrap();
        std::fs::create_dir_all(f.ws().join("target")).unwrap();
        std::fs::write(f.ws().join(".gitignore"), "target/\n").unwrap();
        std::fs::write(
            f.ws().join("src/main.rs"),
            "fn main() {\n    println!(\"Hello\");\n}\n",
        )
        .unwrap();
        std::fs::write(f.ws().join("target/gen.rs"), "fn hello() {}\n").unwrap();
        std::fs::write(f.ws().join("notes.md"), "hello notes\n").unwrap();
        // The ignore crate only honours .gitignore inside a git repository.
        std::fs::create_dir_all(f.ws().join(".git")).unwrap();
        let ls = f.run(&ListDir, json!({"path": "."})).await.unwrap();
        assert!(ls.content.contains("src/") && ls.content.contains("notes.md"));
        let g = f.run(&Glob, json!({"pattern": "**/*.rs"})).await.unwrap();
        assert_eq!(g.content, "src/main.rs");
        let hits = f
            .run(&Grep, json!({"pattern": "hello", "case_insensitive": true}))
            .await
            .unwrap();
        assert!(hits.content.contains("src/main.rs:2:"), "{}", hits.content);
        assert!(hits.content.contains("notes.md:1:hello notes"));
        assert!(!hits.content.contains("target"));
        let only_rs = f
            .run(
                &Grep,
                json!({"pattern": "hello", "glob": "*.rs", "case_insensitive": true}),
            )
            .await
            .unwrap();
        assert!(!only_rs.content.contains("notes.md"));
        let bad = f.run(&Grep, json!({"pattern": "("})).await.unwrap_err();
        assert!(bad.to_string().contains("invalid regular expression"));
    }
}
