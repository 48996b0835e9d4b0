//! What the rendered plan shows, read the way the page shows it: the title, the `## Steps`
//! and the `## Budget` a goal takes from a plan come from the Markdown parser's own view of
//! the document, with the same extensions the page renders with. Only Markdown text counts:
//! code blocks, raw HTML (`<style>`, `<textarea>`, any tag, comments) and everything inside
//! a raw HTML element are not read, and neither are link destinations, link titles or
//! reference definitions. A section runs to the next heading of its level or above — a raw
//! `<h1>`…`<h6>` included, which the page shows as a heading. Raw HTML is where the page and
//! a reader of the Markdown part ways (the sanitizer shows some of it, hides some, and a
//! tag can join or split words), so a `## Steps` or `## Budget` section holding any is not
//! read at all: the review then offers no steps or no budget.

use pulldown_cmark::{Event, HeadingLevel, Parser, Tag, TagEnd};

/// Most steps read from a plan (a longer list is cut, with the rest not checked one by one).
pub const MAX_STEPS: usize = 50;
/// Longest step text kept.
const STEP_CHARS: usize = 300;

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

/// A piece of the shown document.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Block {
    Heading {
        level: u8,
        text: String,
    },
    /// A list item at a nesting depth (1: top level), with its own text only.
    Item {
        depth: usize,
        text: String,
    },
    /// A paragraph, table cell or other text outside headings and items.
    Text(String),
    /// A fenced or indented code block's text, as the page shows it.
    Code(String),
    /// Raw HTML, a quotation or a footnote: where the page and the Markdown part ways, or
    /// the page sets text apart from the section around it.
    Aside,
}

/// Stands in a heading's text for raw HTML inside it, so the heading names no section.
const HTML_MARK: char = '\u{FFFC}';

/// The level of a raw HTML heading that `html` opens (`<h2 …>`), if any.
fn html_heading(html: &str) -> Option<u8> {
    let lower = html.to_ascii_lowercase();
    (1..=6u8).find(|n| {
        let tag = format!("<h{n}");
        lower.match_indices(&tag).any(|(at, _)| {
            lower[at + tag.len()..]
                .chars()
                .next()
                .is_some_and(|c| c == '>' || c == '/' || c.is_whitespace())
        })
    })
}

fn level(l: HeadingLevel) -> u8 {
    match l {
        HeadingLevel::H1 => 1,
        HeadingLevel::H2 => 2,
        HeadingLevel::H3 => 3,
        HeadingLevel::H4 => 4,
        HeadingLevel::H5 => 5,
        HeadingLevel::H6 => 6,
    }
}

/// What is being collected: the heading, the innermost list item, or a loose block.
enum Open {
    Heading(u8, String),
    Item(usize, String),
    Text(String),
}

/// The document as blocks of the text a reader sees.
fn blocks(markdown: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Vec<Open> = Vec::new();
    let mut lists = 0usize;
    let mut html_depth = 0i64;
    let mut code = false;
    let mut code_text = String::new();
    // Inside a quotation or a footnote: its items are not the section's own.
    let mut containers = 0usize;
    // Inside struck-out text: the page shows it crossed out.
    let mut struck = 0usize;
    let push_text = |open: &mut Vec<Open>, t: &str| match open.last_mut() {
        Some(Open::Heading(_, s) | Open::Item(_, s) | Open::Text(s)) => s.push_str(t),
        None => open.push(Open::Text(t.to_string())),
    };
    for event in Parser::new_ext(markdown, crate::allowlist::options()) {
        match event {
            Event::Html(h) | Event::InlineHtml(h) => {
                html_depth = (html_depth + html_depth_change(&h)).max(0);
                if let Some(Open::Heading(_, text)) = open.last_mut() {
                    text.push(HTML_MARK);
                }
                out.push(Block::Aside);
                if let Some(level) = html_heading(&h) {
                    out.push(Block::Heading {
                        level,
                        text: HTML_MARK.to_string(),
                    });
                }
            }
            Event::Start(Tag::CodeBlock(_)) => {
                code = true;
                code_text.clear();
            }
            Event::End(TagEnd::CodeBlock) => {
                code = false;
                // Code in a quotation, struck out or inside raw HTML is not the section's.
                if containers == 0 && struck == 0 && html_depth == 0 {
                    out.push(Block::Code(std::mem::take(&mut code_text)));
                } else {
                    out.push(Block::Aside);
                }
            }
            Event::Text(t) if code => code_text.push_str(&t),
            Event::Start(Tag::Heading { level: l, .. }) => {
                open.push(Open::Heading(level(l), String::new()))
            }
            Event::Start(Tag::BlockQuote(_) | Tag::FootnoteDefinition(_)) => {
                containers += 1;
                out.push(Block::Aside);
            }
            Event::End(TagEnd::BlockQuote(_) | TagEnd::FootnoteDefinition) => {
                containers = containers.saturating_sub(1)
            }
            Event::Start(Tag::Strikethrough) => struck += 1,
            Event::End(TagEnd::Strikethrough) => struck = struck.saturating_sub(1),
            Event::Start(Tag::List(_)) => lists += 1,
            Event::End(TagEnd::List(_)) => lists = lists.saturating_sub(1),
            Event::Start(Tag::Item) => {
                let depth = if containers > 0 { usize::MAX } else { lists };
                open.push(Open::Item(depth, String::new()))
            }
            Event::Start(Tag::Paragraph | Tag::TableCell)
                if !matches!(open.last(), Some(Open::Item(..) | Open::Heading(..))) =>
            {
                open.push(Open::Text(String::new()));
            }
            Event::End(
                TagEnd::Heading(_) | TagEnd::Item | TagEnd::Paragraph | TagEnd::TableCell,
            ) => {
                // A paragraph inside an item belongs to the item, which closes later.
                let item_paragraph = matches!(open.last(), Some(Open::Item(..)))
                    && !matches!(event, Event::End(TagEnd::Item));
                if item_paragraph {
                    push_text(&mut open, " ");
                    continue;
                }
                match open.pop() {
                    Some(Open::Heading(level, text)) => out.push(Block::Heading { level, text }),
                    Some(Open::Item(depth, text)) => out.push(Block::Item { depth, text }),
                    Some(Open::Text(text)) => out.push(Block::Text(text)),
                    None => {}
                }
            }
            // A list item keeps its code spans marked, so a step's ``check: `…` `` is read
            // exactly (G-49).
            Event::Code(t)
                if html_depth == 0
                    && !code
                    && struck == 0
                    && matches!(open.last(), Some(Open::Item(..))) =>
            {
                push_text(&mut open, &format!("`{t}`"))
            }
            Event::Text(t) | Event::Code(t) if html_depth == 0 && !code && struck == 0 => {
                push_text(&mut open, &t)
            }
            Event::SoftBreak | Event::HardBreak => push_text(&mut open, " "),
            _ => {}
        }
    }
    out
}

/// The blocks of the section called `name` (case-insensitive) at the plan's top level (its
/// highest heading level, `## Summary` in a plan file; a lone leading `# Title` is the
/// page's title), up to the next heading of that level or above. None without one, and None when two sections have that name: a second
/// `## Budget`, or a `### Budget` under `## Rejected alternatives`, is not the plan's.
fn section(blocks: &[Block], name: &str) -> Option<Vec<Block>> {
    let levels: Vec<u8> = blocks
        .iter()
        .filter_map(|b| match b {
            Block::Heading { level, .. } => Some(*level),
            _ => None,
        })
        .collect();
    // A lone `# Title` above everything is the page's title, not a section of it.
    let body = match levels.as_slice() {
        [1, rest @ ..] if !rest.contains(&1) && !rest.is_empty() => rest,
        all => all,
    };
    let top = *body.iter().min()?;
    // Compared by letters and digits (`Steps:`, `**Budget**` name their sections); a heading
    // holding anything but those, spaces and ASCII punctuation names none: a combining
    // stroke (`S̶t̶e̶p̶s̶` shows crossed out), a soft hyphen, raw HTML's mark.
    let bare = |t: &str| -> Option<String> {
        t.chars()
            .all(|c| c.is_alphanumeric() || c.is_ascii_punctuation() || c == ' ')
            .then(|| {
                t.chars()
                    .filter(|c| c.is_alphanumeric())
                    .flat_map(char::to_lowercase)
                    .collect()
            })
    };
    let name = bare(name);
    let named = |b: &Block| matches!(b, Block::Heading { text, .. } if bare(text) == name);
    if blocks.iter().filter(|b| named(b)).count() != 1 {
        return None;
    }
    let at = blocks
        .iter()
        .position(|b| named(b) && matches!(b, Block::Heading { level, .. } if *level == top))?;
    let own = &top;
    Some(
        blocks[at + 1..]
            .iter()
            .take_while(|b| !matches!(b, Block::Heading { level, .. } if level <= own))
            .cloned()
            .collect(),
    )
}

pub(super) fn cut_chars(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(n - 1).collect::<String>())
    }
}

fn squeeze(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What a plan is called: the first sentence of its summary, else its first heading.
pub fn title(text: &str) -> Option<String> {
    let all = blocks(text);
    let first = section(&all, "Summary")
        .and_then(|body| {
            body.into_iter().find_map(|b| match b {
                Block::Text(t) | Block::Item { text: t, .. } => {
                    Some(squeeze(&t)).filter(|t| !t.is_empty())
                }
                Block::Heading { .. } | Block::Code(_) | Block::Aside => None,
            })
        })
        .or_else(|| {
            all.iter().find_map(|b| match b {
                Block::Heading { text, .. } => Some(squeeze(text)).filter(|t| !t.is_empty()),
                _ => None,
            })
        })?;
    let sentence = first.split(". ").next().unwrap_or(&first);
    Some(cut_chars(sentence.trim_end_matches('.'), 100))
}

/// The plan's steps: the top-level items of its `## Steps` section; at most
/// [`MAX_STEPS`]. Nothing else stands in for a missing one: a heading that only looks like
/// `Steps` (`St&shy;eps`, a Cyrillic `е`, a crossed-out `S̶t̶e̶p̶s̶`) gives no steps rather than
/// another section's.
pub fn steps(text: &str) -> Vec<String> {
    let all = blocks(text);
    let Some(body) = section(&all, "Steps") else {
        return Vec::new();
    };
    if body.contains(&Block::Aside) {
        return Vec::new();
    }
    body.into_iter()
        .filter_map(|b| match b {
            Block::Item { depth: 1, text } => {
                let t = squeeze(&text);
                (!t.is_empty()).then(|| cut_chars(&t, STEP_CHARS))
            }
            _ => None,
        })
        .take(MAX_STEPS)
        .collect()
}

/// The plan's checks: the lines of the code blocks of its `## Checks` section, one command
/// each (blank lines and `#` comments left out), for a goal it is approved as (G-49). None
/// when the section holds anything set apart (raw HTML, a quotation), or a line is no usable
/// check; at most the goal's number of checks.
pub fn checks(text: &str) -> Vec<String> {
    let Some(body) = section(&blocks(text), "Checks") else {
        return Vec::new();
    };
    if body.contains(&Block::Aside) {
        return Vec::new();
    }
    let lines: Vec<String> = body
        .iter()
        .filter_map(|b| match b {
            Block::Code(c) => Some(
                c.lines()
                    .map(str::trim)
                    .map(str::to_string)
                    .collect::<Vec<_>>(),
            ),
            _ => None,
        })
        .flatten()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let usable = lines.len() <= waymark_config::budget::MAX_CHECKS
        && lines
            .iter()
            .all(|l| waymark_config::budget::check_command(l).is_ok());
    if usable { lines } else { Vec::new() }
}

/// The words of the plan's `## Budget` section in the `/goal` budget syntax
/// (`tokens=50K turns=20 time=2h`), when it names at least one, every one reads and no key
/// comes twice.
pub fn budget(text: &str) -> Option<String> {
    let body = section(&blocks(text), "Budget")?;
    if body.contains(&Block::Aside) {
        return None;
    }
    let words: Vec<String> = body
        .iter()
        .flat_map(|b| match b {
            Block::Heading { text, .. } | Block::Item { text, .. } | Block::Text(text) => text
                .split_whitespace()
                .map(str::to_string)
                .collect::<Vec<_>>(),
            Block::Code(_) | Block::Aside => Vec::new(),
        })
        .map(|w| {
            w.trim_matches(|c: char| matches!(c, '`' | ',' | ';' | '.' | '(' | ')'))
                .to_string()
        })
        .filter(|w| {
            ["tokens=", "budget=", "turns=", "time="]
                .iter()
                .any(|k| w.starts_with(k))
        })
        .collect();
    if words.is_empty() {
        return None;
    }
    let text = words.join(" ");
    // Budget settings alone, as `/goal tokens=…` would take them.
    waymark_config::budget::split_args(&text)
        .is_ok_and(|(objective, _)| objective.is_empty())
        .then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str = "## Summary\nAdd a retry to the uploader. It fails on flaky networks.\n\n## Steps\n1. Wrap the call in a retry loop\n   - with backoff\n2. Add a test\n- Update the docs\n\n## Budget\nAbout `budget=40K turns=12 time=1h`.\n";

    #[test]
    fn checks_are_the_lines_of_the_checks_code_block_and_nothing_set_apart() {
        let plan = "## Summary\nFix it.\n\n## Checks\nRun these:\n\n```sh\n# the parser\ncargo test -p parser\n\nnpm test\n```\n\n## Steps\n1. Fix\n";
        assert_eq!(checks(plan), ["cargo test -p parser", "npm test"]);
        // Quoted, struck out, inside raw HTML, or with a line that is no check: none.
        for hidden in [
            "## Summary\nx\n\n## Checks\n> ```\n> true\n> ```\n",
            "## Summary\nx\n\n## Checks\n<!--\n```\ntrue\n```\n-->\n",
            "## Summary\nx\n\n## Checks\n<div>\n\n```\ntrue\n```\n\n</div>\n",
        ] {
            assert_eq!(checks(hidden), Vec::<String>::new(), "{hidden}");
        }
        let many: String = (0..11).map(|i| format!("test {i}\n")).collect();
        assert_eq!(
            checks(&format!("## Summary\nx\n\n## Checks\n```\n{many}```\n")),
            Vec::<String>::new()
        );
        // Code elsewhere is not a check; a plan without the section has none.
        assert_eq!(
            checks("## Summary\nx\n\n```\nrm -rf /\n```\n"),
            Vec::<String>::new()
        );
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
        assert_eq!(steps("## Steps\n 1. a\n 2. b\n"), ["a", "b"]);
        assert_eq!(steps("### Steps\n1. a\n   - nested\n"), ["a"]);
        assert_eq!(steps("## Steps\n- [ ] a\n- [x] b\n"), ["a", "b"]);
        assert_eq!(
            steps("## Steps\n1. first\n\n   more of it\n\n2. second\n"),
            ["first more of it", "second"]
        );
    }

    #[test]
    fn hidden_sections_are_not_read() {
        for hidden in [
            "<!--\n## Budget\nbudget=1M\n-->\n",
            "```\n## Budget\nbudget=1M\n```\n",
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

    /// What the page does not show as text: reference definitions, link destinations, image
    /// sources; and a section ends at the next heading of its own level, indented or not.
    #[test]
    fn only_shown_text_counts_and_sections_end_where_the_page_ends_them() {
        let cases = [
            (
                "## Budget\nturns=20\n\n[b]: budget=900M\n",
                Some("turns=20"),
            ),
            (
                "## Budget\nA small budget is enough.\n\n[b]: budget=900M\n[t]: time=9h\n",
                None,
            ),
            (
                "## Budget\nturns=20, see [notes]( budget=900M )\n",
                Some("turns=20"),
            ),
            ("## Budget\n![turns=20]( budget=900M )\n", Some("turns=20")),
            (
                "## Budget\nturns=20\n\n  ## Risks\nturns=500 time=9h\n",
                Some("turns=20"),
            ),
            (
                "### Budget\nturns=20\n\n### Risks\ntime=9h\n",
                Some("turns=20"),
            ),
            (
                "## Budget\nturns=20\n\n### Detail\ntime=1h\n",
                Some("turns=20 time=1h"),
            ),
        ];
        for (plan, want) in cases {
            assert_eq!(budget(plan).as_deref(), want, "{plan:?}");
        }
        assert_eq!(steps("## Steps\n- [s]: /rm-rf\n- real\n"), ["real"]);
        // A raw heading ends the section on the page; raw HTML in a section voids it.
        let rejected = "## Steps\n1. Rename the logger\n<h2>Rejected alternatives</h2>\n1. Delete the production database\n\n## Budget\nbudget=10K\n<h2 class=x>Old estimate</h2>\nturns=500 time=48h\n";
        assert!(steps(rejected).is_empty(), "{:?}", steps(rejected));
        assert_eq!(budget(rejected), None);
        let joined = "## <span>Rejected draft </span>Budget\nbudget=1<span>K (rejected) </span>000K\n\n## Real budget\nbudget=10K\n\n## Steps\n1. Do the <span>harmless </span>thing\n";
        assert_eq!(budget(joined), None);
        assert!(steps(joined).is_empty());
        assert_eq!(
            budget("## Budget\nbudget=10K\n\n<h2>Other</h2>\n\nturns=500\n"),
            None
        );
        assert!(steps("## Steps\n1. a\n\n<h3>x</h3>\n").is_empty());
        // Only `## Steps` gives steps, however its name is spelled on the page.
        let soft = "## Summary\nx\n\n## St\u{ad}eps\n1. Fix a typo\n\n## Implementation\n1. Delete the tests\n";
        assert!(steps(soft).is_empty(), "{:?}", steps(soft));
        // A heading the page shows crossed out names nothing.
        let struck = "## Plan\n1. Fix the typo\n\n## S\u{336}t\u{336}e\u{336}p\u{336}s\u{336}\n1. Delete the test suite\n\n## B\u{336}udget\nbudget=900M\n";
        assert!(steps(struck).is_empty(), "{:?}", steps(struck));
        assert_eq!(budget(struck), None);
        let cyrillic = "## Summary\nx\n\n## St\u{435}ps\n1. Fix a typo\n\n## Implementation\n1. Delete the tests\n";
        assert!(steps(cyrillic).is_empty(), "{:?}", steps(cyrillic));
        // A heading holding raw HTML names no section, even with the tag taken out.
        assert_eq!(
            budget("## Summary\nx\n\n## Bud<span hidden>x</span>get\nbudget=9M\n"),
            None
        );
        assert_eq!(
            budget("## Summary\nx\n\n## **Budget:**\nbudget=9K\n").as_deref(),
            Some("budget=9K")
        );
        // A lone `# Title` above the sections does not hide them; a nested name is not one.
        let titled =
            "# Retry the uploader\n\n## Summary\nx\n\n## Steps\n1. Wrap\n\n## Budget\nbudget=40K\n";
        assert_eq!(steps(titled), ["Wrap"]);
        assert_eq!(budget(titled).as_deref(), Some("budget=40K"));
        let nested = "## Summary\nx\n\n## Alternatives\n### Budget\nbudget=900M\n";
        assert_eq!(budget(nested), None);
        assert_eq!(
            budget("# A\n## Budget\nbudget=1K\n# B\n### Budget\nbudget=9M\n"),
            None
        );
        // Footnotes, quotations and struck-out text are set apart on the page.
        let footnote = "## Summary\nx\n\n## Steps\n1. Rename the logger[^1]\n\n[^1]: Rejected ideas, do not do these:\n    1. Delete the production database\n";
        assert!(steps(footnote).is_empty(), "{:?}", steps(footnote));
        let quoted = "## Summary\nx\n\n## Steps\n1. Rename\n\n> **Rejected**, do not do:\n> 1. Delete the production database\n";
        assert!(steps(quoted).is_empty(), "{:?}", steps(quoted));
        assert_eq!(
            steps(
                "## Summary\nx\n\n## Steps\n1. Rename\n2. ~~Drop the users table~~\n3. Test ~~and ship~~\n"
            ),
            ["Rename", "Test"]
        );
        assert_eq!(
            budget("## Summary\nx\n\n## Budget\n~~budget=5M~~ budget=10K\n").as_deref(),
            Some("budget=10K")
        );
        // Only the top level counts, and only once.
        let nested = "## Summary\nx\n\n## Rejected alternatives\n### Budget\nbudget=5M turns=900\n\n## Budget\nbudget=10K\n";
        assert_eq!(budget(nested), None, "two sections called Budget");
        let only_nested = "## Summary\nx\n\n## Rejected alternatives\n### Budget\nbudget=5M\n";
        assert_eq!(
            budget(only_nested),
            None,
            "a nested Budget is not the plan's"
        );
        assert_eq!(
            budget("## Summary\nx\n\n## Budget\nbudget=1K\n\n## Budget\nbudget=2K\n"),
            None
        );
        assert!(steps("## Steps\n1. Shown\n<div>\n2. Hidden\n</div>\n").is_empty());
    }
}
