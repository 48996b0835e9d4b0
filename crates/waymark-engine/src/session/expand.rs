//! A user's `/name args` that no command has but an extension expands (an MCP server's
//! prompt) becomes the message it expands to, before the session's actor gets it.

use super::SessionCore;
use crate::commands::parse;
use crate::error::{Error, Result};
use std::sync::Arc;
use waymark_protocol::{MessageSource, Op};

/// A user's `/name args` that no command has but an extension expands (an MCP server's
/// prompt) becomes the message it expands to. The expansion may wait on a server, so it
/// runs in the submitter's task (`SessionHandle::submit`), not the session's: the session
/// goes on meanwhile, Stop included.
pub(crate) async fn expand(core: &Arc<SessionCore>, op: Op) -> Result<Op> {
    let (text, rest) = match UserSubmit::of(op) {
        Split::User(text, rest) => (text, rest),
        Split::Other(op) => return Ok(op),
    };
    let keep = |text: String| rest.clone().with(text);
    let Some((name, args)) = parse(&text) else {
        return Ok(keep(text));
    };
    if core.commands.has(name) {
        return Ok(keep(text));
    }
    let api = crate::extension::SessionApi::new(core.clone());
    let Some(expanding) = core.hooks().expand(&api, name, args) else {
        return Ok(keep(text));
    };
    // The error may quote the server: redacted whole, then kept to a readable size.
    let expanded = expanding.await.map_err(|e| match e {
        Error::Refused { code, message } => {
            let m = core.journal.store.redactor().redact(&message).into_owned();
            Error::Refused {
                code,
                message: waymark_protocol::display::cut_at(m, MAX_EXPAND_ERROR),
            }
        }
        other => other,
    })?;
    // Taken as text, never as a command: one that starts with `/` is escaped.
    let expanded = if expanded.trim_start().starts_with('/') {
        format!("/{}", expanded.trim_start())
    } else {
        expanded
    };
    Ok(keep(expanded))
}

/// The longest error an expansion may give, in bytes (past it, cut with `…`).
const MAX_EXPAND_ERROR: usize = 2000;

/// An op as the steps before admission see it.
pub(super) enum Split {
    /// A user's message: its text, and the rest of it.
    User(String, UserSubmit),
    /// Any other op, untouched.
    Other(Op),
}

/// A user's message taken apart: its text, and the rest of its op, to put back around the
/// text a step before admission makes of it (an expansion, a check's context).
#[derive(Clone)]
pub(super) struct UserSubmit {
    position: waymark_protocol::Position,
    idempotency_key: Option<String>,
    intent: Option<waymark_protocol::Intent>,
    images: Vec<waymark_protocol::ImageInput>,
}

impl UserSubmit {
    /// The text of a user's message and the rest of it; any other op as it is.
    pub(super) fn of(op: Op) -> Split {
        match op {
            Op::Submit {
                text,
                source: MessageSource::User,
                position,
                idempotency_key,
                intent,
                images,
            } => Split::User(
                text,
                UserSubmit {
                    position,
                    idempotency_key,
                    intent,
                    images,
                },
            ),
            other => Split::Other(other),
        }
    }

    /// The message again, with `text`.
    pub(super) fn with(self, text: String) -> Op {
        Op::Submit {
            text,
            source: MessageSource::User,
            position: self.position,
            idempotency_key: self.idempotency_key,
            intent: self.intent,
            images: self.images,
        }
    }
}
