//! Slash commands, parsed at admission. A command never reaches the model; its output is an
//! event. Extensions contribute theirs ([`crate::Extension::commands`]); the engine keeps the
//! registry.

use crate::error::Result;
use waymark_store::Tx;

/// What `/help` shows of a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSpec {
    pub name: &'static str,
    pub usage: &'static str,
    pub summary: &'static str,
    /// More than the summary, for `/help <name>` (empty: the usage and summary say it all).
    pub details: &'static str,
}

/// What a command runs against.
pub struct CommandContext<'t, 'c> {
    pub tx: &'t mut Tx<'c>,
    pub session_id: &'t str,
    /// Specs of every registered command (for `/help`).
    pub all: &'t [CommandSpec],
    /// The session, for extensions' commands.
    pub api: Option<&'t crate::SessionApi>,
}

/// A slash command.
pub trait SlashCommand: Send + Sync {
    fn spec(&self) -> CommandSpec;
    /// Runs inside the admission transaction; returns the text shown to the user.
    fn run(&self, cx: &mut CommandContext<'_, '_>, args: &str) -> Result<String>;
}

/// A message that starts with `/name`: the name and the rest.
pub fn parse(text: &str) -> Option<(&str, &str)> {
    let rest = text.trim_start().strip_prefix('/')?;
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let name = &rest[..end];
    let valid = !name.is_empty()
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    valid.then(|| (name, rest[end..].trim()))
}

/// A message starting with `//` is sent as text beginning with `/`.
pub fn unescape(text: &str) -> &str {
    match text.trim_start().strip_prefix("//") {
        Some(_) => &text.trim_start()[1..],
        None => text,
    }
}
