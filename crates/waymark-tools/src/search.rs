//! The search tools, glob and grep. Both respect .gitignore and are bounded: a search
//! visits at most [`MAX_VISITED`] directory entries, grep reads at most
//! [`MAX_SEARCH_BYTES`] of file content, neither runs longer than [`MAX_SEARCH_TIME`], and
//! Stop ends them at once. A search that was cut says so, and why, in its result.

use super::fs_policy::{open_regular, resolve_read};
use super::{Tool, ToolContext, ToolError, ToolOutput, blocking, parse_args, truncate_head};
use futures_util::future::BoxFuture;
use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, SearcherBuilder, sinks::UTF8};
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use waymark_sandbox::private::Protected;

/// Paths listed by glob at most.
const MAX_LISTED: usize = 1000;
/// Matching lines shown by grep at most.
const MAX_MATCHES: usize = 500;
/// Directory entries one search visits at most.
pub const MAX_VISITED: u64 = 200_000;
/// File bytes one grep reads at most.
pub const MAX_SEARCH_BYTES: u64 = 256 * 1024 * 1024;
/// Longest one search runs.
pub const MAX_SEARCH_TIME: Duration = Duration::from_secs(20);

/// What one search may still spend.
struct Bounds {
    visited: u64,
    bytes: std::sync::atomic::AtomicU64,
    deadline: Instant,
    cancel: CancellationToken,
    max_visited: u64,
    max_bytes: u64,
}

impl Bounds {
    fn new(cancel: CancellationToken) -> Self {
        Bounds {
            visited: 0,
            bytes: Default::default(),
            deadline: Instant::now() + MAX_SEARCH_TIME,
            cancel,
            max_visited: MAX_VISITED,
            max_bytes: MAX_SEARCH_BYTES,
        }
    }

    /// Why the search must stop now, if it must.
    fn exhausted(&self) -> Option<String> {
        if self.cancel.is_cancelled() {
            Some("stopped by the user".into())
        } else if self.visited >= self.max_visited {
            Some(format!("{} directory entries visited", self.max_visited))
        } else if self.bytes.load(std::sync::atomic::Ordering::Relaxed) >= self.max_bytes {
            Some(format!("{} MiB of files read", self.max_bytes >> 20))
        } else if Instant::now() >= self.deadline {
            Some(format!("{} s elapsed", MAX_SEARCH_TIME.as_secs()))
        } else {
            None
        }
    }

    /// Counts one visited entry; the reason to stop, if the bounds are reached.
    fn visit(&mut self) -> Option<String> {
        self.visited += 1;
        self.exhausted()
    }
}

/// A reader that counts what it reads against the search's bounds and fails once they are
/// reached, so even one huge file cannot hold a search past its limits.
struct Bounded<'b, R> {
    inner: R,
    bounds: &'b Bounds,
}

impl<R: std::io::Read> std::io::Read for Bounded<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if let Some(why) = self.bounds.exhausted() {
            return Err(std::io::Error::other(BoundsReached(why)));
        }
        let n = self.inner.read(buf)?;
        self.bounds
            .bytes
            .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct BoundsReached(String);

fn cut_note(why: &str) -> String {
    format!(
        "\n[search stopped early ({why}); results are incomplete. Narrow the path or the pattern.]"
    )
}

/// Everything below `root` but `.git` folders and private places (which a search skips:
/// they are read only when the user says so, one call at a time).
fn walker(root: &Path, protected: &Protected) -> ignore::Walk {
    let protected = protected.clone();
    crate::walk::builder(root)
        .hidden(false)
        .filter_entry(move |e| {
            e.file_name() != ".git"
                && (e.depth() == 0 || protected.place_of(e.path()).is_none())
                && crate::walk::descend(e)
        })
        .build()
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

/// Finds files by glob pattern.
pub struct Glob;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GlobArgs {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
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
    fn effects(&self) -> crate::Effects {
        crate::Effects::READS
    }
}

impl crate::FreeTool for Glob {
    fn handle<'a>(
        &'a self,
        ctx: &'a ToolContext,
        args: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let a: GlobArgs = parse_args(self.name(), args)?;
            let root = search_root(ctx, &a.path)?;
            let ws = ctx.workspace.clone();
            let bounds = Bounds::new(ctx.cancel.clone());
            let protected = ctx.protected.clone();
            blocking(move || glob(&a, &root, &ws, &protected, bounds)).await
        })
    }
}

fn glob(
    a: &GlobArgs,
    root: &Path,
    ws: &Path,
    protected: &Protected,
    mut bounds: Bounds,
) -> Result<ToolOutput, ToolError> {
    let matcher = globset::GlobBuilder::new(&a.pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| ToolError::Model(format!("invalid glob `{}`: {e}", a.pattern)))?
        .compile_matcher();
    let mut hits = Vec::new();
    let mut total = 0usize;
    let mut stopped = None;
    for entry in walker(root, protected).flatten() {
        if let Some(why) = bounds.visit() {
            stopped = Some(why);
            break;
        }
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let rel = entry.path().strip_prefix(root).unwrap_or(entry.path());
        if matcher.is_match(rel) {
            total += 1;
            if hits.len() < MAX_LISTED {
                hits.push(display_path(root, ws, entry.path()));
            }
        }
    }
    hits.sort();
    let mut out = if hits.is_empty() {
        format!("no files match `{}`", a.pattern)
    } else {
        hits.join("\n")
    };
    if total > MAX_LISTED {
        out.push_str(&format!(
            "\n[{total} files match; the first {MAX_LISTED} shown]"
        ));
    }
    if let Some(why) = stopped {
        out.push_str(&cut_note(&why));
    }
    Ok(ToolOutput::text(out))
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
    fn effects(&self) -> crate::Effects {
        crate::Effects::READS
    }
}

impl crate::FreeTool for Grep {
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
            let bounds = Bounds::new(ctx.cancel.clone());
            let protected = ctx.protected.clone();
            blocking(move || grep(&a, &root, &ws, &protected, limit, bounds)).await
        })
    }
}

fn grep(
    a: &GrepArgs,
    root: &Path,
    ws: &Path,
    protected: &Protected,
    output_limit: usize,
    mut bounds: Bounds,
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
    let mut stopped = None;
    // A single file (not a folder) is searched like a folder holding only it.
    for entry in walker(root, protected).flatten() {
        if let Some(why) = bounds.visit() {
            stopped = Some(why);
            break;
        }
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
        // Swapped for a FIFO or a device since the walk saw it: skipped.
        let Ok(file) = open_regular(entry.path(), "") else {
            continue;
        };
        let shown = display_path(root, ws, entry.path());
        let reader = Bounded {
            inner: file,
            bounds: &bounds,
        };
        let r = searcher.search_reader(
            &matcher,
            reader,
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
        if let Err(e) = r
            && let Some(why) = e
                .get_ref()
                .and_then(|inner| inner.downcast_ref::<BoundsReached>())
        {
            stopped = Some(why.0.clone());
            break;
        }
    }
    let mut out = if lines.is_empty() {
        format!("no matches for `{}`", a.pattern)
    } else {
        lines.join("\n")
    };
    if total > MAX_MATCHES {
        out.push_str(&format!("\n[{total} matching lines; the first {MAX_MATCHES} shown. Narrow the pattern or the path.]"));
    }
    if let Some(why) = stopped {
        out.push_str(&cut_note(&why));
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

    #[test]
    fn bounds_cut_walks_and_reads_and_say_why() {
        let f = Fixture::new();
        for i in 0..30 {
            std::fs::write(f.ws().join(format!("f{i}.txt")), "needle\n".repeat(100)).unwrap();
        }
        let args = |p: &str| GrepArgs {
            pattern: p.into(),
            path: None,
            glob: None,
            case_insensitive: None,
        };
        let mut few = Bounds::new(CancellationToken::new());
        few.max_visited = 5;
        let out = grep(
            &args("needle"),
            f.ws(),
            f.ws(),
            &Protected::none(),
            1_000_000,
            few,
        )
        .unwrap();
        assert!(
            out.content.contains("5 directory entries visited"),
            "{}",
            out.content
        );
        let mut small = Bounds::new(CancellationToken::new());
        small.max_bytes = 1;
        let out = grep(
            &args("needle"),
            f.ws(),
            f.ws(),
            &Protected::none(),
            1_000_000,
            small,
        )
        .unwrap();
        assert!(out.content.contains("MiB of files read"), "{}", out.content);
        let cancel = CancellationToken::new();
        cancel.cancel();
        let g = GlobArgs {
            pattern: "**/*.txt".into(),
            path: None,
        };
        let out = glob(&g, f.ws(), f.ws(), &Protected::none(), Bounds::new(cancel)).unwrap();
        assert!(
            out.content.contains("stopped by the user"),
            "{}",
            out.content
        );
        let out = glob(
            &g,
            f.ws(),
            f.ws(),
            &Protected::none(),
            Bounds::new(CancellationToken::new()),
        )
        .unwrap();
        assert!(!out.content.contains("stopped early"), "{}", out.content);
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
        let ls = f
            .run(&super::super::ListDir, json!({"path": "."}))
            .await
            .unwrap();
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
