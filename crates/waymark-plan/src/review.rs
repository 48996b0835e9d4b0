//! Reviewing a plan beyond approve/reject (PM-25 … PM-28): reading its title, steps and
//! budget from the Markdown, quoting and re-finding commented passages, and the feedback
//! message a revise-with-comments sends.

use waymark_protocol::{CommentState, LineComment};

use super::shown::cut_chars;
pub use super::shown::{MAX_STEPS, budget, checks, steps, title};
/// Most comments one revise answer may carry.
pub const MAX_COMMENTS: usize = 100;
/// Longest comment text.
pub const COMMENT_CHARS: usize = 4000;
/// Most lines one comment may quote.
pub const COMMENT_LINES: u32 = 200;
/// Most of a quoted passage the feedback message repeats (characters).
pub const QUOTE_CHARS: usize = 4000;
/// Longest general feedback (characters).
pub const FEEDBACK_CHARS: usize = 20_000;

/// Why a comment does not fit the revision it is on, said for the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CommentError(pub String);

/// Lines `start..=end` (1-based) of `text`, or why they cannot be quoted.
pub fn quote(text: &str, start: u32, end: u32) -> Result<String, CommentError> {
    let lines: Vec<&str> = text.lines().collect();
    if start == 0 || end < start {
        return Err(CommentError(format!(
            "lines {start}-{end} are not a range (lines count from 1)"
        )));
    }
    if end as usize > lines.len() {
        return Err(CommentError(format!(
            "lines {start}-{end} are past the end of the revision ({} lines)",
            lines.len()
        )));
    }
    Ok(lines[start as usize - 1..end as usize].join("\n"))
}

/// Where `quote`'s lines stand in `text` word for word (1-based, inclusive): the match
/// nearest to `near` when there are several.
pub fn locate(text: &str, quote: &str, near: u32) -> Option<(u32, u32)> {
    let lines: Vec<&str> = text.lines().collect();
    // Split, not `lines()`: a quoted blank line is one empty line, not none.
    let want: Vec<&str> = quote.split('\n').collect();
    if want.len() > lines.len() {
        return None;
    }
    (0..=lines.len() - want.len())
        .filter(|&i| lines[i..i + want.len()] == want[..])
        .min_by_key(|&i| (i as i64 + 1 - i64::from(near)).abs())
        .map(|i| (i as u32 + 1, (i + want.len()) as u32))
}

/// A comment's state against the newest revision of its plan (`newest` is None while the
/// commented revision is the newest).
pub fn state(quote: &str, start: u32, newest: Option<&str>) -> (CommentState, Option<(u32, u32)>) {
    match newest {
        None => (
            CommentState::Open,
            Some((start, start + quote.split('\n').count() as u32 - 1)),
        ),
        Some(text) => match locate(text, quote, start) {
            Some(at) => (CommentState::Unchanged, Some(at)),
            None => (CommentState::Addressed, None),
        },
    }
}

/// Checks the comments of a revise answer against the revision under review; each with its
/// quote.
pub fn checked(
    text: &str,
    comments: &[LineComment],
) -> Result<Vec<(LineComment, String)>, CommentError> {
    if comments.len() > MAX_COMMENTS {
        return Err(CommentError(format!(
            "{} comments in one revise; at most {MAX_COMMENTS}",
            comments.len()
        )));
    }
    comments
        .iter()
        .map(|c| {
            let body = c.text.trim();
            if body.is_empty() {
                return Err(CommentError(format!(
                    "the comment on lines {}-{} is empty",
                    c.start, c.end
                )));
            }
            if body.chars().count() > COMMENT_CHARS {
                return Err(CommentError(format!(
                    "the comment on lines {}-{} is longer than {COMMENT_CHARS} characters",
                    c.start, c.end
                )));
            }
            let q = quote(text, c.start, c.end)?;
            if c.end - c.start >= COMMENT_LINES {
                return Err(CommentError(format!(
                    "the comment on lines {}-{} spans more than {COMMENT_LINES} lines; comment on a shorter passage",
                    c.start, c.end
                )));
            }
            Ok((
                LineComment {
                    text: body.to_string(),
                    ..c.clone()
                },
                q,
            ))
        })
        .collect()
}

/// The one message a revise sends: the general feedback, then each commented passage quoted
/// with its comment, oldest line first.
pub fn feedback_message(version: u32, text: &str, comments: &[(LineComment, String)]) -> String {
    let mut m =
        format!("The user reviewed revision v{version} of the plan and asks for changes.\n");
    let general = text.trim();
    if !general.is_empty() {
        m.push_str(&format!("\nGeneral feedback:\n{general}\n"));
    }
    let mut sorted: Vec<&(LineComment, String)> = comments.iter().collect();
    sorted.sort_by_key(|(c, _)| (c.start, c.end));
    if !sorted.is_empty() {
        m.push_str(&format!(
            "\nComments on passages of the plan ({}):\n",
            sorted.len()
        ));
        for (i, (c, quoted)) in sorted.iter().enumerate() {
            let lines = if c.start == c.end {
                format!("line {}", c.start)
            } else {
                format!("lines {}-{}", c.start, c.end)
            };
            m.push_str(&format!("\n{}. On {lines}:\n", i + 1));
            let shown = cut_chars(quoted, QUOTE_CHARS);
            for l in shown.lines() {
                m.push_str(&format!("   > {l}\n"));
            }
            let mut body = c.text.lines();
            m.push_str(&format!("   Comment: {}\n", body.next().unwrap_or("")));
            for l in body {
                m.push_str(&format!("            {l}\n"));
            }
        }
    }
    m.push_str(
        "\nRevise the plan file so that it answers every point (you are still in plan mode), then call ExitPlanMode again.",
    );
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str = "## Summary\nAdd a retry to the uploader. It fails on flaky networks.\n\n## Steps\n1. Wrap the call in a retry loop\n   - with backoff\n2. Add a test\n- Update the docs\n\n## Budget\nAbout `budget=40K turns=12 time=1h`.\n";

    #[test]
    fn an_unchanged_empty_quote_is_placed() {
        let (s, at) = state("", 2, Some("a\n\nb"));
        assert_eq!((s, at), (CommentState::Unchanged, Some((2, 2))));
    }

    #[test]
    fn quotes_are_checked_and_found_again_where_they_moved() {
        assert_eq!(
            quote(PLAN, 5, 6).unwrap(),
            "1. Wrap the call in a retry loop\n   - with backoff"
        );
        assert!(quote(PLAN, 0, 1).is_err());
        assert!(quote(PLAN, 3, 2).is_err());
        assert!(quote(PLAN, 1, 99).unwrap_err().0.contains("past the end"));
        let moved = format!("## Summary\nNew first line.\n\n{PLAN}");
        assert_eq!(locate(&moved, "2. Add a test", 7), Some((10, 10)));
        assert_eq!(locate(&moved, "2. Add more tests", 7), None);
        let (s, at) = state("2. Add a test", 7, Some(&moved));
        assert_eq!((s, at), (CommentState::Unchanged, Some((10, 10))));
        assert_eq!(state("gone", 1, Some(&moved)).0, CommentState::Addressed);
        assert_eq!(state("a\nb", 3, None), (CommentState::Open, Some((3, 4))));
    }

    #[test]
    fn hostile_comments_are_refused_with_the_reason() {
        let c = |start, end, text: &str| LineComment {
            start,
            end,
            text: text.into(),
        };
        assert!(
            checked(PLAN, &[c(1, 1, "  ")])
                .unwrap_err()
                .0
                .contains("empty")
        );
        assert!(
            checked(PLAN, &[c(1, 1, &"x".repeat(5000))])
                .unwrap_err()
                .0
                .contains("longer")
        );
        assert!(
            checked(PLAN, &[c(2, 900, "x")])
                .unwrap_err()
                .0
                .contains("past the end")
        );
        let long = format!("## Summary\n{}", "x\n".repeat(300));
        assert!(
            checked(&long, &[c(1, 250, "x")])
                .unwrap_err()
                .0
                .contains("more than 200 lines")
        );
        let flood: Vec<LineComment> = (0..101).map(|_| c(1, 1, "x")).collect();
        assert!(checked(PLAN, &flood).unwrap_err().0.contains("at most 100"));
    }
}
