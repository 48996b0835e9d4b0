//! Read-only tools: read_file (regular files only, reading just the requested window) and
//! list_dir. The search tools are in `search.rs`.

use super::fs_policy::{open_regular, resolve_read};
use super::{Tool, ToolContext, ToolError, ToolOutput, blocking, parse_args, truncate_head};
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::Path;

const DEFAULT_LINES: usize = 2000;
const MAX_LINE_CHARS: usize = 2000;
const MAX_ENTRIES: usize = 1000;

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
    fn effects(&self) -> crate::Effects {
        crate::Effects::READS
    }
}

impl crate::FreeTool for ReadFile {
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

/// Bytes of one line kept before the rest of the line is skipped unread into memory.
const MAX_LINE_BYTES: usize = MAX_LINE_CHARS * 4;

/// One line from `r`: up to `keep` bytes of it (without the break) and whether it was
/// longer. `None` at the end of the file. Long lines are skipped in chunks, never held.
fn next_line(
    r: &mut impl std::io::BufRead,
    keep: usize,
    out: &mut Vec<u8>,
) -> std::io::Result<Option<bool>> {
    out.clear();
    let mut cut = false;
    let mut any = false;
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok(any.then_some(cut));
        }
        any = true;
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        let room = keep.saturating_sub(out.len());
        if chunk.len() > room {
            cut = true;
        }
        out.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let used = done.unwrap_or(buf.len());
        r.consume(used);
        if done.is_some() {
            if out.last() == Some(&b'\r') {
                out.pop();
            }
            return Ok(Some(cut));
        }
    }
}

/// Reads only the requested window of lines: the lines before it are skipped without being
/// kept, and reading stops at the first line after it.
fn read_file(path: &Path, a: &ReadArgs, output_limit: usize) -> Result<ToolOutput, ToolError> {
    use std::io::BufRead as _;
    let f = open_regular(path, &a.path)?;
    let io_err = |e: std::io::Error| ToolError::Model(format!("cannot read `{}`: {e}", a.path));
    let mut r = std::io::BufReader::with_capacity(64 * 1024, f);
    let head = r.fill_buf().map_err(io_err)?;
    if head.is_empty() {
        return Ok(ToolOutput::text(format!("`{}` is empty", a.path)));
    }
    if head[..head.len().min(8192)].contains(&0) {
        let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        return Ok(ToolOutput::text(format!(
            "`{}` is a binary file ({size} bytes); its content is not shown",
            a.path
        )));
    }
    let start = a.offset.unwrap_or(1).max(1);
    let count = a.limit.unwrap_or(DEFAULT_LINES).max(1);
    let mut out = String::new();
    let mut line = Vec::new();
    let mut number = 0usize;
    let mut shown = 0usize;
    let mut more = false;
    let mut full = false;
    loop {
        if shown == count || full {
            // The window is full: whether the file goes on is one peek, not another line
            // (which could be gigabytes long).
            more = !r.fill_buf().map_err(io_err)?.is_empty();
            break;
        }
        let Some(cut) = next_line(&mut r, MAX_LINE_BYTES, &mut line).map_err(io_err)? else {
            break;
        };
        number += 1;
        if number < start {
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        let chars = text.chars().count();
        let shown_text: String = if cut || chars > MAX_LINE_CHARS {
            let s: String = text.chars().take(MAX_LINE_CHARS).collect();
            format!("{s}… [line cut at {MAX_LINE_CHARS} characters]")
        } else {
            text.into_owned()
        };
        out.push_str(&format!("{number:>6}\t{shown_text}\n"));
        shown += 1;
        // Past the output limit nothing more would be kept: stop reading.
        full = out.len() >= output_limit;
    }
    if shown == 0 {
        return Err(ToolError::Model(format!(
            "`{}` has {number} lines; offset {start} is past the end",
            a.path
        )));
    }
    if more {
        let end = start - 1 + shown;
        out.push_str(&format!(
            "[lines {start}-{end} shown; the file goes on: use offset {} to read on]\n",
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
    fn effects(&self) -> crate::Effects {
        crate::Effects::READS
    }
}

impl crate::FreeTool for ListDir {
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
}
