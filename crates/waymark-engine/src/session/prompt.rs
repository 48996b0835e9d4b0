//! A user's message checked by the extensions before it is admitted: in the submitter's task
//! and outside any transaction (a check may wait on a hook process), after a `/name` an
//! extension expands was expanded. A check may refuse the message, so nothing is admitted,
//! or add context the model reads after the user's words. The session's own commands are
//! not checked.

use super::SessionCore;
use crate::commands::parse;
use crate::error::{Error, Result};
use crate::extension::{PromptCheck, SessionApi};
use std::sync::Arc;
use waymark_protocol::{MessageSource, Op};

/// `op` as the extensions let it through: a user's message refused, or with their context.
pub(crate) async fn check(core: &Arc<SessionCore>, op: Op) -> Result<Op> {
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
    let command = parse(&text).is_some_and(|(name, _)| core.commands.has(name));
    let api = SessionApi::new(core.clone());
    let text = if command {
        text
    } else {
        match core.hooks().check_prompt(&api, &text).await? {
            PromptCheck::Pass => text,
            PromptCheck::Refuse(why) => {
                return Err(Error::refused_as(
                    "prompt_refused",
                    format!(
                        "the message was not sent: {}",
                        core.journal.store.redactor().redact(&why)
                    ),
                ));
            }
            PromptCheck::AddContext(context) => format!("{text}\n\n{CONTEXT_HEADING}\n{context}"),
        }
    };
    Ok(Op::Submit {
        text,
        source: MessageSource::User,
        position,
        idempotency_key,
        intent,
    })
}

/// What comes before the context the checks add, so the model tells it from the user's words.
const CONTEXT_HEADING: &str = "[Context the session's checks added to this message]";
