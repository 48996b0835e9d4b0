//! The plan document: validation before review (PM-15), the frozen snapshot (PM-16), and
//! reading the file with a cap, regular files only.

use std::path::Path;

/// Snapshots larger than this are cut, with a visible note.
pub const SNAPSHOT_LIMIT: usize = 512 * 1024;

/// What is wrong with a plan file, phrased for the model to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PlanFileError(pub String);

/// Checks that a plan file is UTF-8 and starts with a non-empty `## Summary`. The error tells
/// the model what to fix.
pub fn check_plan_text(bytes: &[u8]) -> Result<&str, PlanFileError> {
    let text = std::str::from_utf8(bytes).map_err(|_| {
        PlanFileError("the plan file is not UTF-8 text; rewrite it as plain Markdown".into())
    })?;
    let mut lines = text.lines().skip_while(|l| l.trim().is_empty());
    let first = lines.next().map(str::trim_end);
    if !first.is_some_and(|l| l.eq_ignore_ascii_case("## summary")) {
        return Err(PlanFileError(match first {
            None => "the plan file is empty: write the plan to it first, starting with a `## Summary` section".into(),
            Some(l) => format!(
                "the plan file must begin with a `## Summary` heading, but its first line is `{}`; put a short summary first",
                l.chars().take(80).collect::<String>()
            ),
        }));
    }
    let has_summary = lines
        .take_while(|l| !l.trim_start().starts_with('#'))
        .any(|l| !l.trim().is_empty());
    if !has_summary {
        return Err(PlanFileError(
            "the `## Summary` section is empty: say in a few sentences what the plan changes and why".into(),
        ));
    }
    Ok(text)
}

/// The frozen content of a checked plan: whole, or cut at [`SNAPSHOT_LIMIT`] with a note.
/// Returns the content and whether it was cut.
pub fn snapshot(text: &str) -> (String, bool) {
    snapshot_of(text, text.len() as u64)
}

/// [`snapshot`] of the first part of a file of `total` bytes (read with a cap).
pub fn snapshot_of(text: &str, total: u64) -> (String, bool) {
    if text.len() <= SNAPSHOT_LIMIT && text.len() as u64 == total {
        return (text.to_string(), false);
    }
    let cut = floor_char_boundary(text, SNAPSHOT_LIMIT);
    (
        format!(
            "{}\n\n[Plan cut here: the file has {} bytes and the snapshot keeps the first {} KiB.]\n",
            &text[..cut],
            total,
            SNAPSHOT_LIMIT / 1024
        ),
        true,
    )
}

fn floor_char_boundary(text: &str, at: usize) -> usize {
    let mut cut = at.min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    cut
}

/// The start of a plan file, read with a cap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanRead {
    /// At most the cap, ending on a whole UTF-8 character when the file was cut.
    pub bytes: Vec<u8>,
    /// The file's whole size.
    pub total: u64,
}

impl PlanRead {
    pub fn is_cut(&self) -> bool {
        (self.bytes.len() as u64) < self.total
    }
}

/// Reads at most `cap` bytes of the plan file. Only a regular file is read: a FIFO, socket
/// or device put in its place is refused at once instead of blocking the reader. `Ok(None)`
/// when there is no file.
pub fn read_plan_file(path: &Path, cap: usize) -> Result<Option<PlanRead>, PlanFileError> {
    use std::io::Read as _;
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        _ => {}
    }
    let name = path.display().to_string();
    let file = waymark_tools::fs_policy::open_regular(path, &name)
        .map_err(|e| PlanFileError(e.to_string()))?;
    let total = file
        .metadata()
        .map_err(|e| PlanFileError(format!("cannot read `{name}`: {e}")))?
        .len();
    let mut bytes = Vec::new();
    file.take(cap as u64)
        .read_to_end(&mut bytes)
        .map_err(|e| PlanFileError(format!("cannot read `{name}`: {e}")))?;
    let total = total.max(bytes.len() as u64);
    if (bytes.len() as u64) < total
        && let Err(e) = std::str::from_utf8(&bytes)
        && e.error_len().is_none()
    {
        // Cut inside a character: end on the last whole one.
        bytes.truncate(e.valid_up_to());
    }
    Ok(Some(PlanRead { bytes, total }))
}

/// The user's own version of the plan, read from a file they name (`plan edit --file`):
/// a regular file only (a FIFO is not waited on, a device not read), UTF-8, and at most
/// [`SNAPSHOT_LIMIT`] bytes, which is all a revision keeps.
pub fn read_user_plan(path: &Path) -> Result<String, PlanFileError> {
    let name = path.display().to_string();
    // One byte past the limit: a file that grows while it is read is refused too, never
    // taken cut at the limit.
    let read = read_plan_file(path, SNAPSHOT_LIMIT + 1)?
        .ok_or_else(|| PlanFileError(format!("`{name}` does not exist")))?;
    if read.is_cut() || read.bytes.len() > SNAPSHOT_LIMIT {
        return Err(PlanFileError(format!(
            "`{name}` is {} KiB, larger than a plan may be ({} KiB)",
            read.total.div_ceil(1024),
            SNAPSHOT_LIMIT / 1024
        )));
    }
    String::from_utf8(read.bytes).map_err(|_| PlanFileError(format!("`{name}` is not UTF-8 text")))
}

fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The plan file as the desktop shows it while it changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LivePlan {
    /// The whole text, when it is small enough to edit in place; `None` when there is no
    /// file or only part of it is shown (so an edit can never save a cut copy over it).
    pub markdown: Option<String>,
    /// Rendered HTML (sanitized), with a note when the file was cut or not readable.
    pub html: String,
}

/// Reads and renders the plan file for live display: at most [`SNAPSHOT_LIMIT`] bytes are
/// rendered, and a note says when the rest is left out or the file cannot be shown.
/// Known secrets in the file are shown redacted.
pub fn live_plan(path: &Path, redactor: &waymark_config::secrets::Redactor) -> LivePlan {
    let note = |text: String| {
        format!(
            "<p class=\"plan-note\" data-testid=\"plan-note\">{}</p>",
            escape_html(&text)
        )
    };
    match read_plan_file(path, SNAPSHOT_LIMIT) {
        Ok(None) => LivePlan {
            markdown: None,
            html: String::new(),
        },
        Err(e) => LivePlan {
            markdown: None,
            html: note(format!("The plan file cannot be shown: {e}")),
        },
        Ok(Some(read)) => {
            let raw = String::from_utf8_lossy(&read.bytes);
            let text = redactor.redact(&raw).into_owned();
            let mut html = super::render::render(&text);
            if text != raw {
                // Editing the shown text in place would write the placeholders over the file.
                html.push_str(&note(
                    "Known secrets in this plan file are hidden. Open the file in an editor to change it.".into(),
                ));
                return LivePlan {
                    markdown: None,
                    html,
                };
            }
            if read.is_cut() {
                html.push_str(&note(format!(
                    "Only the first {} KiB of this {} KiB plan file are shown. Open the file in an editor to see or change the rest.",
                    read.bytes.len() / 1024,
                    read.total.div_ceil(1024)
                )));
                LivePlan {
                    markdown: None,
                    html,
                }
            } else {
                LivePlan {
                    markdown: Some(text),
                    html,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_plan_file_is_read_whole_or_refused() {
        let dir = tempfile::tempdir().unwrap();
        let at_limit = dir.path().join("ok.md");
        std::fs::write(&at_limit, "x".repeat(SNAPSHOT_LIMIT)).unwrap();
        assert_eq!(read_user_plan(&at_limit).unwrap().len(), SNAPSHOT_LIMIT);
        let over = dir.path().join("big.md");
        std::fs::write(&over, "x".repeat(SNAPSHOT_LIMIT + 1)).unwrap();
        let e = read_user_plan(&over).unwrap_err().0;
        assert!(e.contains("larger than a plan may be"), "{e}");
        let missing = read_user_plan(&dir.path().join("none.md")).unwrap_err().0;
        assert!(missing.contains("does not exist"), "{missing}");
        std::fs::write(dir.path().join("bin.md"), [0xff, 0xfe]).unwrap();
        let e = read_user_plan(&dir.path().join("bin.md")).unwrap_err().0;
        assert!(e.contains("not UTF-8"), "{e}");
    }

    #[test]
    fn pm_15_summary_rules() {
        assert!(check_plan_text(b"## Summary\nAdd a cache.\n\n## Approach\n...").is_ok());
        assert!(check_plan_text(b"\n\n## Summary\n\nAdd a cache.").is_ok());
        let e = check_plan_text(b"").unwrap_err().0;
        assert!(e.contains("empty"), "{e}");
        let e = check_plan_text(b"# Plan\n## Summary\nx").unwrap_err().0;
        assert!(e.contains("first line is `# Plan`"), "{e}");
        let e = check_plan_text(b"## Summary\n\n## Approach\nx")
            .unwrap_err()
            .0;
        assert!(e.contains("Summary` section is empty"), "{e}");
        let e = check_plan_text(&[0xff, 0xfe, 0x00]).unwrap_err().0;
        assert!(e.contains("UTF-8"), "{e}");
    }

    #[test]
    fn pm_16_snapshot_is_cut_with_a_note() {
        let big = format!("## Summary\nx\n{}", "é".repeat(SNAPSHOT_LIMIT));
        let (s, cut) = snapshot(&big);
        assert!(cut);
        assert!(s.len() < SNAPSHOT_LIMIT + 200);
        assert!(s.contains("[Plan cut here"));
        let (small, cut) = snapshot("## Summary\nx\n");
        assert!(!cut);
        assert_eq!(small, "## Summary\nx\n");
    }
}
