//! What the editor is shown of a Waymark session's events, as ACP `session/update`s: the
//! reply's text as it streams, its reasoning, and each tool call with its kind, the files it
//! names, its live output and its result.

use agent_client_protocol::v1::schema as acp;
use serde_json::Value;
use std::path::Path;
use waymark_protocol::display::{escape_block, escape_line};
use waymark_protocol::{EventKind, GoalSnapshot, GoalStatus, ToolStatus};

/// The most of a result or of a command's output one update carries.
const TEXT_MAX: usize = 8 * 1024;

/// A piece of the reply's text as it streams.
pub(crate) fn reply_text(text: &str) -> acp::SessionUpdate {
    acp::SessionUpdate::AgentMessageChunk(acp::ContentChunk::new(escape_block(text).into()))
}

/// The updates `kind` makes, in order (none for what an editor has no use for). Paths are
/// shown absolute, resolved against the session's workspace `ws`, as the protocol wants.
pub(crate) fn of(kind: &EventKind, ws: &Path) -> Vec<acp::SessionUpdate> {
    use acp::SessionUpdate as U;
    match kind {
        EventKind::AssistantDelta { text, .. } if !text.is_empty() => vec![reply_text(text)],
        EventKind::AssistantMessage {
            reasoning: Some(r), ..
        } if !r.is_empty() => vec![U::AgentThoughtChunk(acp::ContentChunk::new(
            escape_block(r).into(),
        ))],
        EventKind::ToolCall {
            call_id,
            name,
            arguments,
            ..
        } => {
            let mut call = acp::ToolCall::new(call_id.clone(), title(name, arguments))
                .kind(kind_of(name))
                .status(acp::ToolCallStatus::InProgress)
                .raw_input(arguments.clone());
            if let Some(path) = path_of(arguments) {
                call = call.locations(vec![acp::ToolCallLocation::new(ws.join(path))]);
            }
            vec![U::ToolCall(call)]
        }
        EventKind::ToolOutput { call_id, text, .. } => {
            vec![U::ToolCallUpdate(acp::ToolCallUpdate::new(
                call_id.clone(),
                acp::ToolCallUpdateFields::new()
                    .content(vec![acp::ToolCallContent::from(fenced("", &capped(text)))]),
            ))]
        }
        // A slash command's answer (`/help`, `/goal`, `/mcp`): said as the agent's.
        EventKind::CommandOutput { text, .. } if !text.is_empty() => {
            vec![U::AgentMessageChunk(acp::ContentChunk::new(
                escape_block(text).into(),
            ))]
        }
        // The goal's progress: its steps (a plan's goal) or its objective, each with where
        // it stands.
        EventKind::GoalUpdated { goal } => vec![U::Plan(goal_plan(goal))],
        EventKind::ToolResult {
            call_id,
            status,
            content,
            changes,
            ..
        } => {
            let mut shown = vec![acp::ToolCallContent::from(fenced("", &capped(content)))];
            for c in changes {
                if let Some(diff) = &c.diff {
                    shown.push(acp::ToolCallContent::from(fenced("diff", &capped(diff))));
                }
            }
            let status = match status {
                ToolStatus::Ok => acp::ToolCallStatus::Completed,
                _ => acp::ToolCallStatus::Failed,
            };
            vec![U::ToolCallUpdate(acp::ToolCallUpdate::new(
                call_id.clone(),
                acp::ToolCallUpdateFields::new()
                    .status(status)
                    .content(shown),
            ))]
        }
        _ => Vec::new(),
    }
}

/// A goal as the editor's plan: a plan goal's steps, each done once the verifier found it
/// met, the first one not met in progress while the goal is active; any other goal, its
/// objective as one entry.
pub(crate) fn goal_plan(goal: &GoalSnapshot) -> acp::Plan {
    let active = goal.status == GoalStatus::Active;
    let entry = |text: &str, status| {
        acp::PlanEntry::new(escape_line(text), acp::PlanEntryPriority::Medium, status)
    };
    if goal.steps.is_empty() {
        let status = match goal.status {
            GoalStatus::Complete => acp::PlanEntryStatus::Completed,
            GoalStatus::Active => acp::PlanEntryStatus::InProgress,
            _ => acp::PlanEntryStatus::Pending,
        };
        return acp::Plan::new(vec![entry(&goal.objective, status)]);
    }
    let mut current = active;
    acp::Plan::new(
        goal.steps
            .iter()
            .map(|s| {
                let status = if s.met == Some(true) {
                    acp::PlanEntryStatus::Completed
                } else if current {
                    current = false;
                    acp::PlanEntryStatus::InProgress
                } else {
                    acp::PlanEntryStatus::Pending
                };
                entry(&s.text, status)
            })
            .collect(),
    )
}

/// The ACP kind of a Waymark tool.
pub(crate) fn kind_of(name: &str) -> acp::ToolKind {
    match name {
        "read_file" => acp::ToolKind::Read,
        "list_dir" | "glob" | "grep" | "tool_search" => acp::ToolKind::Search,
        "write" | "edit" | "multiedit" | "append" | "apply_patch" => acp::ToolKind::Edit,
        "bash" => acp::ToolKind::Execute,
        "enter_plan_mode" | "exit_plan_mode" => acp::ToolKind::SwitchMode,
        _ => acp::ToolKind::Other,
    }
}

/// The call in a line, escaped: a command's text (its first line, and how many follow), else
/// the tool and the file it names.
fn title(name: &str, arguments: &Value) -> String {
    if let Some(command) = arguments.get("command").and_then(Value::as_str) {
        let mut lines = command.lines();
        let first = escape_line(lines.next().unwrap_or(""));
        return match lines.count() {
            0 => first,
            n => format!("{first} (and {n} more lines)"),
        };
    }
    match path_of(arguments) {
        Some(p) => escape_line(&format!("{name} {p}")),
        None => escape_line(name),
    }
}

/// `text` as a fenced block the editor shows as it is: control characters spelled out, and a
/// fence longer than any run of backticks inside, so nothing in it can close the block.
pub(crate) fn fenced(lang: &str, text: &str) -> String {
    let text = escape_block(text);
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat((longest + 1).max(3));
    format!("{fence}{lang}\n{text}\n{fence}")
}

fn path_of(arguments: &Value) -> Option<String> {
    arguments
        .get("path")
        .and_then(Value::as_str)
        .map(str::to_string)
}

fn capped(text: &str) -> String {
    if text.len() <= TEXT_MAX {
        return text.to_string();
    }
    let mut end = TEXT_MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n… ({} bytes more)", &text[..end], text.len() - end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_shell_call_is_an_execute_call_titled_by_its_command() {
        let u = of(
            &EventKind::ToolCall {
                turn_id: 1,
                call_id: "c1".into(),
                name: "bash".into(),
                arguments: json!({"command": "cargo test\n--all"}),
                actor: Default::default(),
                subagent: None,
            },
            Path::new("/ws"),
        );
        let [acp::SessionUpdate::ToolCall(c)] = u.as_slice() else {
            panic!("{u:?}");
        };
        assert_eq!(c.title, "cargo test (and 1 more lines)");
        assert_eq!(c.kind, acp::ToolKind::Execute);
    }

    #[test]
    fn nothing_a_tool_prints_can_close_its_block_or_hide_as_a_control_character() {
        let hostile = "ok\n````\n[Allow](https://example.invalid)\u{202e}\u{1b}[2J";
        let block = fenced("", hostile);
        let fence = block.lines().next().unwrap();
        assert_eq!(fence, "`````");
        assert!(block.ends_with(fence));
        assert_eq!(block.matches(fence).count(), 2, "{block}");
        assert!(
            !block.contains('\u{202e}') && !block.contains('\u{1b}'),
            "{block}"
        );
    }

    #[test]
    fn a_file_call_is_located_at_its_absolute_path() {
        let u = of(
            &EventKind::ToolCall {
                turn_id: 1,
                call_id: "c1".into(),
                name: "write".into(),
                arguments: json!({"path": "src/a.rs", "content": ""}),
                actor: Default::default(),
                subagent: None,
            },
            Path::new("/ws"),
        );
        let [acp::SessionUpdate::ToolCall(c)] = u.as_slice() else {
            panic!("{u:?}");
        };
        assert_eq!(c.locations[0].path, Path::new("/ws/src/a.rs"));
        assert_eq!(c.kind, acp::ToolKind::Edit);
    }

    #[test]
    fn a_plan_goals_steps_are_its_plan_and_the_first_unmet_one_is_in_progress() {
        let mut goal: GoalSnapshot = serde_json::from_value(json!({
            "goal_id": "g", "objective": "ship", "criteria": null, "status": "active",
            "reason": "created", "actor": "user", "revision": 1,
            "budget": {"tokens": {"limit": null, "used": 0, "remaining": null, "reached": false}, "main_turns": {"limit": null, "used": 0, "remaining": null, "reached": false},
                       "active_seconds": {"limit": null, "used": 0, "remaining": null, "reached": false}}, "over_budget": false, "question": null,
            "usage_limit": null,
            "steps": [{"text": "parse", "met": true}, {"text": "check", "met": false},
                      {"text": "ship", "met": null}],
            "wait": null, "checks": [], "weakened": []
        }))
        .unwrap();
        let statuses = |p: acp::Plan| {
            p.entries
                .iter()
                .map(|e| e.status.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            statuses(goal_plan(&goal)),
            [
                acp::PlanEntryStatus::Completed,
                acp::PlanEntryStatus::InProgress,
                acp::PlanEntryStatus::Pending
            ]
        );
        goal.steps.clear();
        goal.status = GoalStatus::Complete;
        assert_eq!(
            statuses(goal_plan(&goal)),
            [acp::PlanEntryStatus::Completed]
        );
    }

    /// Every text that reaches the editor's view, as a block or a message.
    fn texts(u: &[acp::SessionUpdate]) -> Vec<String> {
        u.iter()
            .flat_map(|u| match u {
                acp::SessionUpdate::AgentMessageChunk(c) => match &c.content {
                    acp::ContentBlock::Text(t) => vec![t.text.clone()],
                    _ => vec![],
                },
                acp::SessionUpdate::ToolCallUpdate(c) => c
                    .fields
                    .content
                    .iter()
                    .flatten()
                    .filter_map(|c| match c {
                        acp::ToolCallContent::Content(c) => match &c.content {
                            acp::ContentBlock::Text(t) => Some(t.text.clone()),
                            _ => None,
                        },
                        _ => None,
                    })
                    .collect(),
                _ => vec![],
            })
            .collect()
    }

    #[test]
    fn live_output_replies_and_command_answers_reach_the_editor_escaped() {
        let hostile = "ok \u{1b}]52;c;cHduZWQ=\u{7}\u{202e}";
        let ws = Path::new("/ws");
        let all = [
            of(
                &EventKind::ToolOutput {
                    turn_id: 1,
                    call_id: "c".into(),
                    text: hostile.into(),
                },
                ws,
            ),
            of(
                &EventKind::CommandOutput {
                    command: "help".into(),
                    text: hostile.into(),
                },
                ws,
            ),
            of(
                &EventKind::AssistantDelta {
                    turn_id: 1,
                    text: hostile.into(),
                },
                ws,
            ),
        ];
        for u in all {
            let t = texts(&u);
            assert_eq!(t.len(), 1, "{u:?}");
            assert!(
                !t[0].contains('\u{1b}') && !t[0].contains('\u{7}') && !t[0].contains('\u{202e}'),
                "{t:?}"
            );
        }
    }

    #[test]
    fn a_long_result_is_cut_on_a_character_boundary() {
        let text = "é".repeat(TEXT_MAX);
        let cut = capped(&text);
        assert!(cut.len() < text.len() && cut.contains("bytes more"));
    }
}
