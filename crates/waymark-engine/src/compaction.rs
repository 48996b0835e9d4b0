//! Context compaction: keeping a long conversation inside the model's context window.
//!
//! The session keeps a running estimate of the next request's size (the history's tokens,
//! summed as rows arrive, plus the system prompt, reminders and tools), corrected by the
//! ratio between the provider's reported input tokens and our estimate of the last request.
//! Deciding costs the same however long the history is.
//!
//! When the next request would pass `turn.compact_at_percent` (85) of the window (or the provider
//! refuses a request as too long, or the user types `/compact`), one compaction call
//! summarizes the older history. The model then sees, in its place, one message with:
//! - the summary;
//! - the files touched so far (changed or read), worked out from the tool calls, not from
//!   the summary;
//! - the newest messages the user gave through a questionnaire (an approved plan, answers),
//!   word for word.
//!
//! The newest history (about `turn.compact_keep_percent` (30) of the window, and always the last reply with
//! its tool results) stays verbatim. The system prompt, the goal contract and its status,
//! and the open questionnaires are not history: they are rebuilt for every request, so a
//! compaction never touches them. The compaction call's tokens count toward the turn (and so
//! toward a goal's budget). The rows stay in the store: the transcript keeps everything.

use crate::provider::{
    CallPurpose, IMAGE_BYTES, ModelMessage, ModelRequest, RESULT_OVERHEAD_BYTES, calls_bytes,
    estimate_tokens,
};
use crate::store::HistoryItem;
use crate::store::compactions::CompactionRow;
use std::collections::BTreeMap;
use waymark_protocol::{CompactReason, MessageSource, ToolStatus};

/// The compaction call's transcript is cut to this share of the window (percent).
const INPUT_PERCENT: u64 = 55;
/// Longest summary asked for.
pub const SUMMARY_MAX_TOKENS: u32 = 2048;
/// A tool's output is shown to the compaction call up to this many bytes.
const TOOL_OUTPUT_BYTES: usize = 1500;
/// A tool call's arguments are shown up to this many bytes.
const ARGUMENT_BYTES: usize = 300;
/// The newest messages from questionnaires kept word for word.
const PINNED_KEPT: usize = 3;

/// The instructions of the compaction call.
pub const PROMPT: &str = "You are compacting the conversation of a coding agent so that it can carry on in a fresh context window. \
Write the summary the agent will read in place of the messages you are given. Cover:\n\
- what the user asked for, and every constraint or preference they stated;\n\
- the decisions taken and why;\n\
- what was changed, in which files, and how it was checked (builds, tests, their results);\n\
- problems met and how they were solved, or that they are still open;\n\
- what the agent was doing last and what it meant to do next.\n\
Name things exactly (files, functions, commands, error messages) where it matters. Leave out \
pleasantries and whatever the agent can simply read again from the files. Plain text, at most \
about 600 words. Do not call tools.";

/// Our estimate of one history item's size in tokens (the measure `ModelRequest` uses).
pub fn item_tokens(item: &HistoryItem) -> u64 {
    let bytes = match item {
        HistoryItem::User { text, images, .. } => text.len() + images.len() * IMAGE_BYTES,
        // Reasoning is sent back where the wire takes it: it counts.
        HistoryItem::Assistant {
            text,
            reasoning,
            tool_calls,
        } => text.len() + reasoning.as_ref().map_or(0, String::len) + calls_bytes(tool_calls),
        HistoryItem::ToolResult {
            content, images, ..
        } => content.len() + RESULT_OVERHEAD_BYTES + images.len() * IMAGE_BYTES,
    };
    estimate_tokens(bytes)
}

/// Whether a request of about `estimate` tokens should wait for a compaction first: it
/// would pass `at_percent` of the window.
pub fn should_compact(estimate: u64, window: u64, at_percent: u32) -> bool {
    u128::from(estimate) * 100 > u128::from(window) * u128::from(at_percent)
}

/// The newest history kept verbatim: `keep_percent` of the window before it fills; only
/// the last reply when the user asked (`/compact`) or the provider refused a request as too
/// long (our count was too low, so how much would fit is not known).
pub fn keep_tokens(window: u64, reason: CompactReason, keep_percent: u32) -> u64 {
    match reason {
        CompactReason::Threshold => {
            u64::try_from(u128::from(window) * u128::from(keep_percent) / 100).unwrap_or(u64::MAX)
        }
        CompactReason::Manual | CompactReason::ProviderLimit => 0,
    }
}

/// The index of the first item kept verbatim (the newest ones within `keep` tokens), or
/// None when nothing can be compacted. `first` is the first real row (1 when item 0 is the
/// previous compaction's summary).
/// The cut never falls between a reply and its tool results, and always keeps the last
/// reply (or the last message) with what follows it.
pub fn cut(
    items: &[(Option<i64>, HistoryItem)],
    tokens: &[u64],
    keep: u64,
    first: usize,
) -> Option<usize> {
    let mut k = items.len();
    let mut kept = 0u64;
    while k > first && kept + tokens[k - 1] <= keep {
        k -= 1;
        kept += tokens[k];
    }
    while k < items.len() && matches!(items[k].1, HistoryItem::ToolResult { .. }) {
        k += 1;
    }
    let last_start = (first..items.len())
        .rev()
        .find(|&i| !matches!(items[i].1, HistoryItem::ToolResult { .. }))?;
    let k = k.min(last_start);
    (k > first).then_some(k)
}

/// Cuts `text` to at most `n` bytes at a character boundary, saying how much was left out.
fn clip(text: &str, n: usize) -> String {
    if text.len() <= n {
        return text.to_string();
    }
    let end = (0..=n)
        .rev()
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(0);
    format!("{}… [{} more bytes]", &text[..end], text.len() - end)
}

fn render(item: &HistoryItem) -> String {
    match item {
        HistoryItem::User {
            text,
            source,
            images,
        } => {
            let who = match source {
                MessageSource::User => "User",
                MessageSource::Goal => "Goal runner",
                MessageSource::Questionnaire => "User (through a question)",
                MessageSource::System => "System",
            };
            if images.is_empty() {
                format!("## {who}\n{text}")
            } else {
                format!("## {who}\n{text}\n({} image(s) attached)", images.len())
            }
        }
        HistoryItem::Assistant {
            text, tool_calls, ..
        } => {
            let mut s = format!("## Agent\n{text}");
            for c in tool_calls {
                s.push_str(&format!(
                    "\n-> {} {}",
                    c.name,
                    clip(&c.arguments.to_string(), ARGUMENT_BYTES)
                ));
            }
            s
        }
        HistoryItem::ToolResult {
            name,
            status,
            content,
            ..
        } => {
            let status = match status {
                ToolStatus::Ok => "ok",
                _ => "failed",
            };
            format!(
                "## Result of {name} ({status})\n{}",
                clip(content, TOOL_OUTPUT_BYTES)
            )
        }
    }
}

/// The most the extensions may ask a summary to keep, in bytes (past it, cut with `…`): the
/// request was sized to fit before they were asked.
const MAX_KEEP: usize = 4 * 1024;

/// Adds to a compaction call what the summary must keep, as the extensions said it, cut to
/// [`MAX_KEEP`].
pub fn keep_in_summary(request: &mut ModelRequest, keep: &[String]) {
    if keep.is_empty() {
        return;
    }
    if let Some(ModelMessage::User { text, .. }) = request.messages.last_mut() {
        text.push_str("\n\n# What the summary must keep\n\n");
        text.push_str(&waymark_protocol::display::cut_at(
            keep.join("\n\n"),
            MAX_KEEP,
        ));
    }
}

/// The compaction call: the previous summary (if any) and the items to fold in, rendered as
/// one transcript cut to fit the window (the oldest part keeps a quarter of the room, the
/// newest the rest; what falls between is named as left out).
pub fn request(
    previous: Option<&CompactionRow>,
    items: &[HistoryItem],
    window: u64,
) -> ModelRequest {
    let room = (window.saturating_mul(INPUT_PERCENT) / 100).saturating_mul(4) as usize;
    let mut head = String::new();
    if let Some(p) = previous {
        head = format!(
            "# Summary of what came before\n{}\n\n",
            clip(&p.summary, room / 4)
        );
    }
    let parts: Vec<String> = items.iter().map(render).collect();
    let total: usize = parts.iter().map(|p| p.len() + 2).sum();
    let body = if head.len() + total <= room {
        parts.join("\n\n")
    } else {
        let budget = room.saturating_sub(head.len());
        let (mut front, mut used) = (0usize, 0usize);
        while front < parts.len() && used + parts[front].len() + 2 <= budget / 4 {
            used += parts[front].len() + 2;
            front += 1;
        }
        let mut back = parts.len();
        while back > front && used + parts[back - 1].len() + 2 <= budget {
            back -= 1;
            used += parts[back].len() + 2;
        }
        let mut out = parts[..front].join("\n\n");
        out.push_str(&format!(
            "\n\n[… {} messages left out here to fit …]\n\n",
            back - front
        ));
        out.push_str(&parts[back..].join("\n\n"));
        out
    };
    ModelRequest {
        system: PROMPT.to_string(),
        messages: vec![ModelMessage::user(format!(
            "{head}# The conversation to summarize\n\n{body}"
        ))],
        tools: Vec::new(),
        max_output_tokens: SUMMARY_MAX_TOKENS,
        purpose: CallPurpose::Compact,
    }
}

/// Files touched: the previous compaction's, plus what `items`' tool calls wrote or read.
pub fn files_touched(
    previous: Option<&CompactionRow>,
    items: &[HistoryItem],
) -> Vec<(String, bool)> {
    let mut files: BTreeMap<String, bool> = previous
        .map(|p| p.files.iter().cloned().collect())
        .unwrap_or_default();
    for item in items {
        let HistoryItem::Assistant { tool_calls, .. } = item else {
            continue;
        };
        for c in tool_calls {
            let path = || {
                c.arguments
                    .get("path")
                    .and_then(|p| p.as_str())
                    .map(str::to_string)
            };
            let (paths, changed) = match c.name.as_str() {
                "write" | "edit" | "multiedit" | "append" => (path().into_iter().collect(), true),
                "apply_patch" => (
                    c.arguments
                        .get("patch")
                        .and_then(|p| p.as_str())
                        .and_then(|p| crate::tools::patch_paths(p).ok())
                        .unwrap_or_default(),
                    true,
                ),
                "read_file" => (path().into_iter().collect::<Vec<_>>(), false),
                _ => (Vec::new(), false),
            };
            for p in paths {
                *files.entry(p).or_insert(false) |= changed;
            }
        }
    }
    files.into_iter().collect()
}

/// Messages kept word for word: the previous ones and `items`' questionnaire messages (an
/// approved plan, answers), the newest [`PINNED_KEPT`].
pub fn pinned(previous: Option<&CompactionRow>, items: &[HistoryItem]) -> Vec<String> {
    let mut all: Vec<String> = previous.map(|p| p.pinned.clone()).unwrap_or_default();
    all.extend(items.iter().filter_map(|i| match i {
        HistoryItem::User {
            text,
            source: MessageSource::Questionnaire,
            ..
        } => Some(text.clone()),
        _ => None,
    }));
    let skip = all.len().saturating_sub(PINNED_KEPT);
    all.split_off(skip)
}

/// What the model sees in place of the compacted history.
pub fn message(row: &CompactionRow) -> String {
    let mut s = format!(
        "<conversation_summary>\nThe earlier part of this conversation was compacted to fit the context window. \
         This summary stands in for it; the newest messages follow unchanged.\n\n{}",
        row.summary.trim()
    );
    if !row.files.is_empty() {
        s.push_str("\n\nFiles touched so far:");
        for (path, changed) in &row.files {
            s.push_str(&format!(
                "\n- {path} ({})",
                if *changed { "changed" } else { "read" }
            ));
        }
    }
    for p in &row.pinned {
        s.push_str(&format!(
            "\n\nKept word for word from earlier (the newest of these is in force):\n<pinned>\n{p}\n</pinned>"
        ));
    }
    s.push_str("\n</conversation_summary>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::ToolCallRecord;
    use serde_json::json;

    fn user(t: &str) -> (Option<i64>, HistoryItem) {
        (
            Some(1),
            HistoryItem::User {
                text: t.into(),
                source: MessageSource::User,
                images: Vec::new(),
            },
        )
    }
    fn reply(t: &str, calls: usize) -> (Option<i64>, HistoryItem) {
        let tool_calls = (0..calls)
            .map(|i| {
                ToolCallRecord::from_provider(
                    Some(format!("c{i}")),
                    "read_file".into(),
                    json!({"path": "a.rs"}),
                )
            })
            .collect();
        (
            Some(1),
            HistoryItem::Assistant {
                text: t.into(),
                reasoning: None,
                tool_calls,
            },
        )
    }
    fn result(t: &str) -> (Option<i64>, HistoryItem) {
        (
            Some(1),
            HistoryItem::ToolResult {
                images: Vec::new(),
                call_id: "c".into(),
                wire_id: None,
                name: "read_file".into(),
                status: ToolStatus::Ok,
                content: t.into(),
            },
        )
    }

    #[test]
    fn the_threshold_is_the_set_share_of_the_window() {
        assert!(!should_compact(850, 1000, 85));
        assert!(should_compact(851, 1000, 85));
        assert!(!should_compact(700, 1000, 70) && should_compact(701, 1000, 70));
        assert!(should_compact(u64::MAX, u64::MAX / 2, 85), "no overflow");
        assert_eq!(
            keep_tokens(u64::MAX, CompactReason::Threshold, 30),
            u64::MAX / 100 * 30 + 4
        );
    }

    /// The cut keeps the newest items within the keep budget, never splits a reply from its
    /// results, always keeps the last reply, and refuses when nothing older is left.
    #[test]
    fn the_cut_keeps_replies_with_their_results() {
        let big = "x".repeat(4000); // 1000 tokens
        let items = vec![
            user(&big),
            reply(&big, 1),
            result(&big),
            result(&big),
            reply("done", 0),
        ];
        let tokens: Vec<u64> = items.iter().map(|(_, i)| item_tokens(i)).collect();
        // Keep budget 30% of 10_000 = 3000 tokens: would start at a result; moves past them.
        assert_eq!(
            cut(
                &items,
                &tokens,
                keep_tokens(10_000, CompactReason::Threshold, 30),
                0
            ),
            Some(4)
        );
        // A huge window keeps everything: nothing to compact.
        assert_eq!(
            cut(
                &items,
                &tokens,
                keep_tokens(1_000_000, CompactReason::Threshold, 30),
                0
            ),
            None
        );
        // By hand: everything before the last reply.
        assert_eq!(
            cut(
                &items,
                &tokens,
                keep_tokens(1_000_000, CompactReason::Manual, 30),
                0
            ),
            Some(4)
        );
        // The last reply and its results are kept even when they pass the budget.
        let items = vec![user(&big), reply(&big, 1), result(&big)];
        let tokens: Vec<u64> = items.iter().map(|(_, i)| item_tokens(i)).collect();
        assert_eq!(cut(&items, &tokens, 30, 0), Some(1));
        // Only the previous summary before the kept tail: nothing new to compact.
        assert_eq!(cut(&items, &tokens, 30, 1), None);
    }

    #[test]
    fn the_request_fits_the_window_and_names_what_it_left_out() {
        let items: Vec<HistoryItem> = (0..400)
            .map(|i| HistoryItem::User {
                text: format!("message {i} {}", "y".repeat(200)),
                source: MessageSource::User,
                images: Vec::new(),
            })
            .collect();
        let req = request(None, &items, 16_000);
        assert!(
            req.estimated_tokens() < 16_000 * 60 / 100,
            "{}",
            req.estimated_tokens()
        );
        let ModelMessage::User { text, .. } = &req.messages[0] else {
            panic!()
        };
        assert!(text.contains("message 0 ") && text.contains("message 399 "));
        assert!(text.contains("messages left out here to fit"));
        assert_eq!(req.purpose, CallPurpose::Compact);
        assert!(req.tools.is_empty());
    }

    #[test]
    fn files_and_pinned_messages_carry_over() {
        let prev = CompactionRow {
            upto: 1,
            summary: "s".into(),
            files: vec![("a.rs".into(), false)],
            pinned: vec!["plan v1".into()],
            before_tokens: 0,
            after_tokens: 0,
        };
        let write = HistoryItem::Assistant {
            text: String::new(),
            reasoning: None,
            tool_calls: vec![
                ToolCallRecord::from_provider(
                    None,
                    "write".into(),
                    json!({"path": "a.rs", "content": ""}),
                ),
                ToolCallRecord::from_provider(
                    None,
                    "apply_patch".into(),
                    json!({"patch": "--- a/b.rs\n+++ b/b.rs\n"}),
                ),
            ],
        };
        let approved = HistoryItem::User {
            text: "plan v2".into(),
            source: MessageSource::Questionnaire,
            images: Vec::new(),
        };
        let items = [write, approved];
        assert_eq!(
            files_touched(Some(&prev), &items),
            [("a.rs".to_string(), true), ("b.rs".to_string(), true)]
        );
        assert_eq!(pinned(Some(&prev), &items), ["plan v1", "plan v2"]);
        let row = CompactionRow {
            files: files_touched(Some(&prev), &items),
            pinned: pinned(Some(&prev), &items),
            ..prev
        };
        let m = message(&row);
        assert!(
            m.contains("- a.rs (changed)")
                && m.contains("plan v2")
                && m.ends_with("</conversation_summary>")
        );
    }
}
