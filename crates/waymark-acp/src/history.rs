//! A stored session's history as the editor replays it on `session/load`: the user's
//! messages, the agent's replies and reasoning, each tool call with its result, and the
//! answers of slash commands, read from the session's event log in pages.

use crate::updates;
use agent_client_protocol::Error;
use agent_client_protocol::v1::schema as acp;
use std::path::Path;
use waymark_protocol::display::escape_block;
use waymark_protocol::{EventKind, MessageSource};
use waymark_runtime::Runtime;

/// Events read at a time.
const PAGE: u64 = 1000;

/// The updates that replay session `id`, in order.
pub(crate) fn replay(
    runtime: &Runtime,
    id: &str,
    ws: &Path,
) -> Result<Vec<acp::SessionUpdate>, Error> {
    let mut out = Vec::new();
    let mut after = 0;
    loop {
        let batch = runtime
            .events(id, after, PAGE)
            .map_err(|e| Error::internal_error().data(e.to_string()))?;
        let Some(last) = batch.last() else {
            return Ok(out);
        };
        after = last.seq;
        for e in &batch {
            out.extend(of_stored(&e.kind, ws));
        }
    }
}

/// What one stored event replays as. The log holds whole replies (the streamed pieces were
/// never stored), so a reply replays whole.
fn of_stored(kind: &EventKind, ws: &Path) -> Vec<acp::SessionUpdate> {
    use acp::SessionUpdate as U;
    match kind {
        EventKind::MessageAdmitted {
            source: MessageSource::User,
            text,
            ..
        } => vec![U::UserMessageChunk(acp::ContentChunk::new(
            escape_block(text).into(),
        ))],
        EventKind::AssistantMessage {
            text, reasoning, ..
        } => {
            let mut out = Vec::new();
            if let Some(r) = reasoning.as_deref().filter(|r| !r.is_empty()) {
                out.push(U::AgentThoughtChunk(acp::ContentChunk::new(
                    escape_block(r).into(),
                )));
            }
            if !text.is_empty() {
                out.push(U::AgentMessageChunk(acp::ContentChunk::new(
                    escape_block(text).into(),
                )));
            }
            out
        }
        EventKind::ToolCall { .. }
        | EventKind::ToolResult { .. }
        | EventKind::CommandOutput { .. } => updates::of(kind, ws),
        _ => Vec::new(),
    }
}
