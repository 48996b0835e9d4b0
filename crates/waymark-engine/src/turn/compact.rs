//! Compactions the turn engine runs: before a model call (the threshold, a refusal, a
//! `/compact` during the turn) and at once for a `/compact` between turns.

use super::offer::tool_specs;
use crate::context;
use crate::error::{Error, Result};
use crate::extension::SessionApi;
use crate::provider::StreamEvent;
use crate::session::SessionCore;
use crate::store::{self, HistoryItem};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use waymark_protocol::{CompactReason, EventKind, MessageSource};

/// How a compaction went.
pub(super) enum Compacted {
    Done,
    /// Nothing old enough to fold in.
    Nothing,
    Failed(crate::provider::ProviderError),
    Cancelled,
}

/// The sizes a compaction works from, in tokens: the model's context window, the estimate
/// that led here, and what is not history (system prompt, reminders, tools).
pub(super) struct Sizes {
    pub(super) window: u64,
    pub(super) before: u64,
    pub(super) fixed: u64,
}

/// Summarizes the older history (see [`crate::compaction`]): one call, its usage counted on
/// the turn, the summary stored and announced (`context.compacted`); the history the model
/// sees then starts from it.
pub(super) async fn compact(
    core: &SessionCore,
    api: &SessionApi,
    turn_id: Option<i64>,
    reason: CompactReason,
    sizes: Sizes,
    cancel: &CancellationToken,
) -> Result<Compacted> {
    use crate::compaction as c;
    let Sizes {
        window,
        before,
        fixed,
    } = sizes;
    let (prefix, upto, previous, kept) = {
        let cache = core.history_cache()?;
        let first = usize::from(cache.compaction.is_some());
        let keep = c::keep_tokens(window, reason, core.config().turn.compact_keep_percent);
        let Some(k) = c::cut(&cache.items, &cache.tokens, keep, first) else {
            return Ok(Compacted::Nothing);
        };
        let prefix: Vec<HistoryItem> = cache.items[first..k]
            .iter()
            .map(|(_, i)| i.clone())
            .collect();
        let kept: u64 = cache.tokens[k..].iter().sum();
        (prefix, cache.ids[k - 1], cache.compaction.clone(), kept)
    };
    let mut request = c::request(previous.as_ref(), &prefix, window);
    // What the extensions say the summary must keep (outside any transaction).
    // What the extensions say the summary must keep, redacted and bounded; a step that fails
    // fails this compaction as any failure does (the request is cut to fit instead).
    match core.hooks().before_compaction(api, reason).await {
        Ok(keep) => {
            let keep: Vec<String> = keep
                .iter()
                .map(|k| core.journal.store.redactor().redact(k).into_owned())
                .collect();
            c::keep_in_summary(&mut request, &keep);
        }
        Err(e) => {
            return Ok(Compacted::Failed(crate::provider::ProviderError::new(
                crate::provider::ProviderErrorKind::RequestRejected,
                format!("an extension's step before compaction failed: {e}"),
            )));
        }
    }
    let route = core.route();
    // The spending limits hold this call too (G-33).
    let hold = match core.gate_call(api, turn_id, &route, &mut request)? {
        waymark_extension::Gate::Refused(refused) => {
            return Ok(Compacted::Failed(crate::provider::ProviderError::new(
                crate::provider::ProviderErrorKind::RequestRejected,
                refused.message,
            )));
        }
        waymark_extension::Gate::Go(hold) => hold,
    };
    // How far the summary has come: what a failure or a stop midway is charged for.
    let progress = std::sync::Mutex::new(crate::provider::Progress::default());
    let sink = |ev: StreamEvent| {
        if let StreamEvent::Progress(p) = ev {
            *progress.lock().unwrap_or_else(|p| p.into_inner()) = p;
        }
    };
    let billed = || {
        progress.lock().unwrap_or_else(|p| p.into_inner()).charge(
            request.estimated_tokens(),
            u64::from(request.max_output_tokens),
        )
    };
    let sid = core.id.as_str();
    // A call that went out is charged whatever comes of it: a failure while the provider
    // answered, Stop, and a reply with no summary all cost what the provider bills. Between
    // turns it is the session's.
    let charge = |usage: waymark_protocol::Usage| -> Result<()> {
        let charge = core.charge_for(&route, &usage, hold);
        core.write(|tx| {
            match turn_id {
                Some(turn_id) => tx.add_usage(turn_id, usage, &charge)?,
                None => tx.charge_session(sid, &charge)?,
            }
            Ok(())
        })
    };
    let reply = tokio::select! {
        r = tracing::Instrument::instrument(
            route.provider.call(&request, &sink),
            tracing::info_span!("compaction_call", items = prefix.len()),
        ) => r,
        _ = cancel.cancelled() => {
            charge(billed())?;
            return Ok(Compacted::Cancelled);
        }
    };
    let reply = match reply {
        Ok(r) => r,
        Err(e) => {
            if e.streamed {
                charge(billed())?;
            } else {
                core.release(hold)?;
            }
            return Ok(Compacted::Failed(e));
        }
    };
    let summary = reply.text.trim();
    if summary.is_empty() {
        charge(reply.usage)?;
        return Ok(Compacted::Failed(
            crate::provider::ProviderError::bad_response("the compaction call returned no summary"),
        ));
    }
    let mut row = store::compactions::CompactionRow {
        upto,
        summary: summary.to_string(),
        files: c::files_touched(previous.as_ref(), &prefix),
        pinned: c::pinned(previous.as_ref(), &prefix),
        before_tokens: before,
        after_tokens: 0,
    };
    let message = HistoryItem::User {
        text: c::message(&row),
        source: MessageSource::System,
        images: Vec::new(),
    };
    row.after_tokens = c::item_tokens(&message) + kept + fixed;
    core.write(|tx| {
        tx.insert_compaction(sid, turn_id, &row)?;
        let charge = core.charge_for(&route, &reply.usage, hold);
        match turn_id {
            Some(turn_id) => tx.add_usage(turn_id, reply.usage, &charge)?,
            // Between turns: the call belongs to no turn; the session and its day pay for it.
            None => tx.charge_session(sid, &charge)?,
        }
        Ok(tx.emit(
            sid,
            EventKind::ContextCompacted {
                turn_id,
                reason,
                before_tokens: row.before_tokens,
                after_tokens: row.after_tokens,
                summary: row.summary.clone(),
            },
        )?)
    })?;
    core.reset_history();
    Ok(Compacted::Done)
}

/// `/compact` while no turn runs: the older history is summarized at once (the summary call's
/// tokens belong to no turn), and what happened is said in the session's log.
pub(crate) async fn compact_between_turns(
    core: &Arc<SessionCore>,
    cancel: &CancellationToken,
) -> Result<()> {
    let sid = core.id.clone();
    let api = SessionApi::new(core.clone());
    let session = core
        .read(|c| Ok(store::sessions::get(c, &sid)?))?
        .ok_or_else(|| Error::SessionNotFound(sid.clone()))?;
    let extra = core.hooks().system_prompts(&api, &session);
    let system = context::system_prompt(
        &core.places.workspace,
        &core.places.session_dir,
        &core.instructions,
        &extra,
    );
    let (_, tools_tokens) = tool_specs(core, &session);
    let fixed = crate::provider::estimate_tokens(system.len()) + tools_tokens;
    let (_, estimate) = core.context_estimate(fixed)?;
    let window = core
        .config()
        .turn
        .context_tokens
        .unwrap_or_else(|| core.provider().context_tokens());
    let said = |text: &str| {
        core.write(|tx| {
            Ok(tx.emit(
                &sid,
                EventKind::CommandOutput {
                    command: "compact".into(),
                    text: text.into(),
                },
            )?)
        })
    };
    match compact(
        core,
        &api,
        None,
        CompactReason::Manual,
        Sizes {
            window,
            before: estimate,
            fixed,
        },
        cancel,
    )
    .await?
    {
        Compacted::Done => Ok(()),
        Compacted::Nothing => said("There is not enough conversation to summarize yet."),
        Compacted::Cancelled => said("The summary was stopped; the conversation is unchanged."),
        Compacted::Failed(e) => said(&format!(
            "The conversation could not be summarized ({e}); it is unchanged, and the next request is cut to fit instead."
        )),
    }
}
