//! Context assembly: the system prompt, reminders contributed by components (ordered by
//! priority; plan mode and goals add theirs here) and the history. When the history outgrows
//! the model's budget, the oldest tool outputs are replaced by a short note, never dropped.

use crate::provider::{CallPurpose, ModelMessage, ModelRequest, ToolSpec, estimate_tokens};
use crate::store::HistoryItem;
use std::path::Path;
#[cfg(test)]
use waymark_protocol::MessageSource;
use waymark_protocol::ToolStatus;

pub use waymark_extension::reminder::{Reminder, ReminderContext, ReminderSource};

/// The base system prompt, then the project instructions the session started with (if
/// any), then what extensions add (`extra`).
pub fn system_prompt(
    workspace: &Path,
    session_dir: &Path,
    instructions: &str,
    extra: &[String],
) -> String {
    let mut prompt = format!(
        "You are Waymark, a coding agent working in the user's project on their machine.\n\
         \n\
         Workspace (the user's project): {ws}\n\
         Session folder (yours, outside the project): {sd}\n\
         \n\
         How to work:\n\
         - Look before you change: read the relevant files and search the code before editing.\n\
         - Use the tools to act. Paths may be relative to the workspace. You can write only inside the workspace and the session's artifacts folder.\n\
         - Prefer small, precise edits (edit, multiedit, apply_patch) over rewriting whole files.\n\
         - Run the project's own build and tests with bash to check your work when that is cheap.\n\
         - If a tool call is denied, do not repeat it unchanged: adjust, take another route, or ask.\n\
         - When the task is done, reply with a short summary of what changed and what you checked; do not call tools in that final reply.\n\
         - Be direct and concise. Do not invent facts about the code: if you are unsure, look.",
        ws = workspace.display(),
        sd = session_dir.display()
    );
    for e in std::iter::once(instructions)
        .filter(|i| !i.is_empty())
        .chain(extra.iter().map(String::as_str))
    {
        prompt.push_str("\n\n");
        prompt.push_str(e);
    }
    prompt
}

/// Orders reminders by priority (stable for equal priorities) and renders them as one block.
pub fn render_reminders(mut reminders: Vec<Reminder>) -> Option<String> {
    if reminders.is_empty() {
        return None;
    }
    reminders.sort_by_key(|r| std::cmp::Reverse(r.priority));
    let body = reminders
        .iter()
        .map(|r| r.text.trim())
        .collect::<Vec<_>>()
        .join("\n\n");
    Some(format!("<system_reminder>\n{body}\n</system_reminder>"))
}

/// How a request was shrunk to fit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Elision {
    pub items: u64,
    pub bytes: u64,
}

/// Inputs of [`build_request`].
pub struct RequestParts<'a> {
    pub system: String,
    pub history: &'a [(Option<i64>, HistoryItem)],
    pub current_turn: i64,
    pub reminders: Option<&'a str>,
    pub tools: Vec<ToolSpec>,
    /// Rough size of `tools` in tokens (computed once per tool set).
    pub tools_tokens: u64,
    /// Tokens the request may take (the model's window less room for the reply).
    pub budget_tokens: u64,
    pub max_output_tokens: u32,
}

/// Builds the model request; the current turn's first user message carries the reminders.
pub fn build_request(parts: RequestParts<'_>) -> (ModelRequest, Elision) {
    let mut messages = Vec::with_capacity(parts.history.len());
    let mut reminded = false;
    for (turn, item) in parts.history {
        messages.push(match item {
            HistoryItem::User { text, images, .. } => {
                let text = match parts.reminders {
                    Some(r) if !reminded && *turn == Some(parts.current_turn) => {
                        reminded = true;
                        format!("{r}\n\n{text}")
                    }
                    _ => text.clone(),
                };
                ModelMessage::User {
                    text,
                    images: images.clone(),
                }
            }
            HistoryItem::Assistant {
                text,
                reasoning,
                tool_calls,
            } => ModelMessage::Assistant {
                text: text.clone(),
                reasoning: reasoning.clone(),
                tool_calls: tool_calls.clone(),
            },
            HistoryItem::ToolResult {
                call_id,
                wire_id,
                name,
                status,
                content,
                images,
            } => ModelMessage::ToolResult {
                call_id: wire_id.clone().unwrap_or_else(|| call_id.clone()),
                name: name.clone(),
                content: content.clone(),
                is_error: *status != ToolStatus::Ok,
                images: images.clone(),
            },
        });
    }
    // Only the newest images go to the model (each result's text still describes its own):
    // old ones cost tokens on every call, and a provider's limit on images per request
    // must not end a long session.
    // A user's images count too: every request carries them again.
    let mut kept = 0;
    for m in messages.iter_mut().rev() {
        if let Some(images) = m.images_mut() {
            let room = IMAGES_SENT.saturating_sub(kept);
            images.truncate(room);
            kept += images.len();
        }
    }
    // The current turn's first message was compacted away: the reminders go at the start of
    // the conversation (the compaction's summary) instead, never lost.
    if let (Some(r), false) = (parts.reminders, reminded)
        && let Some(ModelMessage::User { text, .. }) = messages.first_mut()
    {
        *text = format!("{r}\n\n{text}");
    }
    let mut request = ModelRequest {
        system: parts.system,
        messages,
        tools: parts.tools,
        max_output_tokens: parts.max_output_tokens,
        purpose: CallPurpose::Main,
    };
    let elision = fit(&mut request, parts.budget_tokens, parts.tools_tokens);
    (request, elision)
}

/// The most images one request carries (the newest).
pub const IMAGES_SENT: usize = 8;

/// Replaces the oldest tool outputs (all but the newest) with a note until the request fits.
fn fit(request: &mut ModelRequest, budget: u64, tools_tokens: u64) -> Elision {
    let mut total = request.message_tokens() + tools_tokens;
    let mut el = Elision::default();
    if total <= budget {
        return el;
    }
    let results: Vec<usize> = request
        .messages
        .iter()
        .enumerate()
        .filter(|(_, m)| matches!(m, ModelMessage::ToolResult { .. }))
        .map(|(i, _)| i)
        .collect();
    let Some((_, older)) = results.split_last() else {
        return el;
    };
    for &i in older {
        if total <= budget {
            break;
        }
        if let ModelMessage::ToolResult { name, content, .. } = &mut request.messages[i] {
            if content.len() < 200 {
                continue;
            }
            let note = format!(
                "[output of {name} elided to fit the context window ({} bytes); run the tool again if you need it]",
                content.len()
            );
            let saved = estimate_tokens(content.len()).saturating_sub(estimate_tokens(note.len()));
            el.items += 1;
            el.bytes += content.len() as u64;
            *content = note;
            total = total.saturating_sub(saved);
        }
    }
    el
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::ToolCallRecord;

    fn hist() -> Vec<(Option<i64>, HistoryItem)> {
        let mut h = vec![(
            Some(1),
            HistoryItem::User {
                text: "first".into(),
                source: MessageSource::User,
                images: Vec::new(),
            },
        )];
        for i in 0..5 {
            h.push((
                Some(1),
                HistoryItem::Assistant {
                    text: String::new(),
                    reasoning: None,
                    tool_calls: vec![ToolCallRecord {
                        id: format!("c{i}"),
                        wire_id: None,
                        name: "read_file".into(),
                        arguments: serde_json::json!({}),
                    }],
                },
            ));
            h.push((
                Some(1),
                HistoryItem::ToolResult {
                    images: Vec::new(),
                    call_id: format!("c{i}"),
                    wire_id: None,
                    name: "read_file".into(),
                    status: ToolStatus::Ok,
                    content: "x".repeat(4000),
                },
            ));
        }
        h.push((
            Some(2),
            HistoryItem::User {
                text: "second".into(),
                source: MessageSource::User,
                images: Vec::new(),
            },
        ));
        h
    }

    fn parts<'a>(
        h: &'a [(Option<i64>, HistoryItem)],
        budget: u64,
        reminders: Option<&'a str>,
    ) -> RequestParts<'a> {
        RequestParts {
            system: "sys".into(),
            history: h,
            current_turn: 2,
            reminders,
            tools: vec![],
            tools_tokens: 0,
            budget_tokens: budget,
            max_output_tokens: 100,
        }
    }

    #[test]
    fn reminders_go_on_the_current_turns_message_in_priority_order() {
        let r = render_reminders(vec![
            Reminder {
                priority: 1,
                source: "low",
                text: "low".into(),
            },
            Reminder {
                priority: 9,
                source: "high",
                text: "high".into(),
            },
        ])
        .unwrap();
        assert!(r.find("high").unwrap() < r.find("low").unwrap());
        let h = hist();
        let (req, el) = build_request(parts(&h, 1_000_000, Some(&r)));
        assert_eq!(el, Elision::default());
        match req.messages.last().unwrap() {
            ModelMessage::User { text, .. } => {
                assert!(text.starts_with("<system_reminder>") && text.ends_with("second"))
            }
            other => panic!("{other:?}"),
        }
        match &req.messages[0] {
            ModelMessage::User { text, .. } => assert_eq!(text, "first"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn old_tool_outputs_are_replaced_by_a_note_when_over_budget() {
        let h = hist();
        let (req, el) = build_request(parts(&h, 3000, None));
        assert!(el.items >= 2, "{el:?}");
        assert_eq!(req.messages.len(), h.len(), "nothing is dropped");
        let notes = req
            .messages
            .iter()
            .filter(|m| matches!(m, ModelMessage::ToolResult { content, .. } if content.contains("elided")))
            .count() as u64;
        assert_eq!(notes, el.items);
        // The newest tool output is kept whole.
        let last_result = req.messages.iter().rev().find_map(|m| match m {
            ModelMessage::ToolResult { content, .. } => Some(content.clone()),
            _ => None,
        });
        assert_eq!(last_result.unwrap().len(), 4000);
        assert!(req.estimated_tokens() <= 3000 || el.items == 4);
    }

    /// A long session of images: a request carries only the newest [`IMAGES_SENT`], so a
    /// provider's limit on images per request never ends it (red-team finding).
    #[test]
    fn only_the_newest_images_go_to_the_model() {
        let mut h = hist();
        let img = |n: usize| waymark_protocol::ToolImage {
            mime: "image/png".into(),
            data: format!("img{n}"),
        };
        let mut n = 0;
        for (_, item) in h.iter_mut() {
            if let HistoryItem::ToolResult { images, .. } = item {
                *images = (0..3)
                    .map(|_| {
                        n += 1;
                        img(n)
                    })
                    .collect();
            }
        }
        let (req, _) = build_request(parts(&h, 1_000_000, None));
        let sent: Vec<String> = req
            .messages
            .iter()
            .flat_map(|m| match m {
                ModelMessage::ToolResult { images, .. } => {
                    images.iter().map(|i| i.data.clone()).collect()
                }
                _ => Vec::new(),
            })
            .collect();
        assert_eq!(sent.len(), IMAGES_SENT);
        assert!(
            sent.contains(&"img15".to_string()) && !sent.contains(&"img1".to_string()),
            "{sent:?}"
        );
    }
}
