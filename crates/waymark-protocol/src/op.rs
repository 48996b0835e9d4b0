//! What a front end asks the runtime to do.

use crate::{MessageSource, PermissionMode};
use serde::{Deserialize, Serialize};

/// Where a message is inserted into the queue.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum Position {
    Head,
    #[default]
    Tail,
}

/// An intent attached to a submitted message, applied in the admission transaction.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "kebab-case")]
pub enum Intent {
    PlanEntry,
    PlanExit,
}

/// A comment on lines `start..=end` (1-based) of the plan revision under review.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct LineComment {
    pub start: u32,
    pub end: u32,
    pub text: String,
}

impl LineComment {
    /// Reads `12-14:text` or `12:text` (the CLI's `--comment`).
    pub fn parse(s: &str) -> Result<LineComment, AnswerParseError> {
        let bad = || AnswerParseError::BadComment(s.to_string());
        let (lines, text) = s.split_once(':').ok_or_else(bad)?;
        let (a, b) = lines.split_once('-').unwrap_or((lines, lines));
        let start: u32 = a.trim().parse().map_err(|_| bad())?;
        let end: u32 = b.trim().parse().map_err(|_| bad())?;
        let text = text.trim();
        // One pair of surrounding quotes is the shell's, not the comment's.
        let text = text
            .strip_prefix('"')
            .and_then(|t| t.strip_suffix('"'))
            .unwrap_or(text)
            .trim();
        if start == 0 || end < start || text.is_empty() {
            return Err(bad());
        }
        Ok(LineComment {
            start,
            end,
            text: text.to_string(),
        })
    }
}

/// An answer to a questionnaire. Which answers a questionnaire accepts depends on its kind.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum Answer {
    AllowOnce,
    /// A shell command: this exact command line; a file tool: that tool outside `.git/`.
    AllowForSession,
    /// A shell command: every command starting with the prefix the question offered.
    AllowPrefix,
    Deny {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    Approve {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        option: Option<u32>,
        /// Implement the plan as a goal (PM-27), with this budget; `None` implements it as
        /// an ordinary task. An empty change takes the plan's own `## Budget`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        as_goal: Option<crate::BudgetChange>,
        /// The plan is implemented in this other session (made in a worktree of the project,
        /// G-34, which adopted it with [`Op::AdoptPlan`]), not here: this session only
        /// records the approval and leaves plan mode.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        handed_to: Option<String>,
    },
    Defer,
    Revise {
        /// General feedback (may be empty when there are comments).
        #[serde(default)]
        text: String,
        /// Comments on lines of the revision under review (PM-25).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        comments: Vec<LineComment>,
    },
    Reject,
    Withdraw,
    /// A server's form, filled in: field name to value.
    Accept {
        #[serde(default)]
        content: serde_json::Value,
    },
    /// A server's form, refused.
    Decline,
    /// A server's form, dismissed without a decision.
    Cancel,
}

impl Answer {
    /// The answer's name as typed on the command line.
    pub fn name(&self) -> &'static str {
        match self {
            Answer::AllowOnce => "allow_once",
            Answer::AllowForSession => "allow_for_session",
            Answer::AllowPrefix => "allow_prefix",
            Answer::Deny { .. } => "deny",
            Answer::Approve { .. } => "approve",
            Answer::Defer => "defer",
            Answer::Revise { .. } => "revise",
            Answer::Reject => "reject",
            Answer::Withdraw => "withdraw",
            Answer::Accept { .. } => "accept",
            Answer::Decline => "decline",
            Answer::Cancel => "cancel",
        }
    }

    /// Builds an answer from its name and the optional text / option number.
    pub fn parse(
        name: &str,
        text: Option<String>,
        option: Option<u32>,
    ) -> Result<Self, AnswerParseError> {
        Ok(match name.replace('-', "_").as_str() {
            "allow_once" => Answer::AllowOnce,
            "allow_for_session" => Answer::AllowForSession,
            "allow_prefix" => Answer::AllowPrefix,
            "deny" => Answer::Deny { message: text },
            "approve" => Answer::Approve {
                option,
                as_goal: None,
                handed_to: None,
            },
            "defer" | "not_now" => Answer::Defer,
            "revise" => match text {
                Some(t) if !t.trim().is_empty() => Answer::Revise {
                    text: t,
                    comments: Vec::new(),
                },
                _ => return Err(AnswerParseError::MissingFeedback),
            },
            "reject" => Answer::Reject,
            "withdraw" => Answer::Withdraw,
            "accept" => Answer::Accept {
                content: serde_json::Value::Object(Default::default()),
            },
            "decline" => Answer::Decline,
            "cancel" => Answer::Cancel,
            other => return Err(AnswerParseError::Unknown(other.to_string())),
        })
    }
}

/// An answer that could not be built from its name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerParseError {
    #[error("`revise` needs feedback: pass --text \"…\" or --comment 12-14:\"…\"")]
    MissingFeedback,
    #[error("`{0}` is not a line comment: write 12-14:\"text\" or 12:\"text\" (lines from 1)")]
    BadComment(String),
    #[error(
        "unknown answer `{0}`; answers are allow_once, allow_for_session, allow_prefix, deny, approve, defer, revise, reject, withdraw, accept, decline, cancel"
    )]
    Unknown(String),
}

/// What a front end asks of a session.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Op {
    /// Admit a message (slash commands are parsed here) and run the queue.
    Submit {
        text: String,
        #[serde(default = "default_source")]
        source: MessageSource,
        #[serde(default)]
        position: Position,
        #[serde(default)]
        idempotency_key: Option<String>,
        #[serde(default)]
        intent: Option<Intent>,
    },
    /// Answer a pending questionnaire, then run the queue.
    Answer {
        questionnaire_id: String,
        answer: Answer,
    },
    /// The user's own edit of the plan file in plan mode: written to the file and frozen as
    /// a revision authored by the user; a pending review then approves this version.
    EditPlan { text: String },
    /// "Review again" after "Not now" (PM-17): the review the user put off opens again on
    /// the same frozen revision, with no model turn. Refused unless the session is in plan
    /// mode with that review put off, nothing else waiting for an answer and no turn open.
    ReviewPlanAgain,
    /// Copy an approved plan revision into the workspace (PM-28): by default the newest
    /// approved plan, to `docs/plans/<date>-<slug>.md`. The write is confined to the
    /// workspace and follows the permission mode: in `ask` it needs `confirm`.
    ExportPlan {
        #[serde(default)]
        plan_id: Option<String>,
        #[serde(default)]
        version: Option<u32>,
        #[serde(default)]
        path: Option<String>,
        #[serde(default)]
        confirm: bool,
    },
    /// Take on a plan another session's user is approving: its frozen revision under review
    /// in `from_session`'s pending questionnaire `questionnaire_id` becomes this session's
    /// implementation message (with the option chosen), and with `as_goal` its goal (PM-27).
    /// The other session then records the approval as handed over (`Answer::Approve`'s
    /// `handed_to`). Used for "Approve & pursue as goal" in a new worktree (G-36).
    AdoptPlan {
        from_session: String,
        questionnaire_id: String,
        #[serde(default)]
        option: Option<u32>,
        #[serde(default)]
        as_goal: Option<crate::BudgetChange>,
    },
    /// Change the session's goal (the same as the `/goal` command).
    Goal { op: crate::GoalOp },
    /// Replace the session's settings (the desktop's Settings page): checks made from now
    /// on (beta flags, goal limits, turn limits) use the new values.
    Configure { config: Box<crate::config::Config> },
    /// The user switches the session's permission mode: tool calls decided from now on
    /// (the running turn's next ones included) follow it.
    SetPermissionMode { mode: PermissionMode },
    /// The user switches the session's model (a spec, as `--model` takes): used from the next
    /// model call on. A spec that names no usable model is refused and changes nothing.
    SetModel { model: String },
    /// Put the workspace's files and the conversation (or one of them, `scope`) back as
    /// they were at checkpoint `checkpoint`. Refused while a turn runs or waits on a
    /// question. A checkpoint of the state before is taken first, so the rewind can be
    /// undone by rewinding to it; an active goal is paused, its spent budget kept.
    Rewind {
        checkpoint: String,
        #[serde(default)]
        scope: crate::checkpoint::RewindScope,
    },
    /// Stop the running turn: the running tool is killed, partial output kept.
    Stop,
    /// Run queued or parked work, if any.
    Resume,
    /// Release the session and end its actor.
    Shutdown,
}

fn default_source() -> MessageSource {
    MessageSource::User
}
