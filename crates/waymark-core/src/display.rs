//! Honest display of untrusted text (commands, paths, diffs, model output) in prompts and
//! terminals: control characters (C0, DEL, C1 — so ANSI escapes and carriage returns),
//! bidirectional overrides and zero-width characters are shown escaped (`\x1b`,
//! `\u{202e}`), never interpreted, so what the user reads is what runs.

/// Characters that reorder or hide text: bidi embeddings, overrides, isolates and marks,
/// and zero-width or invisible formatting characters.
fn invisible(c: char) -> bool {
    matches!(
        c,
        '\u{061C}'
            | '\u{00AD}'
            | '\u{115F}'
            | '\u{1160}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}'
            | '\u{206A}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF9}'..='\u{FFFB}'
            | '\u{E0000}'..='\u{E007F}'
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

fn needs_escape(c: char) -> bool {
    c.is_control() || invisible(c)
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
    }
}
