//! Plan Markdown → sanitized HTML for the desktop webview (PM-24). pulldown-cmark with the
//! GitHub extensions, then ammonia with an explicit allowlist: no scripts, no event handlers,
//! no `javascript:`/`data:` URLs, no remote loads (images are dropped), no forms, no `style`.

use ammonia::Builder;
use pulldown_cmark::{Options, Parser, html};
use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_GFM
}

/// Raw HTML from Markdown, unsanitized (benchmarks compare against it).
pub fn markdown_to_html(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len() * 3 / 2);
    html::push_html(&mut out, Parser::new_ext(markdown, options()));
    out
}

const TAGS: &[&str] = &[
    "a",
    "blockquote",
    "br",
    "code",
    "del",
    "div",
    "em",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "input",
    "li",
    "ol",
    "p",
    "pre",
    "section",
    "span",
    "strong",
    "sup",
    "table",
    "tbody",
    "td",
    "th",
    "thead",
    "tr",
    "ul",
];

fn sanitizer() -> &'static Builder<'static> {
    static B: OnceLock<Builder<'static>> = OnceLock::new();
    B.get_or_init(|| {
        let mut attrs: HashMap<&'static str, HashSet<&'static str>> = HashMap::new();
        attrs.insert("a", ["href", "title", "id"].into_iter().collect());
        attrs.insert("code", ["class"].into_iter().collect());
        attrs.insert("div", ["class", "id"].into_iter().collect());
        attrs.insert("blockquote", ["class"].into_iter().collect());
        attrs.insert("p", ["class"].into_iter().collect());
        attrs.insert(
            "input",
            ["type", "checked", "disabled"].into_iter().collect(),
        );
        attrs.insert("ol", ["start"].into_iter().collect());
        attrs.insert("li", ["id"].into_iter().collect());
        attrs.insert("sup", ["class", "id"].into_iter().collect());
        attrs.insert("section", ["class"].into_iter().collect());
        let mut b = Builder::empty();
        b.tags(TAGS.iter().copied().collect())
            .tag_attributes(attrs)
            .url_schemes(["http", "https", "mailto"].into_iter().collect())
            .link_rel(Some("noopener noreferrer"))
            .strip_comments(true)
            .attribute_filter(|tag, attr, value| match (tag, attr) {
                // Keep only the classes the renderer itself produces.
                ("code", "class") => value.starts_with("language-").then_some(value.into()),
                (_, "class") => value
                    .split_whitespace()
                    .all(|c| c.starts_with("markdown-alert") || c.starts_with("footnote"))
                    .then_some(value.into()),
                // Task-list checkboxes only, always disabled.
                ("input", "type") => (value == "checkbox").then_some(value.into()),
                _ => Some(value.into()),
            });
        b
    })
}

/// Sanitized HTML of a plan.
pub fn render(markdown: &str) -> String {
    sanitizer().clean(&markdown_to_html(markdown)).to_string()
}

/// A unified diff between two plan texts, labelled `from` and `to`.
pub fn unified_diff(old: &str, new: &str, from: &str, to: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(from, to)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pm_24_github_markdown_survives() {
        let html = render(
            "## Summary\n\n- [x] done\n- [ ] todo\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n~~old~~ text[^1]\n\n[^1]: note\n\n```rust\nfn main() {}\n```\n\n> [!WARNING]\n> careful\n\n[site](https://example.com)",
        );
        for needle in [
            "<h2>Summary</h2>",
            "type=\"checkbox\"",
            "checked",
            "<table>",
            "<del>old</del>",
            "class=\"language-rust\"",
            "markdown-alert",
            "href=\"https://example.com\"",
            "rel=\"noopener noreferrer\"",
        ] {
            assert!(html.contains(needle), "missing {needle} in {html}");
        }
    }
}
