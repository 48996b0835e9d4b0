//! Slash commands, parsed at admission. A command never reaches the model; its output is an
//! event. The engine's own commands (`/help`, `/compact`, `/instructions`) and those the
//! extensions contribute share one registry. A name none of them has may be one an
//! extension expands into a message to the model (an MCP prompt; see `session/expand.rs`).

use crate::error::{Error, Result};
use crate::store::Tx;
use std::sync::Arc;

pub use waymark_extension::commands::{CommandContext, CommandSpec, SlashCommand, parse, unescape};

/// The commands of a session.
#[derive(Clone)]
pub struct CommandRegistry {
    commands: Vec<Arc<dyn SlashCommand>>,
}

impl CommandRegistry {
    /// The engine's own commands; `/compact` sets `compact_requested`, the session's flag.
    pub(crate) fn with_builtin(compact_requested: Arc<std::sync::atomic::AtomicBool>) -> Self {
        let mut r = CommandRegistry {
            commands: Vec::new(),
        };
        r.register(Arc::new(Help));
        r.register(Arc::new(InstructionsCommand));
        r.register(Arc::new(CompactCommand(compact_requested)));
        r
    }

    pub fn register(&mut self, c: Arc<dyn SlashCommand>) {
        let name = c.spec().name;
        self.commands.retain(|x| x.spec().name != name);
        self.commands.push(c);
    }

    /// Whether a command of that name is registered.
    pub fn has(&self, name: &str) -> bool {
        self.commands.iter().any(|c| c.spec().name == name)
    }

    pub fn specs(&self) -> Vec<CommandSpec> {
        self.commands.iter().map(|c| c.spec()).collect()
    }

    /// Runs `/name args`; an unknown name is a clear error.
    pub(crate) fn run(
        &self,
        tx: &mut Tx<'_>,
        api: &crate::extension::SessionApi,
        name: &str,
        args: &str,
    ) -> Result<String> {
        let session_id = api.id();
        let all = self.specs();
        let Some(cmd) = self.commands.iter().find(|c| c.spec().name == name) else {
            let names: Vec<String> = all.iter().map(|s| format!("/{}", s.name)).collect();
            return Err(Error::UnknownCommand(format!(
                "unknown command `/{name}` (not sent to the model); commands: {}. To send text that starts with `/`, begin it with `//`.",
                names.join(", ")
            )));
        };
        cmd.run(
            &mut CommandContext {
                tx,
                session_id,
                all: &all,
                api: Some(api),
            },
            args,
        )
    }
}

/// `/help`: lists the commands.
struct Help;

impl SlashCommand for Help {
    fn spec(&self) -> CommandSpec {
        CommandSpec {
            name: "help",
            usage: "/help [command]",
            summary: "list the commands, or say all about one (/help goal)",
            details: "",
        }
    }

    fn run(&self, cx: &mut CommandContext<'_, '_>, args: &str) -> Result<String> {
        let name = args.trim().trim_start_matches('/');
        if name.is_empty() {
            return Ok(help_text(cx.all));
        }
        let Some(s) = cx.all.iter().find(|s| s.name == name) else {
            return Err(Error::refused(format!(
                "there is no command /{name}: /help lists them"
            )));
        };
        let mut out = format!(
            "{}
  {}
",
            s.usage, s.summary
        );
        if !s.details.is_empty() {
            out.push('\n');
            out.push_str(s.details);
            out.push('\n');
        }
        Ok(out)
    }
}

/// How wide `/help` may be: an 80-column terminal.
const HELP_WIDTH: usize = 80;
/// The usage column; a longer usage gets lines of its own and its summary goes under it.
const USAGE_COLUMN: usize = 24;

/// `text` in lines of at most `width` characters, broken after a space or a `|` (a usage's
/// alternatives), a word longer than the line cut where it must be.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    let mut piece = String::new();
    let flush = |piece: &mut String, line: &mut String, lines: &mut Vec<String>| {
        if line.chars().count() + piece.chars().count() > width && !line.is_empty() {
            lines.push(line.trim_end().to_string());
            line.clear();
            *piece = piece.trim_start().to_string();
        }
        while piece.chars().count() > width {
            let head: String = piece.chars().take(width).collect();
            lines.push(head);
            *piece = piece.chars().skip(width).collect();
        }
        line.push_str(piece);
        piece.clear();
    };
    for c in text.chars() {
        piece.push(c);
        if c == ' ' || c == '|' {
            flush(&mut piece, &mut line, &mut lines);
        }
    }
    flush(&mut piece, &mut line, &mut lines);
    if !line.trim().is_empty() {
        lines.push(line.trim_end().to_string());
    }
    lines
}

/// The text of `/help`: every line fits [`HELP_WIDTH`] columns.
fn help_text(all: &[CommandSpec]) -> String {
    let mut out = String::from("Commands:\n");
    let summary_width = HELP_WIDTH - USAGE_COLUMN - 4;
    for s in all {
        let summary = wrap(s.summary, summary_width);
        if s.usage.chars().count() <= USAGE_COLUMN {
            for (i, line) in summary.iter().enumerate() {
                let usage = if i == 0 { s.usage } else { "" };
                out.push_str(&format!("  {usage:USAGE_COLUMN$}  {line}\n"));
            }
        } else {
            for (i, line) in wrap(s.usage, HELP_WIDTH - 4).iter().enumerate() {
                let indent = if i == 0 { "  " } else { "    " };
                out.push_str(&format!("{indent}{line}\n"));
            }
            for line in summary {
                out.push_str(&format!("  {:USAGE_COLUMN$}  {line}\n", ""));
            }
        }
    }
    out.push_str("Text starting with `//` is sent to the model with one `/` removed.");
    out
}

/// `/compact`: summarize the older history before the next model call.
/// `/compact`: sets the session's flag; the turn engine (or the actor, between turns)
/// compacts when it sees it.
struct CompactCommand(Arc<std::sync::atomic::AtomicBool>);

impl SlashCommand for CompactCommand {
    fn spec(&self) -> CommandSpec {
        CommandSpec {
            name: "compact",
            usage: "/compact",
            summary: "summarize the older conversation (at once, or before the running turn's next model call)",
            details: "",
        }
    }

    fn run(&self, cx: &mut CommandContext<'_, '_>, _args: &str) -> Result<String> {
        if cx.api.is_none() {
            return Err(Error::refused("`/compact` needs an open session".into()));
        }
        self.0.store(true, std::sync::atomic::Ordering::Release);
        let turn_running = crate::store::turns::open_turn(cx.tx.conn(), cx.session_id)?
            .is_some_and(|t| t.status == crate::store::TurnStatus::Running);
        Ok(if turn_running {
            "The older part of the conversation will be summarized before the next model call (the newest messages stay as they are)."
        } else {
            "Summarizing the older part of the conversation now (the newest messages stay as they are)."
        }
        .into())
    }
}

/// `/instructions`: which instruction files the session took when it started.
struct InstructionsCommand;

impl SlashCommand for InstructionsCommand {
    fn spec(&self) -> CommandSpec {
        CommandSpec {
            name: "instructions",
            usage: "/instructions",
            summary: "show which AGENTS.md files this session follows",
            details: "",
        }
    }

    fn run(&self, cx: &mut CommandContext<'_, '_>, _args: &str) -> Result<String> {
        let taken = crate::store::sessions::instructions(cx.tx.conn(), cx.session_id)?;
        Ok(describe_instructions(
            taken.as_ref().map(|i| i.files.as_slice()),
        ))
    }
}

/// The `/instructions` text (the CLI prints the same).
pub fn describe_instructions(files: Option<&[waymark_protocol::InstructionFile]>) -> String {
    use waymark_protocol::InstructionScope;
    let Some(files) = files else {
        return "This session started before Waymark read AGENTS.md files: it follows none.".into();
    };
    if files.is_empty() {
        return format!(
            "No instruction files: none of {} was found in the workspace, its parent folders up to the git root, or your config folder when this session started.",
            crate::instructions::FILE_NAMES.join(" or ")
        );
    }
    let mut out =
        String::from("Instructions this session follows (read when it started, in this order):");
    for f in files {
        let scope = match f.scope {
            InstructionScope::User => "yours, every project",
            InstructionScope::Project => "project",
        };
        let state = match &f.error {
            Some(e) => format!("not read: {e}"),
            None if f.included_bytes < f.bytes => format!(
                "{} of {} bytes (cut at the {} KiB cap)",
                f.included_bytes,
                f.bytes,
                crate::instructions::CAP_BYTES / 1024
            ),
            None => format!("{} bytes", f.bytes),
        };
        out.push_str(&format!("\n  {} ({scope}): {state}", f.path));
    }
    out.push_str("\nChanges to these files apply to sessions started after the change.");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_commands_not_paths_or_escapes() {
        assert_eq!(parse("/help"), Some(("help", "")));
        assert_eq!(parse("  /mode on  "), Some(("mode", "on")));
        assert_eq!(
            parse("/task fix the build budget=50K"),
            Some(("task", "fix the build budget=50K"))
        );
        assert_eq!(parse("//help"), None);
        assert_eq!(parse("/usr/bin is odd"), None);
        assert_eq!(parse("hello /help"), None);
        assert_eq!(unescape("//help me"), "/help me");
        assert_eq!(unescape("plain"), "plain");
    }

    #[test]
    fn help_fits_an_80_column_terminal_and_keeps_every_word() {
        let specs = [
            CommandSpec {
                name: "task",
                usage: "/task [<objective> [tokens=50K turns=N time=2h] | tokens=…|edit …|pause|resume|reply <answer>|clear|replace …|next …]",
                summary: "set or manage the session's task",
                details: "",
            },
            CommandSpec {
                name: "help",
                usage: "/help",
                summary: "list the commands, each with what it does, in words long enough to need a second line here",
                details: "",
            },
            CommandSpec {
                name: "x",
                usage: "/x",
                summary: "a-word-far-longer-than-any-line-of-the-help-could-ever-hold-so-it-is-cut-where-it-must",
                details: "",
            },
        ];
        let text = help_text(&specs);
        for line in text.lines() {
            assert!(line.chars().count() <= HELP_WIDTH, "{line:?} in\n{text}");
        }
        let joined = |t: &str| t.split_whitespace().collect::<String>();
        for s in &specs {
            assert!(
                joined(&text).contains(&joined(s.usage)),
                "{}\n{text}",
                s.usage
            );
            assert!(
                joined(&text).contains(&joined(s.summary)),
                "{}\n{text}",
                s.summary
            );
        }
    }
}
