//! Honest display of untrusted text (commands, paths, diffs, model output) in prompts and
//! terminals: control characters (C0, DEL, C1 — so ANSI escapes and carriage returns),
//! bidirectional overrides and zero-width characters are shown escaped (`\x1b`,
//! `\u{202e}`), never interpreted, so what the user reads is what runs.

/// Characters that reorder, break or hide text: every format character (Unicode category
/// Cf: bidi embeddings, overrides, isolates and marks, zero-width characters, the Arabic,
/// Syriac, Kaithi and Egyptian format controls, tags); line and paragraph separators (a
/// terminal or a JavaScript string may break the line there); spaces other than the ASCII
/// one, which look like a word break the shell does not make; and every other default-
/// ignorable code point (fillers, variation selectors, which can carry hidden text after any
/// character, and the blocks Unicode keeps for more of them). The Braille blank and the
/// interlinear annotation marks are in too. Taken from the Unicode 15 tables.
fn invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00A0}'
            | '\u{00AD}'
            | '\u{034F}'
            | '\u{0600}'..='\u{0605}'
            | '\u{061C}'
            | '\u{06DD}'
            | '\u{070F}'
            | '\u{0890}'..='\u{0891}'
            | '\u{08E2}'
            | '\u{115F}'..='\u{1160}'
            | '\u{1680}'
            | '\u{17B4}'..='\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{2000}'..='\u{200F}'
            | '\u{2028}'..='\u{202F}'
            | '\u{205F}'..='\u{206F}'
            | '\u{2800}'
            | '\u{3000}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF0}'..='\u{FFFB}'
            | '\u{110BD}'
            | '\u{110CD}'
            | '\u{13430}'..='\u{1343F}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E0FFF}'
    )
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\n' => out.push_str("\\n"),
        c if (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
        c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
    }
}

/// Whether a character is shown escaped: control characters (C0, DEL, C1) and the
/// invisible ones above.
pub fn needs_escape(c: char) -> bool {
    c.is_control() || invisible(c)
}

/// JSON text (as serde_json writes it) with every character [`needs_escape`] names written
/// as a `\uXXXX` escape: the same JSON value, safe to print. serde_json already escapes C0
/// inside strings; DEL, C1, bidi, separators and invisible characters it leaves raw. Outside
/// strings JSON has only ASCII structure, so the line breaks of pretty printing stay.
pub fn json_safe(json: &str) -> std::borrow::Cow<'_, str> {
    if !json.chars().any(|c| needs_escape(c) && c != '\n') {
        return std::borrow::Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if needs_escape(c) && c != '\n' {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{:04x}", u));
            }
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// `s` with every control, bidi and invisible character escaped, newlines and tabs kept
/// (for multi-line blocks: a command, a diff).
pub fn escape_block(s: &str) -> String {
    if !s.chars().any(|c| needs_escape(c) && c != '\n' && c != '\t') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if needs_escape(c) && c != '\n' && c != '\t' {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    out
}

/// `s` on one line: like [`escape_block`], and newlines and tabs escaped too (for a path,
/// a summary line).
pub fn escape_line(s: &str) -> String {
    if !s.chars().any(needs_escape) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if needs_escape(c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    out
}

/// `s` cut to at most `max` bytes (at a character boundary), with `…` when it was cut.
pub fn cut_at(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push('…');
    }
    s
}

/// A diff cut to at most `max` bytes (at a character boundary), with a line saying how much
/// more there was.
pub fn cut_diff(diff: String, max: usize) -> String {
    if diff.len() <= max {
        return diff;
    }
    let mut end = max;
    while !diff.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[… the diff goes on for {} more bytes …]\n",
        &diff[..end],
        diff.len() - end
    )
}

/// Text cut to its first 200 bytes (at a character boundary) with `…`, for an error message
/// that quotes what was wrong.
pub fn clip(s: &str) -> String {
    if s.len() <= 200 {
        return s.to_string();
    }
    let cut = (0..=200)
        .rev()
        .find(|i| s.is_char_boundary(*i))
        .unwrap_or(0);
    format!("{}…", &s[..cut])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_what_a_terminal_or_browser_would_interpret_or_hide() {
        assert_eq!(escape_line("ls\x1b[2K\rrm -rf ~"), "ls\\x1b[2K\\rrm -rf ~");
        assert_eq!(escape_line("a\u{202e}txt.exe"), "a\\u{202e}txt.exe");
        assert_eq!(escape_line("zero\u{200b}width"), "zero\\u{200b}width");
        assert_eq!(escape_line("c1\u{9b}31m"), "c1\\u{9b}31m");
        assert_eq!(escape_line("del\x7f"), "del\\x7f");
        assert_eq!(escape_line("two\nlines"), "two\\nlines");
        assert_eq!(escape_block("two\nlines\tok\x07"), "two\nlines\tok\\x07");
        assert_eq!(escape_line("plain ünïcode"), "plain ünïcode");
        assert_eq!(escape_line("bom\u{feff}"), "bom\\u{feff}");
        for c in [
            '\u{2028}',
            '\u{2029}',
            '\u{34f}',
            '\u{17b4}',
            '\u{17b5}',
            '\u{fe0f}',
            '\u{e0101}',
            '\u{a0}',
            '\u{1680}',
            '\u{2003}',
            '\u{202f}',
            '\u{205f}',
            '\u{2800}',
            '\u{3000}',
            // Format controls a fixed list missed: Egyptian, Arabic, Syriac, Kaithi.
            '\u{13430}',
            '\u{13438}',
            '\u{1343f}',
            '\u{600}',
            '\u{6dd}',
            '\u{70f}',
            '\u{890}',
            '\u{8e2}',
            '\u{110bd}',
            '\u{110cd}',
            '\u{e0fff}',
        ] {
            let shown = escape_block(&format!("a{c}b"));
            assert_eq!(shown, format!("a\\u{{{:x}}}b", c as u32), "{c:?}");
        }
    }

    #[test]
    fn json_stays_json_with_nothing_raw() {
        let v = serde_json::json!({"t": "a\u{1b}]52;\u{7}\u{9b}\u{2028}\u{202e}\u{7f}\u{e0041}z"});
        let pretty = serde_json::to_string_pretty(&v).unwrap();
        let safe = json_safe(&pretty);
        assert!(
            !safe.chars().any(|c| needs_escape(c) && c != '\n'),
            "{safe}"
        );
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, v);
        assert!(matches!(
            json_safe("{\"a\": 1}"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
