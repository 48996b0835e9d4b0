//! Faithful text edits: a file is decoded into the form the model works with (no byte-order
//! mark, `\n` line breaks) together with its [`TextStyle`], and encoded back in that style,
//! so an edit changes the lines it names and nothing else: CRLF files stay CRLF, a BOM stays,
//! and a file without a final newline does not gain one (nor lose it).

use super::ToolError;
use std::path::Path;

const BOM: &str = "\u{feff}";

/// How a text file spells what the model does not see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextStyle {
    /// Starts with a UTF-8 byte-order mark.
    pub bom: bool,
    /// Every line break is `\r\n` (the text was normalized to `\n`).
    pub crlf: bool,
    /// Ends with a line break (files without any text count as ending with one).
    pub final_newline: bool,
}

impl TextStyle {
    /// The style of a file that does not exist yet.
    pub const NEW: TextStyle = TextStyle {
        bom: false,
        crlf: false,
        final_newline: true,
    };
}

/// Splits `raw` into the text the model edits and its style. Files whose line breaks are
/// mixed are left as they are (`crlf` false): edits then match their bytes exactly.
pub fn decode(raw: &str) -> (String, TextStyle) {
    let (bom, body) = match raw.strip_prefix(BOM) {
        Some(rest) => (true, rest),
        None => (false, raw),
    };
    let breaks = body.matches('\n').count();
    let crlf_breaks = body.matches("\r\n").count();
    let crlf = breaks > 0 && crlf_breaks == breaks;
    let text = if crlf {
        body.replace("\r\n", "\n")
    } else {
        body.to_string()
    };
    let final_newline = body.is_empty() || body.ends_with('\n');
    (
        text,
        TextStyle {
            bom,
            crlf,
            final_newline,
        },
    )
}

/// What the model sent, in the form the decoded text uses (`\r\n` becomes `\n` in a CRLF
/// file, so text copied with its carriage returns still matches).
pub fn normalize(s: &str, style: &TextStyle) -> String {
    if style.crlf {
        s.replace("\r\n", "\n")
    } else {
        s.to_string()
    }
}

/// Encodes edited text back in `style`: the final-newline state is restored, line breaks
/// become `\r\n` again in a CRLF file, and the BOM is put back.
pub fn encode(text: &str, style: &TextStyle) -> String {
    let mut t = text.to_string();
    if !t.is_empty() {
        let ends = t.ends_with('\n');
        if style.final_newline && !ends {
            t.push('\n');
        } else if !style.final_newline && ends {
            t.pop();
            if t.ends_with('\r') {
                t.pop();
            }
        }
    }
    if style.crlf {
        t = t.replace('\n', "\r\n");
    }
    if style.bom {
        t.insert_str(0, BOM);
    }
    t
}

/// Reads a text file for editing: its decoded text and style. Binary or non-UTF-8 files
/// are refused.
pub fn read(path: &Path, raw_name: &str) -> Result<(String, TextStyle), ToolError> {
    let text = super::fs_policy::read_text(path, raw_name)?;
    Ok(decode(&text))
}

/// The dominant line break of raw text (`\r\n` when most breaks are, else `\n`).
pub fn dominant_break(raw: &str) -> &'static str {
    let breaks = raw.matches('\n').count();
    let crlf = raw.matches("\r\n").count();
    if breaks > 0 && crlf * 2 > breaks {
        "\r\n"
    } else {
        "\n"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_style() {
        for raw in [
            "a\nb\n",
            "a\nb",
            "a\r\nb\r\n",
            "a\r\nb",
            "\u{feff}a\r\nb\r\n",
            "\u{feff}x",
            "",
            "mixed\r\nbreaks\nhere\r\n",
            "lone\rcarriage\r\n",
        ] {
            let (text, style) = decode(raw);
            assert!(!text.starts_with(BOM), "{raw:?}");
            assert_eq!(encode(&text, &style), raw, "{raw:?}");
        }
    }

    #[test]
    fn crlf_files_are_edited_as_lf_and_written_back_as_crlf() {
        let (text, style) = decode("\u{feff}one\r\ntwo\r\n");
        assert_eq!(text, "one\ntwo\n");
        assert!(style.crlf && style.bom && style.final_newline);
        let edited = text.replace("one\ntwo", "one\n1.5\ntwo");
        assert_eq!(encode(&edited, &style), "\u{feff}one\r\n1.5\r\ntwo\r\n");
        assert_eq!(normalize("a\r\nb", &style), "a\nb");
    }

    #[test]
    fn the_final_newline_state_is_kept() {
        let (_, no_nl) = decode("a\nb");
        assert_eq!(encode("a\nc\n", &no_nl), "a\nc");
        let (_, nl) = decode("a\n");
        assert_eq!(encode("a\nc", &nl), "a\nc\n");
        assert_eq!(encode("", &nl), "");
    }

    #[test]
    fn dominant_break_counts_crlf() {
        assert_eq!(dominant_break("a\r\nb\r\nc\n"), "\r\n");
        assert_eq!(dominant_break("a\nb\nc\r\n"), "\n");
        assert_eq!(dominant_break("none"), "\n");
    }
}
