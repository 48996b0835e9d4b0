//! A user's message checked by the extensions before it is admitted: in the submitter's task
//! and outside any transaction (a check may wait on a hook process), after a `/name` an
//! extension expands was expanded. A check may refuse the message, so nothing is admitted,
//! or add context the model reads after the user's words. A check that fails keeps the
//! message out. It checks messages the user sends as such: the session's own commands, and
//! the text that reaches the model through them (`/goal reply`, a goal's objective, an answer
//! to a question, an edited plan), are not checked.

use super::SessionCore;
use crate::commands::parse;
use crate::error::{Error, Result};
use crate::extension::{PromptCheck, SessionApi};
use std::sync::Arc;
use waymark_protocol::Op;

/// `op` as the extensions let it through: a user's message refused, or with their context.
pub(crate) async fn check(core: &Arc<SessionCore>, op: Op) -> Result<Op> {
    let (text, rest) = match super::expand::UserSubmit::of(op) {
        super::expand::Split::User(text, rest) => (text, rest),
        super::expand::Split::Other(op) => return Ok(op),
    };
    let command = parse(&text).is_some_and(|(name, _)| core.commands.has(name));
    let api = SessionApi::new(core.clone());
    // What a check says reaches the submitter and the model redacted, and cut to a size.
    let said = |what: &str, max: usize| {
        let redacted = core.journal.store.redactor().redact(what).into_owned();
        waymark_protocol::display::cut_at(redacted, max)
    };
    let text = if command {
        text
    } else {
        match core.hooks().check_prompt(&api, &text).await {
            Ok(PromptCheck::Pass) => text,
            Ok(PromptCheck::Refuse(why)) => {
                return Err(Error::refused_as(
                    "prompt_refused",
                    format!("the message was not sent: {}", said(&why, MAX_SAID)),
                ));
            }
            Ok(PromptCheck::AddContext(context)) => format!(
                "{text}\n\n{CONTEXT_HEADING}\n{}",
                said(&context, MAX_CONTEXT)
            ),
            // A check that cannot say keeps the message out (it may be the one that refuses).
            Err(e) => {
                return Err(Error::refused_as(
                    "prompt_check_failed",
                    format!(
                        "the message was not sent: a check of it failed: {}",
                        said(&e.to_string(), MAX_SAID)
                    ),
                ));
            }
        }
    };
    Ok(rest.with(text))
}

/// The longest refusal a check may give, in bytes (past it, cut with `…`).
const MAX_SAID: usize = 2000;

/// The most context the checks may add to one message, in bytes.
const MAX_CONTEXT: usize = 8 * 1024;

/// What comes before the context the checks add, so the model tells it from the user's words.
const CONTEXT_HEADING: &str = "[Context the session's checks added to this message]";
