//! A user's answer to a question the runtime asked, and the line comments a plan review
//! carries.

use serde::{Deserialize, Serialize};

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
