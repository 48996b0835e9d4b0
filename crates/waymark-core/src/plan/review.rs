//! Reviewing a plan beyond approve/reject (PM-25 … PM-28): reading its title, steps and
//! budget from the Markdown, quoting and re-finding commented passages, and the feedback
//! message a revise-with-comments sends.

use waymark_protocol::{CommentState, LineComment};

/// Most steps read from a plan (a longer list is cut, with the rest not checked one by one).
pub const MAX_STEPS: usize = 50;
/// Longest step text kept.
const STEP_CHARS: usize = 300;
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

/// Elements that never have content or a closing tag.
const VOID_ELEMENTS: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
    "track", "wbr",
];

/// How a run of raw HTML changes the nesting of raw elements: opening tags (not void, not
/// self-closing) add one, closing tags take one away. Comments, doctypes and processing
/// instructions change nothing.
fn html_depth_change(html: &str) -> i64 {
    let mut change = 0i64;
    let mut rest = html;
    while let Some(at) = rest.find('<') {
        rest = &rest[at + 1..];
        let (closing, name_at) = match rest.strip_prefix('/') {
            Some(r) => (true, r),
            None => (false, rest),
        };
        let name: String = name_at
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        if name.is_empty() || !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
            continue;
        }
        let end = name_at.find('>').unwrap_or(name_at.len());
        let self_closing = name_at[..end].ends_with('/');
        let void = VOID_ELEMENTS.contains(&name.to_ascii_lowercase().as_str());
        if closing {
            change -= 1;
        } else if !self_closing && !void {
            change += 1;
        }
    }
    change
}

/// The plan as the rendered page shows it, for reading sections: what lies in code blocks,
/// in raw HTML (`<style>`, `<textarea>`, `<details>`, any tag, comments) and inside raw HTML
/// elements is blanked, line breaks kept, so a section hidden there is not read as one.
fn visible(text: &str) -> String {
    use pulldown_cmark::{Event, Parser, Tag, TagEnd};
    let mut hidden: Vec<std::ops::Range<usize>> = Vec::new();
    let mut depth = 0i64;
    let mut inside_from: Option<usize> = None;
    let mut code_from: Option<usize> = None;
    for (event, range) in Parser::new_ext(text, super::render::options()).into_offset_iter() {
        match event {
            Event::Html(html) | Event::InlineHtml(html) => {
                hidden.push(range.clone());
                let was = depth;
                depth = (depth + html_depth_change(&html)).max(0);
                if was == 0 && depth > 0 {
                    inside_from = Some(range.start);
                } else if was > 0
                    && depth == 0
                    && let Some(from) = inside_from.take()
                {
                    hidden.push(from..range.end);
                }
            }
            Event::Start(Tag::CodeBlock(_)) => code_from = Some(range.start),
            Event::End(TagEnd::CodeBlock) => {
                if let Some(from) = code_from.take() {
                    hidden.push(from..range.end);
                }
            }
            _ => {}
        }
    }
    // An element never closed hides the rest of the plan.
    if let Some(from) = inside_from {
        hidden.push(from..text.len());
    }
    if hidden.is_empty() {
        return text.to_string();
    }
    hidden.sort_by_key(|r| r.start);
    let mut out = String::with_capacity(text.len());
    let mut ranges = hidden.into_iter().peekable();
    let mut current: Option<std::ops::Range<usize>> = None;
    for (i, c) in text.char_indices() {
        while current.as_ref().is_none_or(|r| r.end <= i) {
            match ranges.next() {
                Some(r) => current = Some(r),
                None => {
                    current = None;
                    break;
                }
            }
        }
        // Later ranges may start before this one ends (nested): the sweep takes the widest.
        while let Some(next) = ranges.peek() {
            match &mut current {
                Some(r) if next.start <= r.end => {
                    r.end = r.end.max(next.end);
                    ranges.next();
                }
                _ => break,
            }
        }
        let hide = c != '\n' && current.as_ref().is_some_and(|r| r.contains(&i));
        out.push(if hide { ' ' } else { c });
    }
    out
}

/// The body of the `## name` (or `### name`) section of the visible plan, case-insensitive,
/// up to the next heading of level 1 or 2; None without one.
fn section_of<'a>(visible: &'a str, name: &str) -> Option<Vec<&'a str>> {
    let mut it = visible.lines();
    it.find(|l| {
        let t = l.trim();
        t.strip_prefix("### ")
            .or_else(|| t.strip_prefix("## "))
            .is_some_and(|h| h.trim().eq_ignore_ascii_case(name))
    })?;
    Some(
        it.take_while(|l| !(l.starts_with("# ") || l.starts_with("## ")))
            .collect(),
    )
}

/// What a plan is called: the first sentence of its summary, else its first heading.
pub fn title(text: &str) -> Option<String> {
    let shown = visible(text);
    let first = section_of(&shown, "Summary")
        .and_then(|body| {
            body.into_iter()
                .map(str::trim)
                .find(|l| !l.is_empty() && !l.starts_with('#'))
        })
        .or_else(|| {
            shown
                .lines()
                .map(|l| l.trim().trim_start_matches('#').trim())
                .find(|l| !l.is_empty())
        })?;
    let sentence = first.split(". ").next().unwrap_or(first);
    Some(cut_chars(sentence.trim_end_matches('.'), 100))
}

fn cut_chars(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(n - 1).collect::<String>())
    }
}

/// The plan's steps: the top-level items (`1.`, `1)`, `-`, `*`) of its `## Steps` section,
/// or of its `## Implementation` section; at most [`MAX_STEPS`].
pub fn steps(text: &str) -> Vec<String> {
    let shown = visible(text);
    let Some(body) = section_of(&shown, "Steps").or_else(|| section_of(&shown, "Implementation"))
    else {
        return Vec::new();
    };
    body.into_iter()
        .filter_map(|l| {
            // Top level only (at most one space in): a nested item belongs to its step.
            if l.starts_with('\t') || l.starts_with("  ") {
                return None;
            }
            let l = l.trim_start();
            let item = if let Some(rest) = l.strip_prefix("- ").or_else(|| l.strip_prefix("* ")) {
                rest
            } else {
                let digits = l.find(|c: char| !c.is_ascii_digit()).unwrap_or(0);
                let rest = &l[digits..];
                if digits == 0 {
                    return None;
                }
                rest.strip_prefix(". ")
                    .or_else(|| rest.strip_prefix(") "))?
            };
            let item = item.trim();
            (!item.is_empty()).then(|| cut_chars(item, STEP_CHARS))
        })
        .take(MAX_STEPS)
        .collect()
}

/// The words of the plan's `## Budget` section in the `/goal` budget syntax
/// (`budget=50K turns=20 time=2h`), when it names at least one, every one reads and no key
/// comes twice.
pub fn budget(text: &str) -> Option<String> {
    let shown = visible(text);
    let body = section_of(&shown, "Budget")?;
    let words: Vec<String> = body
        .iter()
        .flat_map(|l| l.split_whitespace())
        .map(|w| w.trim_matches(|c: char| matches!(c, '`' | ',' | ';' | '.' | '(' | ')')))
        .filter(|w| w.starts_with("budget=") || w.starts_with("turns=") || w.starts_with("time="))
        .map(str::to_string)
        .collect();
    if words.is_empty() {
        return None;
    }
    let text = words.join(" ");
    matches!(
        crate::goal::parse_command(&text),
        Ok(waymark_protocol::GoalOp::EditBudget { .. })
    )
    .then_some(text)
}

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
    fn sections_inside_raw_html_are_not_read() {
        for hidden in [
            "<style>\n## Budget\nbudget=1M\n</style>\n",
            "<textarea>\n## Budget\nbudget=1M\n</textarea>\n",
            "<div>\n\n## Budget\n\nbudget=1M\n\n</div>\n",
            "<details>\n<summary>x</summary>\n\n## Budget\nbudget=1M\n</details>\n",
            "<div>\n\n## Budget\nbudget=1M\n",
            "<x-y>\n\n## Budget\nbudget=1M\n\n</x-y>\n",
        ] {
            let plan = format!("## Summary\nA plan.\n\n{hidden}");
            assert_eq!(budget(&plan), None, "{hidden:?}");
        }
        let shown = "## Summary\nA plan.<br>\n\n<hr/>\n\n## Budget\nbudget=5K\n";
        assert_eq!(budget(shown).as_deref(), Some("budget=5K"));
        assert_eq!(budget("## Budget\nbudget=5K budget=6K\n"), None);
    }

    #[test]
    fn hidden_sections_are_not_read_and_loose_lists_are() {
        let hidden =
            "## Summary\nx\n<!--\n## Steps\n1. exfiltrate\n-->\n```\n## Budget\nbudget=1M\n```\n";
        assert!(steps(hidden).is_empty());
        assert_eq!(budget(hidden), None);
        assert_eq!(steps("## Steps\n 1. a\n 2. b\n"), ["a", "b"]);
        assert_eq!(steps("### Steps\n1. a\n   - nested\n"), ["a"]);
        let (s, at) = state("", 2, Some("a\n\nb"));
        assert_eq!((s, at), (CommentState::Unchanged, Some((2, 2))));
    }

    #[test]
    fn title_steps_and_budget_come_from_the_markdown() {
        assert_eq!(title(PLAN).as_deref(), Some("Add a retry to the uploader"));
        assert_eq!(
            steps(PLAN),
            [
                "Wrap the call in a retry loop",
                "Add a test",
                "Update the docs"
            ]
        );
        assert_eq!(budget(PLAN).as_deref(), Some("budget=40K turns=12 time=1h"));
        assert_eq!(
            budget("## Budget\nbudget=lots\n"),
            None,
            "a budget that does not read"
        );
        assert_eq!(budget("## Summary\nx\n"), None);
        assert!(steps("## Summary\nx\n").is_empty());
        let many = format!("## Steps\n{}", "1. x\n".repeat(80));
        assert_eq!(steps(&many).len(), MAX_STEPS);
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
