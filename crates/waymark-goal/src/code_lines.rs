//! A source file's lines as code alone (G-51): comments removed and the inside of string
//! literals blanked, across lines, so a test wrapped in a block comment, a raw string or a
//! docstring no longer counts, and a marker written in a string is no marker. A small lexer
//! per language family, not a parser: it knows comments and string delimiters, nothing else.

/// The comment and string syntax of a language family.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Syntax {
    /// `//` and `/* */` comments; `"…"` strings (Rust: also `r#"…"#`; JS: also `'…'` and
    /// `` `…` ``; Go: also `` `…` ``).
    Rust,
    Js,
    Go,
    /// `#` comments; `'…'`, `"…"` and triple-quoted strings.
    Python,
}

/// Where the lexer is between characters.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Code,
    BlockComment,
    /// In a string closed by this quote; `hashes` for a Rust raw string (`r##"…"##`),
    /// `raw` where backslashes escape nothing, `triple` for Python's `"""`.
    Str {
        quote: char,
        hashes: usize,
        raw: bool,
        triple: bool,
    },
}

/// Each line of `text` with its comments removed and its strings emptied (their quotes
/// kept), in order.
pub fn code_lines(text: &str, syntax: Syntax) -> Vec<String> {
    let mut out = Vec::new();
    let mut state = State::Code;
    for line in text.lines() {
        let chars: Vec<char> = line.chars().collect();
        let mut code = String::new();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            let next = chars.get(i + 1).copied();
            match state {
                State::BlockComment => {
                    if c == '*' && next == Some('/') {
                        state = State::Code;
                        i += 1;
                    }
                }
                State::Str {
                    quote,
                    hashes,
                    raw,
                    triple,
                } => {
                    if c == '\\' && !raw {
                        i += 1;
                    } else if c == quote {
                        let closes = if triple {
                            chars.get(i + 1) == Some(&quote) && chars.get(i + 2) == Some(&quote)
                        } else {
                            (1..=hashes).all(|k| chars.get(i + k) == Some(&'#'))
                        };
                        if closes {
                            code.push(quote);
                            i += if triple { 2 } else { hashes };
                            state = State::Code;
                        }
                    }
                }
                State::Code => {
                    let hash_comment = syntax == Syntax::Python && c == '#';
                    let line_comment = syntax != Syntax::Python && c == '/' && next == Some('/');
                    if hash_comment || line_comment {
                        break;
                    }
                    if syntax != Syntax::Python && c == '/' && next == Some('*') {
                        state = State::BlockComment;
                        i += 2;
                        continue;
                    }
                    if let Some((s, skip)) = string_start(&chars, i, syntax) {
                        code.push(match s {
                            State::Str { quote, .. } => quote,
                            _ => '"',
                        });
                        state = s;
                        i += skip;
                        continue;
                    }
                    code.push(c);
                }
            }
            i += 1;
        }
        // A string that cannot span lines ends with its line, open or not (a stray quote
        // in a regular expression must not swallow the file): all but Rust's strings,
        // backtick strings and Python's triple-quoted ones.
        if let State::Str {
            quote,
            triple: false,
            hashes: 0,
            ..
        } = state
            && quote != '`'
            && syntax != Syntax::Rust
        {
            state = State::Code;
        }
        out.push(code);
    }
    out
}

/// The string that starts at `chars[i]`, and how many characters its opening takes.
fn string_start(chars: &[char], i: usize, syntax: Syntax) -> Option<(State, usize)> {
    let c = chars[i];
    let str_state = |quote, hashes, raw, triple| State::Str {
        quote,
        hashes,
        raw,
        triple,
    };
    match syntax {
        Syntax::Rust => {
            // `r"…"`, `r#"…"#`, `br"…"`, not part of a longer word.
            let word_before = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
            if c == 'r' && !word_before || c == 'b' && chars.get(i + 1) == Some(&'r') {
                let start = if c == 'b' { i + 2 } else { i + 1 };
                let hashes = chars[start..].iter().take_while(|&&h| h == '#').count();
                if chars.get(start + hashes) == Some(&'"') {
                    return Some((str_state('"', hashes, true, false), start + hashes - i + 1));
                }
            }
            (c == '"').then(|| (str_state('"', 0, false, false), 1))
        }
        Syntax::Go => match c {
            '"' => Some((str_state('"', 0, false, false), 1)),
            '`' => Some((str_state('`', 0, true, false), 1)),
            _ => None,
        },
        Syntax::Js => matches!(c, '"' | '\'' | '`').then(|| (str_state(c, 0, false, false), 1)),
        Syntax::Python => {
            if !matches!(c, '"' | '\'') {
                return None;
            }
            let triple = chars.get(i + 1) == Some(&c) && chars.get(i + 2) == Some(&c);
            Some((str_state(c, 0, false, triple), if triple { 3 } else { 1 }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_go_and_strings_are_emptied_across_lines() {
        let rust = "let a = 1; /* start\n#[test]\nend */ let b = \"#[test] // x\";\nlet r = r#\"\n#[test]\n\"#; assert!(x); // assert!(y)\nlet c = 'a';";
        assert_eq!(
            code_lines(rust, Syntax::Rust),
            [
                "let a = 1; ",
                "",
                " let b = \"\";",
                "let r = \"",
                "",
                "\"; assert!(x); ",
                "let c = 'a';"
            ]
        );
        let py =
            "x = 1  # assert x\ns = \"\"\"\ndef test_a():\n    assert 1\n\"\"\"\nassert 'a#b' == y";
        assert_eq!(
            code_lines(py, Syntax::Python),
            ["x = 1  ", "s = \"", "", "", "\"", "assert '' == y"]
        );
        let js = "test(`\n${it('x')}\n`); expect(a) /* it('y') */; it('z', () => {})";
        assert_eq!(
            code_lines(js, Syntax::Js),
            ["test(`", "", "`); expect(a) ; it('', () => {})"]
        );
    }
}
