//! What a rendered plan keeps: the Markdown extensions plans are read with, the tags the
//! sanitizer keeps, and the links that stay links (http, https, mailto kept to a message's
//! fields, and relative ones). The renderer applies this; the review's hidden-text marking
//! ([`crate::hidden`]) judges by it, so both agree on what the page shows.

use pulldown_cmark::Options;

/// The Markdown extensions plans are read and rendered with.
pub(crate) fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_GFM
}

pub(crate) const TAGS: &[&str] = &[
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

/// Whether the sanitizer keeps tag `name` (what it drops, it drops with or without content).
pub(crate) fn kept_tag(name: &str) -> bool {
    TAGS.contains(&name)
}

/// Whether a link's address stays as written on the page (an allowed one the sanitizer does
/// not rewrite).
pub(crate) fn link_as_written(href: &str) -> bool {
    link_target(href).is_some_and(|t| t == href)
}

/// What a link may point at, if anything: an allowed target as it is, except a `mailto:`
/// link, which keeps only the fields of a message (`attach=` and the like are dropped; see
/// [`waymark_protocol::links::safe_mailto`]), or is no link at all when it does not decode.
pub(crate) fn link_target(url: &str) -> Option<std::borrow::Cow<'_, str>> {
    if !allowed_url(url) {
        return None;
    }
    // Read as a browser reads it: tabs and line breaks inside a URL are dropped, so
    // `mail\nto:` is a `mailto:` link too.
    let compact: String = url
        .chars()
        .filter(|c| !c.is_whitespace() && !c.is_control())
        .collect();
    let scheme = compact.split(':').next().unwrap_or("");
    if scheme.eq_ignore_ascii_case("mailto") {
        return waymark_protocol::links::safe_mailto(&compact).map(Into::into);
    }
    Some(url.into())
}

/// Whether a link target is allowed: http(s), mailto, or relative (no scheme).
fn allowed_url(url: &str) -> bool {
    let u: String = url
        .chars()
        .filter(|c| !c.is_whitespace() && !c.is_control())
        .collect();
    let scheme_end = u.find(':');
    let path_start = u.find(['/', '?', '#']);
    match (scheme_end, path_start) {
        (Some(c), Some(p)) if p < c => true,
        (Some(c), _) => matches!(
            u[..c].to_ascii_lowercase().as_str(),
            "http" | "https" | "mailto"
        ),
        (None, _) => true,
    }
}
