//! The one way out to the terminal. Everything the CLI prints — human-readable lines,
//! streamed model text, errors, JSON — passes one redaction step (every secret the runtime
//! knows becomes `[REDACTED:<name>]`) and one escaper: control characters, ANSI and OSC
//! sequences, bidi overrides, line separators and invisible characters are shown escaped
//! (`\x1b`, `\u{2028}`), never interpreted; JSON keeps its value, with those characters as
//! `\uXXXX` escapes. No other module prints (a test below reads the sources to hold that).

use std::io::Write as _;
use std::sync::OnceLock;
use waymark_runtime::logging::Secrets;

static SECRETS: OnceLock<Secrets> = OnceLock::new();

/// Redacts with the runtime's secrets from now on (called once the runtime is open).
pub fn use_secrets(secrets: Secrets) {
    let _ = SECRETS.set(secrets);
}

fn redacted(text: &str) -> String {
    match SECRETS.get() {
        Some(secrets) => secrets().redact(text).into_owned(),
        None => text.to_string(),
    }
}

/// Text as the terminal shows it: redacted, then escaped (line breaks and tabs kept).
pub fn clean(text: &str) -> String {
    waymark_runtime::display::escape_block(&redacted(text))
}

/// Writes `text` (cleaned) to standard output, flushed, so streamed text shows at once.
#[allow(clippy::disallowed_methods)] // the CLI's one way to its standard output
pub fn write_out(text: &str) {
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(clean(text).as_bytes());
    let _ = o.flush();
}

/// Standard input and output for `waymark acp`, which writes nothing there but the protocol.
#[allow(clippy::disallowed_methods)] // the ACP connection owns standard output
pub fn protocol_streams() -> (std::io::Stdin, std::io::Stdout) {
    (std::io::stdin(), std::io::stdout())
}

/// Writes `text` (cleaned) to standard error.
#[allow(clippy::disallowed_methods)] // the CLI's one way to its standard error
pub fn write_err(text: &str) {
    let _ = std::io::stderr().lock().write_all(clean(text).as_bytes());
}

/// One JSON value on one line (events), or pretty (views): redacted, every character a
/// terminal would act on as a `\uXXXX` escape.
#[allow(clippy::disallowed_methods)] // JSON lines go to standard output here only
pub fn json<T: serde::Serialize>(value: &T, pretty: bool) -> anyhow::Result<()> {
    let text = if pretty {
        serde_json::to_string_pretty(value)?
    } else {
        serde_json::to_string(value)?
    };
    let text = redacted(&text);
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(waymark_runtime::display::json_safe(&text).as_bytes());
    let _ = o.write_all(b"\n");
    Ok(())
}

/// `print!` through [`write_out`].
macro_rules! out {
    ($($t:tt)*) => { $crate::term::write_out(&format!($($t)*)) };
}

/// `println!` through [`write_out`].
macro_rules! outln {
    () => { $crate::term::write_out("\n") };
    ($($t:tt)*) => { $crate::term::write_out(&format!("{}\n", format_args!($($t)*))) };
}

/// `eprintln!` through [`write_err`].
macro_rules! errln {
    ($($t:tt)*) => { $crate::term::write_err(&format!("{}\n", format_args!($($t)*))) };
}

pub(crate) use {errln, out, outln};
