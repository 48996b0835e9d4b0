//! The plan document: validation before review (PM-15) and the frozen snapshot (PM-16).

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
    if text.len() <= SNAPSHOT_LIMIT {
        return (text.to_string(), false);
    }
    let mut cut = SNAPSHOT_LIMIT;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    (
        format!(
            "{}\n\n[Plan cut here: the file has {} bytes and the snapshot keeps the first {} KiB.]\n",
            &text[..cut],
            text.len(),
            SNAPSHOT_LIMIT / 1024
        ),
        true,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

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
