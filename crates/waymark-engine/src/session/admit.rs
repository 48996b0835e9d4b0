//! Admitting a message: a slash command runs at once and never reaches the model; an intent
//! applies in the same transaction; an idempotency key already used returns the message it
//! admitted.

use super::{OpOutcome, SessionCore, changed};
use crate::commands;
use crate::error::{Error, Result};
use crate::extension::SessionApi;
use crate::store::{self, Tx};
use std::sync::Arc;
use waymark_protocol::{EventKind, Intent, MessageSource, Position};

/// Queues a message in `tx` and logs `message.admitted`; with an idempotency key already used
/// in the session, returns the existing message (`false`) and logs nothing.
fn admit_message(
    tx: &mut Tx<'_>,
    sid: &str,
    source: MessageSource,
    text: &str,
    position: Position,
    key: Option<&str>,
) -> Result<(store::MessageRow, bool)> {
    Ok(tx.admit_message(sid, source, text, position, key)?)
}

/// Admits a message in one transaction: slash commands run here and never reach the model;
/// intents apply here; an idempotency key already used returns the existing message.
pub(super) fn admit(
    core: &Arc<SessionCore>,
    text: &str,
    source: MessageSource,
    position: Position,
    key: Option<&str>,
    intent: Option<Intent>,
) -> Result<OpOutcome> {
    let sid = core.id.as_str();
    let api = SessionApi::new(core.clone());
    if source == MessageSource::User
        && let Some((name, args)) = commands::parse(text)
    {
        let output = core.write(|tx| {
            let out = core.commands.run(tx, &api, name, args)?;
            tx.emit(
                sid,
                EventKind::CommandOutput {
                    command: name.to_string(),
                    text: out.clone(),
                },
            )?;
            Ok(out)
        })?;
        changed(core);
        return Ok(OpOutcome::Command { output });
    }
    let text = commands::unescape(text);
    if text.trim().is_empty() {
        return Err(Error::refused("the message is empty".into()));
    }
    core.write(|tx| {
        // The intent takes effect in the same transaction that admits the message (PM-6).
        if let Some(intent) = intent
            && !core.hooks().on_intent(tx, &api, intent)?
        {
            return Err(Error::refused(format!(
                "no extension of this session handles the intent {intent:?}"
            )));
        }
        let (m, created) = admit_message(tx, sid, source, text, position, key)?;
        if created {
            if source == MessageSource::User {
                // From the stored text, redacted whole: a secret cut at 80 characters would
                // no longer match and its start would show in the session list.
                let title: String = m
                    .text
                    .lines()
                    .next()
                    .unwrap_or("")
                    .chars()
                    .take(80)
                    .collect();
                tx.set_title_if_missing(sid, &title)?;
            }
            tx.touch_session(sid)?;
        }
        // Last: an extension that moves files does so once everything else succeeded.
        core.hooks().on_admit(tx, &api, &m, intent, created)?;
        Ok(OpOutcome::Admitted {
            message_id: m.id,
            created,
        })
    })
}
