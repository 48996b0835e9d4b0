//! What a front end asks the runtime to do.

use crate::{Answer, MessageSource, PermissionMode};
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

/// An image attached to a message, as a front end sends it. The runtime finds its type by
/// its content (PNG, JPEG, GIF or WebP), never by its name, and refuses anything else.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ImageInput {
    /// What errors call it: the file's name or "pasted image".
    pub name: String,
    /// The file's bytes, base64.
    pub data: String,
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
        /// Images attached to the message (at most [`crate::MAX_IMAGES`]).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ImageInput>,
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
