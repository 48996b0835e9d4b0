//! What the runtime reports. Every event names its session and carries the per-session
//! sequence number of the log. Events marked transient (`assistant.delta`, `model.retry`)
//! are streamed but not written to the log: they repeat the `seq` of the last logged event.

use crate::{
    Answer, BudgetReport, CallActor, CompactReason, ErrorInfo, GoalActor, GoalReason, GoalSnapshot,
    GoalStatus, InteractionMode, MessageSource, PermissionMode, Position, QuestionnaireKind,
    ToolStatus, TurnEndReason, Usage,
};
use serde::{Deserialize, Serialize};

/// One event of a session.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Event {
    pub session_id: String,
    pub seq: u64,
    /// Unix time in milliseconds.
    pub ts: i64,
    /// Streamed only, never logged: it carries the `seq` of the last logged event.
    #[serde(default)]
    pub transient: bool,
    #[serde(flatten)]
    pub kind: EventKind,
}

/// A tool call as listed in an assistant message.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ToolCallSummary {
    pub call_id: String,
    pub name: String,
}

/// The payload of an event; `type` on the wire.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "type")]
pub enum EventKind {
    /// A process attached to the session (created or reopened).
    #[serde(rename = "session.started")]
    SessionStarted {
        workspace: String,
        session_dir: String,
        model: String,
        permission_mode: PermissionMode,
        interaction_mode: InteractionMode,
        resumed: bool,
        /// The model's context window in tokens (0 in logs from before it was recorded).
        #[serde(default)]
        context_window: u64,
    },
    /// The user switched the session's model or permission mode; what it runs with now.
    #[serde(rename = "session.configured")]
    SessionConfigured {
        model: String,
        permission_mode: PermissionMode,
        /// The model's context window in tokens.
        context_window: u64,
    },
    /// A message entered the queue.
    #[serde(rename = "message.admitted")]
    MessageAdmitted {
        message_id: i64,
        source: MessageSource,
        text: String,
        position: Position,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        idempotency_key: Option<String>,
        /// The images attached, as the model is sent them.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<crate::ToolImage>,
    },
    /// A queued message was dropped before it ran (for example a goal continuation that
    /// became stale).
    #[serde(rename = "message.dropped")]
    MessageDropped { message_id: i64, reason: String },
    /// Output of a slash command handled at admission (never sent to the model).
    #[serde(rename = "command.output")]
    CommandOutput { command: String, text: String },
    #[serde(rename = "turn.started")]
    TurnStarted {
        turn_id: i64,
        message_id: i64,
        source: MessageSource,
    },
    /// A piece of streamed assistant text (transient).
    #[serde(rename = "assistant.delta")]
    AssistantDelta { turn_id: i64, text: String },
    /// The complete assistant reply of one model call.
    #[serde(rename = "assistant.message")]
    AssistantMessage {
        turn_id: i64,
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reasoning: Option<String>,
        tool_calls: Vec<ToolCallSummary>,
        usage: Usage,
    },
    /// A model call failed before streaming and will be retried (transient).
    #[serde(rename = "model.retry")]
    ModelRetry {
        attempt: u32,
        wait_ms: u64,
        error: ErrorInfo,
    },
    #[serde(rename = "tool.call")]
    ToolCall {
        turn_id: i64,
        call_id: String,
        name: String,
        arguments: serde_json::Value,
        /// Who made the call: the session's agent (omitted) or the goal's verifier.
        #[serde(default, skip_serializing_if = "CallActor::is_main")]
        actor: CallActor,
        /// A subagent's call: the `task` call it works for and its agent, as the fields
        /// `parent_call_id` and `agent` (boxed, and only here, not on the result, so every
        /// event stays small for the broadcast buffer).
        #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
        subagent: Option<Box<SubagentCall>>,
    },
    #[serde(rename = "tool.result")]
    ToolResult {
        turn_id: i64,
        call_id: String,
        name: String,
        status: ToolStatus,
        content: String,
        #[serde(default, skip_serializing_if = "CallActor::is_main")]
        actor: CallActor,
        /// What a file tool that succeeded changed, each file with its diff (escaped for
        /// display; made before the call ran, the way the tool applies it). For the
        /// transcript and the changes view; the model never sees it.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        changes: Vec<crate::FileChange>,
        /// Images the tool returned, for the transcript.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<crate::ToolImage>,
    },
    /// A running call's progress, as its tool reports it (an MCP server's progress
    /// notifications): `progress` of `total` when the total is known. Transient.
    #[serde(rename = "tool.progress")]
    ToolProgress {
        turn_id: i64,
        call_id: String,
        progress: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        total: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// A running command's newest output lines, as they arrive (a few times a second,
    /// redacted). Transient: the call's result carries all of it.
    #[serde(rename = "tool.output")]
    ToolOutput {
        turn_id: i64,
        call_id: String,
        text: String,
    },
    /// Old tool outputs were replaced by a short note so the context fits the model.
    #[serde(rename = "context.elided")]
    ContextElided {
        turn_id: i64,
        items: u64,
        bytes: u64,
    },
    /// Older history was summarized to fit the model's context window: the model sees the
    /// summary (with the files touched and the pinned messages) instead. `turn_id`: the turn
    /// it happened in (none for `/compact` between turns).
    #[serde(rename = "context.compacted")]
    ContextCompacted {
        turn_id: Option<i64>,
        reason: CompactReason,
        before_tokens: u64,
        after_tokens: u64,
        summary: String,
    },
    #[serde(rename = "turn.finished")]
    TurnFinished {
        turn_id: i64,
        reason: TurnEndReason,
        usage: Usage,
        steps: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<Box<ErrorInfo>>,
        /// True when the turn was found interrupted on reopen after a crash.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        recovered: bool,
        /// What the turn's model calls cost in USD; absent when a call's model had no price
        /// (the cost is unknown, never $0).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
    },
    #[serde(rename = "questionnaire.opened")]
    QuestionnaireOpened {
        id: String,
        question: Box<crate::Question>,
    },
    /// A pending questionnaire now asks about something else (the user edited the plan under
    /// review: the review is of their revision).
    #[serde(rename = "questionnaire.updated")]
    QuestionnaireUpdated {
        id: String,
        question: Box<crate::Question>,
    },
    #[serde(rename = "questionnaire.answered")]
    QuestionnaireAnswered {
        id: String,
        kind: QuestionnaireKind,
        answer: Answer,
    },
    /// Nothing is queued or running.
    #[serde(rename = "session.idle")]
    SessionIdle {},
    /// The session waits on a questionnaire.
    #[serde(rename = "session.waiting")]
    SessionWaiting {
        questionnaire_id: String,
        kind: QuestionnaireKind,
    },
    /// The session's interaction mode changed (plan mode entered or left).
    #[serde(rename = "plan.mode_changed")]
    PlanModeChanged {
        mode: InteractionMode,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        plan_id: Option<String>,
        reason: crate::PlanModeReason,
    },
    /// A frozen revision of the plan file; the content is in the blob `key`, never here.
    #[serde(rename = "plan.revision")]
    PlanRevision {
        plan_id: String,
        version: u32,
        key: String,
        sha256: String,
        bytes: u64,
        author: crate::RevisionAuthor,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        truncated: bool,
    },
    /// The user commented on lines of a plan revision (with a revise answer).
    #[serde(rename = "plan.commented")]
    PlanCommented {
        plan_id: String,
        version: u32,
        comments: Vec<crate::LineComment>,
    },
    /// An approved plan revision was copied into the workspace.
    #[serde(rename = "plan.exported")]
    PlanExported {
        plan_id: String,
        version: u32,
        path: String,
    },
    /// A goal was set (G-4).
    #[serde(rename = "goal.create")]
    GoalCreate { goal: Box<GoalSnapshot> },
    /// A goal changed: `kind` is `lifecycle` (pause, resume, budgets, edits) or `completion`
    /// (a settlement outcome).
    #[serde(rename = "goal.update")]
    GoalUpdate {
        goal_id: String,
        kind: crate::GoalUpdateKind,
        status: GoalStatus,
        reason: GoalReason,
        actor: GoalActor,
        usage: Box<BudgetReport>,
        /// With `usage_limited`: when the limit resets and whether the goal resumes then.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage_limit: Option<Box<crate::UsageLimit>>,
        /// With `checks_weakened`: what weakened the checks since the goal started, in plain
        /// words (G-51).
        #[serde(default, skip_serializing_if = "<[String]>::is_empty")]
        findings: Box<[String]>,
    },
    /// The goal was removed from the session.
    #[serde(rename = "goal.clear")]
    GoalClear { goal_id: String, actor: GoalActor },
    /// The goal queue after a change (queued, removed, moved, edited or started), in line
    /// order (G-46).
    #[serde(rename = "goal.queue")]
    GoalQueue { queue: Vec<crate::QueuedGoal> },
    /// The runtime ran one of the goal's checks (G-49): its exit, how long it took, how many
    /// tests passed and failed where the runner says, and the end of its output (redacted,
    /// capped). `exit_code` is `None` when it was killed at its time limit or did not run.
    #[serde(rename = "goal.check")]
    GoalCheck {
        goal_id: String,
        command: String,
        exit_code: Option<i32>,
        duration_ms: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        passed: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        failed: Option<u32>,
        /// Why it did not run or was stopped, in plain words.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
        tail: String,
        /// The run at the goal's start that later runs are compared with (G-51).
        #[serde(default)]
        baseline: bool,
    },
    /// The full goal snapshot after any change (transient: front ends redraw from it).
    #[serde(rename = "goal.updated")]
    GoalUpdated {
        #[serde(flatten)]
        goal: Box<GoalSnapshot>,
    },
    /// The session was rewound to checkpoint `checkpoint_id` (files, conversation or
    /// both). `undo_checkpoint_id` holds the state before: rewinding to it undoes this.
    /// `rewound_turns` lists every turn now out of the model's history (the transcript
    /// shows them folded); `files` what the rewind changed in the workspace.
    #[serde(rename = "session.rewound")]
    SessionRewound {
        checkpoint_id: String,
        undo_checkpoint_id: String,
        scope: crate::checkpoint::RewindScope,
        rewound_turns: Vec<i64>,
        files: Vec<crate::checkpoint::PathChange>,
        /// Where things in the way of the restore were moved (nothing is deleted).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        moved_aside: Option<String>,
    },
    /// A checkpoint could not be taken (the turn goes on without it). Said once until
    /// checkpoints work again.
    #[serde(rename = "checkpoint.failed")]
    CheckpointFailed {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        turn_id: Option<i64>,
        message: String,
    },
    /// A session-level error that is not part of a turn (transient).
    #[serde(rename = "session.error")]
    SessionError { error: ErrorInfo },
    /// Something the user should know that changes what the agent can do, in words (an MCP
    /// server still starting when the first request went out).
    #[serde(rename = "session.notice")]
    SessionNotice {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        turn_id: Option<i64>,
        text: String,
    },
    /// A hook ran on a session event: which command, from where, for how long, how it
    /// ended, and what it decided.
    #[serde(rename = "hook.ran")]
    HookRan {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        turn_id: Option<i64>,
        /// The event (`PreToolUse`, `GoalStatusChanged`).
        event: String,
        /// The command line, escaped for display.
        command: String,
        /// Where it is set: `settings`, `~/.claude/settings.json`.
        source: String,
        duration_ms: u64,
        /// `None` when it was killed (timed out, stopped) or could not start.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        /// What it decided or what went wrong (`blocked`, `denied`, `asked`, `added
        /// context`, `timed out`, `failed: …`); `None` when it let things proceed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outcome: Option<String>,
    },
}

/// Who a subagent's call works for.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SubagentCall {
    /// The `task` call the subagent runs for.
    pub parent_call_id: String,
    /// The agent it runs as (`explore`).
    pub agent: String,
}

impl EventKind {
    /// The wire name (`type`) of this event.
    pub fn type_name(&self) -> &'static str {
        match self {
            EventKind::SessionStarted { .. } => "session.started",
            EventKind::SessionConfigured { .. } => "session.configured",
            EventKind::MessageAdmitted { .. } => "message.admitted",
            EventKind::MessageDropped { .. } => "message.dropped",
            EventKind::CommandOutput { .. } => "command.output",
            EventKind::TurnStarted { .. } => "turn.started",
            EventKind::AssistantDelta { .. } => "assistant.delta",
            EventKind::AssistantMessage { .. } => "assistant.message",
            EventKind::ModelRetry { .. } => "model.retry",
            EventKind::ToolCall { .. } => "tool.call",
            EventKind::ToolResult { .. } => "tool.result",
            EventKind::ToolProgress { .. } => "tool.progress",
            EventKind::ToolOutput { .. } => "tool.output",
            EventKind::ContextElided { .. } => "context.elided",
            EventKind::ContextCompacted { .. } => "context.compacted",
            EventKind::TurnFinished { .. } => "turn.finished",
            EventKind::QuestionnaireOpened { .. } => "questionnaire.opened",
            EventKind::QuestionnaireUpdated { .. } => "questionnaire.updated",
            EventKind::QuestionnaireAnswered { .. } => "questionnaire.answered",
            EventKind::SessionIdle {} => "session.idle",
            EventKind::SessionWaiting { .. } => "session.waiting",
            EventKind::SessionError { .. } => "session.error",
            EventKind::SessionRewound { .. } => "session.rewound",
            EventKind::CheckpointFailed { .. } => "checkpoint.failed",
            EventKind::SessionNotice { .. } => "session.notice",
            EventKind::HookRan { .. } => "hook.ran",
            EventKind::PlanModeChanged { .. } => "plan.mode_changed",
            EventKind::PlanRevision { .. } => "plan.revision",
            EventKind::PlanCommented { .. } => "plan.commented",
            EventKind::PlanExported { .. } => "plan.exported",
            EventKind::GoalCreate { .. } => "goal.create",
            EventKind::GoalUpdate { .. } => "goal.update",
            EventKind::GoalClear { .. } => "goal.clear",
            EventKind::GoalQueue { .. } => "goal.queue",
            EventKind::GoalCheck { .. } => "goal.check",
            EventKind::GoalUpdated { .. } => "goal.updated",
        }
    }

    /// Transient events are streamed to front ends but not written to the log.
    pub fn is_transient(&self) -> bool {
        match self {
            EventKind::AssistantDelta { .. }
            | EventKind::ModelRetry { .. }
            | EventKind::SessionError { .. }
            | EventKind::ToolProgress { .. }
            | EventKind::ToolOutput { .. }
            | EventKind::GoalUpdated { .. } => true,
            EventKind::SessionStarted { .. }
            | EventKind::SessionConfigured { .. }
            | EventKind::MessageAdmitted { .. }
            | EventKind::MessageDropped { .. }
            | EventKind::CommandOutput { .. }
            | EventKind::TurnStarted { .. }
            | EventKind::AssistantMessage { .. }
            | EventKind::ToolCall { .. }
            | EventKind::ToolResult { .. }
            | EventKind::ContextElided { .. }
            | EventKind::ContextCompacted { .. }
            | EventKind::TurnFinished { .. }
            | EventKind::QuestionnaireOpened { .. }
            | EventKind::QuestionnaireUpdated { .. }
            | EventKind::QuestionnaireAnswered { .. }
            | EventKind::SessionIdle {}
            | EventKind::SessionWaiting { .. }
            | EventKind::SessionRewound { .. }
            | EventKind::CheckpointFailed { .. }
            | EventKind::SessionNotice { .. }
            | EventKind::HookRan { .. }
            | EventKind::PlanModeChanged { .. }
            | EventKind::PlanRevision { .. }
            | EventKind::PlanCommented { .. }
            | EventKind::PlanExported { .. }
            | EventKind::GoalCreate { .. }
            | EventKind::GoalUpdate { .. }
            | EventKind::GoalClear { .. }
            | EventKind::GoalQueue { .. }
            | EventKind::GoalCheck { .. } => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn event_serializes_flat_with_type_field() {
        let ev = Event {
            session_id: "s1".into(),
            seq: 7,
            ts: 1000,
            transient: false,
            kind: EventKind::TurnFinished {
                turn_id: 3,
                reason: TurnEndReason::StepCapped,
                usage: Usage::default(),
                steps: 50,
                error: None,
                recovered: false,
                cost_usd: None,
            },
        };
        let v = serde_json::to_value(&ev).unwrap();
        assert_eq!(v["type"], "turn.finished");
        assert_eq!(v["seq"], 7);
        assert_eq!(v["reason"], "step_capped");
        assert!(v.get("recovered").is_none());
        let back: Event = serde_json::from_value(v).unwrap();
        assert_eq!(back, ev);
    }

    /// A subagent's call carries `parent_call_id` and `agent` as fields of its own, and
    /// reads back as it was written, with them or without.
    #[test]
    fn a_subagents_call_round_trips_with_its_parent() {
        for subagent in [
            None,
            Some(Box::new(SubagentCall {
                parent_call_id: "tc_1".into(),
                agent: "explore".into(),
            })),
        ] {
            let kind = EventKind::ToolCall {
                turn_id: 1,
                call_id: "ta_1".into(),
                name: "grep".into(),
                arguments: serde_json::json!({"pattern": "x"}),
                actor: CallActor::Subagent(1),
                subagent: subagent.clone(),
            };
            let json = serde_json::to_value(&kind).unwrap();
            assert_eq!(
                json.get("parent_call_id").is_some(),
                subagent.is_some(),
                "{json}"
            );
            let back: EventKind = serde_json::from_value(json).unwrap();
            assert_eq!(back, kind);
        }
    }

    #[test]
    fn events_stay_small_for_the_broadcast_buffer() {
        // Every slot of a session's event channel holds one; large payloads are boxed. The
        // largest is a tool result with its two lists (changes, images).
        assert!(
            std::mem::size_of::<Event>() <= 192,
            "{}",
            std::mem::size_of::<Event>()
        );
    }

    #[test]
    fn type_name_matches_serialized_tag() {
        let kinds = [
            EventKind::SessionIdle {},
            EventKind::AssistantDelta {
                turn_id: 1,
                text: "x".into(),
            },
            EventKind::CommandOutput {
                command: "help".into(),
                text: "t".into(),
            },
        ];
        for k in kinds {
            let v = serde_json::to_value(&k).unwrap();
            assert_eq!(v["type"], k.type_name());
        }
    }
}
