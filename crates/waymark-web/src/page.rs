//! What a fetched body becomes for the model: HTML as Markdown (with `htmd`), text as it
//! is, and anything else refused by its type. Scripts, styles and other parts a reader never
//! sees are left out of the Markdown.

/// The body as text for the model, or why its type is not taken.
pub fn to_text(content_type: Option<&str>, body: &[u8]) -> crate::Result<String> {
    let essence = content_type
        .map(|c| {
            c.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .unwrap_or_default();
    let text = || String::from_utf8_lossy(body).into_owned();
    match kind(&essence, body) {
        Kind::Html => Ok(markdown(&text())),
        Kind::Text => Ok(text()),
        Kind::Other => Err(crate::WebError::Unreadable(format!(
            "the answer is `{essence}`, not a web page or text: web_fetch returns HTML (as Markdown) and text only"
        ))),
    }
}

enum Kind {
    Html,
    Text,
    Other,
}

fn kind(essence: &str, body: &[u8]) -> Kind {
    match essence {
        "text/html" | "application/xhtml+xml" => Kind::Html,
        "" => sniff(body),
        e if e.starts_with("text/") => Kind::Text,
        "application/json"
        | "application/xml"
        | "application/javascript"
        | "application/ecmascript"
        | "application/x-yaml"
        | "application/yaml"
        | "application/toml"
        | "application/x-sh"
        | "application/sql"
        | "application/graphql" => Kind::Text,
        e if e.ends_with("+json") || e.ends_with("+xml") || e.ends_with("+yaml") => Kind::Text,
        _ => Kind::Other,
    }
}

/// A body without a type: HTML if it starts like a page, text if it is UTF-8 without NULs.
fn sniff(body: &[u8]) -> Kind {
    let head = String::from_utf8_lossy(&body[..body.len().min(512)]).to_ascii_lowercase();
    let head = head.trim_start();
    if head.starts_with("<!doctype html") || head.starts_with("<html") {
        return Kind::Html;
    }
    if std::str::from_utf8(body).is_ok() && !body.contains(&0) {
        return Kind::Text;
    }
    Kind::Other
}

/// How deep HTML elements may nest before the page is read as plain text instead. The
/// parser checks its stack of open elements at each tag and the converter walks the tree
/// recursively, so a hostile page nesting deep would cost time quadratic in its size, or
/// exhaust the stack. Real pages nest a few dozen deep.
const MAX_DEPTH: usize = 256;

/// HTML as Markdown; a page too deeply nested to convert safely, as its text without tags.
fn markdown(html: &str) -> String {
    if rough_nesting(html) > MAX_DEPTH {
        return strip_tags(html);
    }
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(vec![
            "script", "style", "noscript", "template", "svg", "canvas", "iframe", "head", "form",
            "button", "input", "select", "textarea",
        ])
        .build();
    match converter.html_to_tree(html) {
        Ok(tree) if depth(&tree) <= MAX_DEPTH => converter.tree_to_markdown(&tree),
        _ => strip_tags(html),
    }
}

/// How deep the parsed tree goes, walked without recursion.
fn depth(root: &std::rc::Rc<htmd::Node>) -> usize {
    let mut deepest = 0;
    let mut pending = vec![(root.clone(), 0usize)];
    while let Some((node, d)) = pending.pop() {
        deepest = deepest.max(d);
        if d > MAX_DEPTH {
            break;
        }
        for child in node.children.borrow().iter() {
            pending.push((child.clone(), d + 1));
        }
    }
    deepest
}

/// How deep the page's tags nest, from one linear pass before any parsing: an opening tag
/// counts in; a closing tag counts out only when an element of its name is open (HTML
/// ignores the others); void elements (`br`, `img`) and those the next of their kind closes
/// (`p`, `li`, `td`) do not count. A `/>` is not read as closing: HTML ignores it on
/// ordinary elements.
fn rough_nesting(html: &str) -> usize {
    const FLAT: &[&str] = &[
        "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr", "p", "li", "dt", "dd", "tr", "td", "th", "option", "param",
    ];
    let mut open: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let (mut depth, mut deepest) = (0usize, 0usize);
    let bytes = html.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'<' {
            i += 1;
            continue;
        }
        i += 1;
        let closing = bytes.get(i) == Some(&b'/');
        if closing {
            i += 1;
        }
        let start = i;
        while i < bytes.len() && i - start < 16 && bytes[i].is_ascii_alphanumeric() {
            i += 1;
        }
        if i == start {
            continue;
        }
        let name = html[start..i].to_ascii_lowercase();
        if FLAT.contains(&name.as_str()) {
            continue;
        }
        if closing {
            if let Some(n) = open.get_mut(&name).filter(|n| **n > 0) {
                *n -= 1;
                depth = depth.saturating_sub(1);
            }
        } else {
            *open.entry(name).or_default() += 1;
            depth += 1;
            deepest = deepest.max(depth);
        }
    }
    deepest
}

/// The text between the tags, roughly (the fallback for pages that cannot be converted).
fn strip_tags(html: &str) -> String {
    let mut out = String::with_capacity(html.len() / 2);
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                out.push(' ');
            }
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_becomes_markdown_without_scripts_or_styles() {
        let html = "<!doctype html><html><head><title>T</title><style>p{}</style></head><body>\
            <h1>Release notes</h1><p>Read <a href=\"/docs\">the docs</a>.</p>\
            <script>steal()</script><ul><li>one</li><li>two</li></ul></body></html>";
        let md = to_text(Some("text/html; charset=utf-8"), html.as_bytes()).unwrap();
        assert!(md.contains("# Release notes"), "{md}");
        assert!(md.contains("[the docs](/docs)"), "{md}");
        assert!(md.contains("one") && md.contains("two"), "{md}");
        assert!(!md.contains("steal") && !md.contains("p{}"), "{md}");
    }

    #[test]
    fn text_stays_text_and_other_types_are_refused() {
        assert_eq!(to_text(Some("text/plain"), b"a <b>").unwrap(), "a <b>");
        assert_eq!(to_text(Some("application/json"), b"{}").unwrap(), "{}");
        assert_eq!(to_text(Some("application/ld+json"), b"{}").unwrap(), "{}");
        assert_eq!(to_text(None, b"plain words").unwrap(), "plain words");
        assert!(
            to_text(None, b"<!DOCTYPE html><h2>x</h2>")
                .unwrap()
                .contains("## x")
        );
        for ty in ["image/png", "application/octet-stream", "application/pdf"] {
            let e = to_text(Some(ty), b"\x89PNG").unwrap_err().to_string();
            assert!(e.contains(ty), "{e}");
        }
        assert!(to_text(None, b"\x00\x01binary").is_err());
    }

    /// A hostile page nests elements deep enough to exhaust a recursive converter's stack,
    /// or to make the parser's work quadratic: it comes back as text, and nothing overflows.
    #[test]
    fn a_deeply_nested_page_is_read_as_text() {
        let html = format!(
            "{}deep text{}",
            "<div>".repeat(200_000),
            "</div>".repeat(200_000)
        );
        let md = to_text(Some("text/html"), html.as_bytes()).unwrap();
        assert_eq!(md, "deep text");
        // Nesting the scan does not see (no closing tags, unknown elements) is caught on
        // the parsed tree.
        let sneaky = format!("{}deep{}", "<b>".repeat(300), "<i>".repeat(300));
        let md = to_text(Some("text/html"), sneaky.as_bytes()).unwrap();
        assert_eq!(md, "deep");
        // Third red-team: `<div/>` and closing tags of elements never opened nest as deep
        // as plain opening tags in HTML.
        for unit in ["<div/>", "<div></x>"] {
            let html = format!("{}deep", unit.repeat(100_000));
            assert!(rough_nesting(&html) > MAX_DEPTH, "{unit}");
        }
        // No `>` anywhere: one pass still.
        assert_eq!(rough_nesting(&"<a".repeat(1_000_000)), 1_000_000);
    }

    /// Paragraphs and list items left unclosed, as real pages leave them, do not count as
    /// nesting: such a page still becomes Markdown.
    #[test]
    fn unclosed_paragraphs_do_not_count_as_nesting() {
        let html = format!(
            "<ul>{}</ul><p>end<br><img src=x>",
            "<li>item<p>text".repeat(1000)
        );
        assert!(rough_nesting(&html) < 5, "{}", rough_nesting(&html));
        let md = to_text(Some("text/html"), html.as_bytes()).unwrap();
        assert!(md.contains("item"), "{}", &md[..100]);
    }
}
