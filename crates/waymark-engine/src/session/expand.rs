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
    let Op::Submit {
        text,
        source: MessageSource::User,
        position,
        idempotency_key,
        intent,
    } = op
    else {
        return Ok(op);
    };
    let keep = |text: String| Op::Submit {
        text,
        source: MessageSource::User,
        position,
        idempotency_key: idempotency_key.clone(),
        intent,
    };
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
