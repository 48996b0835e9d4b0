//! Questionnaires: what the runtime asks the user. Each kind has its own typed payload
//! ([`Question`]) and its own set of answers ([`Question::accepts`]); the wire [`Answer`] is
//! the union front ends send.

use crate::{Answer, QuestionnaireKind};
use serde::{Deserialize, Serialize};

/// What a questionnaire asks, by kind. On the wire: `{"kind": …, "payload": {…}}`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "kind", content = "payload", rename_all = "snake_case")]
pub enum Question {
    /// May the agent make this tool call?
    Permission(PermissionQuestion),
    /// The agent asks to plan first (EnterPlanMode).
    PlanEntry(PlanEntryQuestion),
    /// A frozen plan revision waits for review (ExitPlanMode or a user edit).
    PlanApproval(PlanApprovalQuestion),
    /// The agent proposes a goal (create_goal).
    GoalApproval(GoalApprovalQuestion),
    /// A tool server asks the user to fill in a form during one of its calls (MCP
    /// elicitation).
    Elicitation(ElicitationQuestion),
    /// A project's `.mcp.json` asks to start its servers.
    ProjectServers(ProjectServersQuestion),
    /// A project's settings files set hooks: commands that would run on this machine.
    ProjectHooks(ProjectHooksQuestion),
}

/// The hooks a project's settings files set (`.waymark/settings.json`,
/// `.claude/settings.json` and their `.local.json`), each command in full. Texts are escaped
/// for display.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ProjectHooksQuestion {
    /// The files read, relative to the project.
    pub files: Vec<String>,
    /// The scripts the answer covers too (the hook folders' files, and those the commands
    /// name inside the project): any change to them asks again.
    #[serde(default)]
    pub scripts: Vec<String>,
    /// SHA-256 over the files and their bytes: the answer covers exactly this content.
    pub sha256: String,
    pub hooks: Vec<ProjectHook>,
}

/// One hook of a project's settings.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ProjectHook {
    /// The file that sets it, relative to the project.
    pub file: String,
    /// The event it runs on (`PreToolUse`).
    pub event: String,
    /// Its matcher (`*` for every tool).
    pub matcher: String,
    /// The whole command line.
    pub command: String,
}

/// The servers a project's `.mcp.json` would start, each as it would be started. Texts are
/// escaped for display.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ProjectServersQuestion {
    /// The file.
    pub path: String,
    /// SHA-256 of its bytes: the answer covers exactly this content.
    pub sha256: String,
    pub servers: Vec<ProjectServer>,
}

/// One server of a project's `.mcp.json`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ProjectServer {
    pub name: String,
    /// The whole command line, or the URL (`${VAR}` unexpanded).
    pub target: String,
    /// Its variables as the file writes them (`NAME=value`, `${VAR}` unexpanded).
    #[serde(default)]
    pub env: Vec<String>,
    /// Its HTTP headers as the file writes them (`Name: value`).
    #[serde(default)]
    pub headers: Vec<String>,
    /// The folder it starts in, when the file names one (else the project's).
    #[serde(default)]
    pub cwd: Option<String>,
    /// Arguments that read as paths relative to the folder it starts in (`.`, `./x`,
    /// `--root=../x`) while the file names no folder: the server then starts in `/`, so
    /// such a path means a place under the filesystem root, not under the project.
    #[serde(default)]
    pub relative_args: Vec<String>,
}

/// A form a tool server sends during a call. Texts are escaped for display; the server's
/// words are its own, never Waymark's.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ElicitationQuestion {
    /// The server that asks.
    pub server: String,
    /// The tool whose call it asks during (its name as the model sees it).
    pub tool: String,
    /// The call it asks during.
    pub call_id: String,
    /// What the server says it wants.
    pub message: String,
    pub fields: Vec<crate::form::FormField>,
}

/// A file a write, edit or patch would change.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct FileChange {
    /// The path as the model gave it (escaped for display).
    pub path: String,
    /// Where it resolves, when it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved: Option<String>,
    /// `create`, `replace`, `edit`, `delete`, … (the tool's own word when none fits).
    pub op: String,
    /// The unified diff, when it could be made.
    #[serde(default)]
    pub diff: Option<String>,
    /// Why there is no diff, or what was cut.
    #[serde(default)]
    pub note: Option<String>,
}

/// The grants a permission question offers besides "allow once" and "deny"; `None` where
/// an answer is not offered.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct GrantOffer {
    /// `allow_for_session`: the exact command line (shell) or `""` (the whole file tool).
    #[serde(default)]
    pub session: Option<String>,
    /// What that grant covers, in words.
    #[serde(default)]
    pub session_text: Option<String>,
    /// `allow_prefix`: the command prefix.
    #[serde(default)]
    pub prefix: Option<String>,
    #[serde(default)]
    pub prefix_text: Option<String>,
}

/// A tool call waiting for the user's permission. Texts are escaped for display.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct PermissionQuestion {
    pub tool: String,
    /// A shell command (`command` is set) rather than a file tool (`files`).
    pub shell: bool,
    /// The scope a grant from this question belongs to (asked in plan mode: `plan`); the
    /// grant ends with the scope, and is not given once the scope has ended. Questions
    /// stored before scopes said `plan_mode: true|false` instead, which reads as the same.
    #[serde(
        default,
        alias = "plan_mode",
        deserialize_with = "scope_or_legacy_flag",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "specta", specta(type = Option<String>))]
    pub scope: Option<String>,
    /// The call's arguments as the model sent them (a tool's own schema).
    pub arguments: serde_json::Value,
    /// One line saying what the call does.
    pub summary: String,
    /// The whole command line of a shell call.
    #[serde(default)]
    pub command: Option<String>,
    /// The files a file tool would change, with diffs.
    #[serde(default)]
    pub files: Vec<FileChange>,
    /// The call writes inside `.git/` or to an instructions file (`AGENTS.md`,
    /// `CLAUDE.md`): no grant covers it.
    #[serde(default)]
    pub git: bool,
    #[serde(default)]
    pub grants: GrantOffer,
    /// The call this question is about (set when the question is opened).
    #[serde(default)]
    pub call_id: String,
    /// SHA-256 of the tool name and arguments: the answer covers exactly this call.
    #[serde(default)]
    pub call_sha256: String,
}

/// A question's scope, or the flag older questions carried in its place (`true`: asked in
/// plan mode, whose scope is named after the interaction mode).
fn scope_or_legacy_flag<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        Scope(Option<String>),
        Flag(bool),
    }
    Ok(match Either::deserialize(d)? {
        Either::Scope(s) => s,
        Either::Flag(true) => Some(crate::InteractionMode::Plan.as_str().to_string()),
        Either::Flag(false) => None,
    })
}

/// The agent asks to plan before changing anything.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct PlanEntryQuestion {
    #[serde(default)]
    pub reason: Option<String>,
}

/// A plan revision under review.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct PlanApprovalQuestion {
    pub plan_id: String,
    pub version: u32,
    /// Blob key of the frozen snapshot approving implements.
    pub key: String,
    pub sha256: String,
    pub bytes: u64,
    /// The snapshot was cut at the size limit.
    pub truncated: bool,
    /// The live plan file.
    pub path: String,
    /// Approval options the plan offers (`approve --option N`, 1-based).
    #[serde(default)]
    pub options: Vec<String>,
    /// The plan's `## Budget` section in the `/goal` budget syntax (`tokens=50K turns=20
    /// time=2h`), the default budget when it is approved as a goal.
    #[serde(default)]
    pub budget: Option<String>,
    /// The plan's steps (its `## Steps` list), which a goal's verifier checks one by one.
    #[serde(default)]
    pub steps: Vec<String>,
    /// The plan's checks (the commands in its `## Checks` code block): a goal it is approved
    /// as is complete only when they pass (G-49).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<String>,
}

/// A goal the agent proposes.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct GoalApprovalQuestion {
    pub objective: String,
    #[serde(default)]
    pub criteria: Option<String>,
    #[serde(default)]
    pub token_budget: Option<u64>,
    #[serde(default)]
    pub turn_budget: Option<u64>,
    #[serde(default)]
    pub time_budget_seconds: Option<u64>,
}

/// An answer to a permission question.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PermissionAnswer {
    AllowOnce,
    AllowForSession,
    AllowPrefix,
    Deny { message: Option<String> },
}

/// An answer to a yes/no question (plan entry, goal approval).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Approval {
    Approve,
    Reject,
}

/// An answer to a plan review.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlanReview {
    Approve {
        option: Option<u32>,
        as_goal: Option<crate::BudgetChange>,
        /// Implemented in that other session, not here.
        handed_to: Option<String>,
    },
    Defer,
    Revise {
        text: String,
        comments: Vec<crate::LineComment>,
    },
    Reject,
    Withdraw,
}

/// An answer to a server's form: what goes back to the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FormReply {
    /// The checked values.
    Accept(serde_json::Map<String, serde_json::Value>),
    Decline,
    Cancel,
}

/// An answer checked against the question it answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TypedAnswer {
    Permission(PermissionAnswer),
    PlanEntry(Approval),
    PlanApproval(PlanReview),
    GoalApproval(Approval),
    Elicitation(FormReply),
    ProjectServers(Approval),
    ProjectHooks(Approval),
}

/// An answer the question does not take; names what it does take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{answer}` is not an answer to a {kind} questionnaire; it takes: {allowed}")]
pub struct WrongAnswer {
    pub answer: String,
    pub kind: String,
    pub allowed: String,
}

impl Question {
    pub fn kind(&self) -> QuestionnaireKind {
        match self {
            Question::Permission(_) => QuestionnaireKind::Permission,
            Question::PlanEntry(_) => QuestionnaireKind::PlanEntry,
            Question::PlanApproval(_) => QuestionnaireKind::PlanApproval,
            Question::GoalApproval(_) => QuestionnaireKind::GoalApproval,
            Question::Elicitation(_) => QuestionnaireKind::Elicitation,
            Question::ProjectServers(_) => QuestionnaireKind::ProjectServers,
            Question::ProjectHooks(_) => QuestionnaireKind::ProjectHooks,
        }
    }

    /// The answers this question takes (a permission question: what its grants offer).
    pub fn answers(&self) -> Vec<&'static str> {
        match self {
            Question::Permission(p) => {
                let mut a = vec!["allow_once"];
                if p.grants.session.is_some() {
                    a.push("allow_for_session");
                }
                if p.grants.prefix.is_some() {
                    a.push("allow_prefix");
                }
                a.push("deny");
                a
            }
            Question::PlanEntry(_)
            | Question::GoalApproval(_)
            | Question::ProjectServers(_)
            | Question::ProjectHooks(_) => vec!["approve", "reject"],
            Question::PlanApproval(_) => vec!["approve", "defer", "revise", "reject", "withdraw"],
            Question::Elicitation(_) => vec!["accept", "decline", "cancel"],
        }
    }

    /// Checks `answer` against this question: the typed answer, or what it takes instead.
    /// A form's values are checked field by field ([`crate::form::check_answer`]).
    pub fn accepts(&self, answer: &Answer) -> Result<TypedAnswer, WrongAnswer> {
        if let (Question::Elicitation(q), Answer::Accept { content }) = (self, answer) {
            return crate::form::check_answer(&q.fields, content)
                .map(|m| TypedAnswer::Elicitation(FormReply::Accept(m)))
                .map_err(|why| WrongAnswer {
                    answer: format!("accept ({why})"),
                    kind: self.kind().as_str().to_string(),
                    allowed: "values that fit the form".into(),
                });
        }
        let wrong = || WrongAnswer {
            answer: answer.name().to_string(),
            kind: self.kind().as_str().to_string(),
            allowed: self.answers().join(", "),
        };
        if !self.answers().contains(&answer.name()) {
            return Err(wrong());
        }
        let approval = |a: &Answer| match a {
            // Only a plan review can be approved as a goal.
            Answer::Approve {
                as_goal: Some(_), ..
            }
            | Answer::Approve {
                handed_to: Some(_), ..
            } => None,
            Answer::Approve { .. } => Some(Approval::Approve),
            Answer::Reject => Some(Approval::Reject),
            _ => None,
        };
        let typed = match self {
            Question::Permission(_) => match answer {
                Answer::AllowOnce => Some(PermissionAnswer::AllowOnce),
                Answer::AllowForSession => Some(PermissionAnswer::AllowForSession),
                Answer::AllowPrefix => Some(PermissionAnswer::AllowPrefix),
                Answer::Deny { message } => Some(PermissionAnswer::Deny {
                    message: message.clone(),
                }),
                _ => None,
            }
            .map(TypedAnswer::Permission),
            Question::PlanEntry(_) => approval(answer).map(TypedAnswer::PlanEntry),
            Question::GoalApproval(_) => approval(answer).map(TypedAnswer::GoalApproval),
            Question::ProjectServers(_) => approval(answer).map(TypedAnswer::ProjectServers),
            Question::ProjectHooks(_) => approval(answer).map(TypedAnswer::ProjectHooks),
            Question::PlanApproval(_) => match answer {
                Answer::Approve {
                    option,
                    as_goal,
                    handed_to,
                } => Some(PlanReview::Approve {
                    option: *option,
                    as_goal: *as_goal,
                    handed_to: handed_to.clone(),
                }),
                Answer::Defer => Some(PlanReview::Defer),
                Answer::Revise { text, comments } => Some(PlanReview::Revise {
                    text: text.clone(),
                    comments: comments.clone(),
                }),
                Answer::Reject => Some(PlanReview::Reject),
                Answer::Withdraw => Some(PlanReview::Withdraw),
                _ => None,
            }
            .map(TypedAnswer::PlanApproval),
            Question::Elicitation(_) => match answer {
                Answer::Decline => Some(FormReply::Decline),
                Answer::Cancel => Some(FormReply::Cancel),
                _ => None,
            }
            .map(TypedAnswer::Elicitation),
        };
        typed.ok_or_else(wrong)
    }
}

/// Where a questionnaire stands.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum QuestionnaireStatus {
    Pending,
    Answered,
    Withdrawn,
}

impl QuestionnaireStatus {
    /// The serde name (as in JSON and the database).
    pub fn as_str(self) -> &'static str {
        crate::wire::name(&self)
    }
    /// The variant whose serde name is `s`.
    pub fn parse(s: &str) -> Option<Self> {
        crate::wire::parse(s)
    }
}

#[cfg(test)]
mod tests {

    /// A question stored before scopes reads with the scope its old flag meant, and is
    /// written the new way.
    #[test]
    fn a_stored_plan_mode_flag_reads_as_the_plan_scope() {
        let base =
            serde_json::json!({"tool": "bash", "shell": true, "arguments": {}, "summary": "run"});
        let with = |k: &str, v: serde_json::Value| {
            let mut q = base.clone();
            q[k] = v;
            serde_json::from_value::<PermissionQuestion>(q).unwrap()
        };
        assert_eq!(
            with("plan_mode", true.into()).scope.as_deref(),
            Some("plan")
        );
        assert_eq!(with("plan_mode", false.into()).scope, None);
        assert_eq!(with("scope", "x".into()).scope.as_deref(), Some("x"));
        let q = with("plan_mode", true.into());
        let v = serde_json::to_value(&q).unwrap();
        assert_eq!(
            (v.get("plan_mode"), v["scope"].as_str()),
            (None, Some("plan"))
        );
        assert_eq!(
            serde_json::from_value::<PermissionQuestion>(base)
                .unwrap()
                .scope,
            None
        );
    }

    use super::*;

    fn permission(session: bool, prefix: bool) -> Question {
        Question::Permission(PermissionQuestion {
            tool: "bash".into(),
            shell: true,
            scope: None,
            arguments: serde_json::json!({"command": "ls"}),
            summary: "run `ls`".into(),
            command: Some("ls".into()),
            files: vec![],
            git: false,
            grants: GrantOffer {
                session: session.then(|| "ls".into()),
                session_text: None,
                prefix: prefix.then(|| "ls".into()),
                prefix_text: None,
            },
            call_id: "tc_1_0_0".into(),
            call_sha256: "x".into(),
        })
    }

    #[test]
    fn each_kind_takes_only_its_own_answers() {
        let p = permission(true, false);
        assert_eq!(
            p.accepts(&Answer::AllowForSession),
            Ok(TypedAnswer::Permission(PermissionAnswer::AllowForSession))
        );
        // A grant the question did not offer is refused, naming what it takes.
        let e = p.accepts(&Answer::AllowPrefix).unwrap_err();
        assert_eq!(e.allowed, "allow_once, allow_for_session, deny");
        assert!(
            p.accepts(&Answer::Approve {
                option: None,
                as_goal: None,
                handed_to: None,
            })
            .is_err()
        );
        let entry = Question::PlanEntry(PlanEntryQuestion { reason: None });
        assert_eq!(
            entry.accepts(&Answer::Reject),
            Ok(TypedAnswer::PlanEntry(Approval::Reject))
        );
        assert!(entry.accepts(&Answer::Defer).is_err());
        assert!(entry.accepts(&Answer::AllowOnce).is_err());
    }

    #[test]
    fn the_wire_shape_is_kind_and_payload() {
        let q = Question::PlanEntry(PlanEntryQuestion {
            reason: Some("big".into()),
        });
        let v = serde_json::to_value(&q).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"kind": "plan_entry", "payload": {"reason": "big"}})
        );
        assert_eq!(serde_json::from_value::<Question>(v).unwrap(), q);
        // A payload of the wrong shape for its kind is an error, not a default.
        let bad = serde_json::json!({"kind": "plan_approval", "payload": {"reason": "x"}});
        assert!(serde_json::from_value::<Question>(bad).is_err());
    }
}
