//! Waymark's questions as the editor's `session/request_permission`: for each kind the editor
//! can show, the title, what it asks about and the options, each tied to the one answer it
//! gives. A permission question offers exactly Waymark's options (once; the grant Waymark
//! offers, as "always"; deny); plan entry, a proposed goal and a project's servers offer
//! approve or decline. A plan under review offers "Approve & implement" (one per approach the
//! plan offers), "Approve & pursue as goal", "Not now" and "Revise", whose feedback is the
//! next prompt. An option the question did not offer answers nothing.

use crate::updates;
use agent_client_protocol::v1::schema as acp;
use waymark_protocol::display::{escape_block, escape_line};
use waymark_protocol::{Answer, BudgetChange, PermissionQuestion, PlanApprovalQuestion, Question};

const ALLOW_ONCE: &str = "allow_once";
const ALLOW_ALWAYS: &str = "allow_always";
const REJECT_ONCE: &str = "reject_once";
const APPROVE: &str = "approve";
const DECLINE: &str = "decline";
const APPROVE_GOAL: &str = "approve_goal";
const DEFER: &str = "defer";
const REVISE: &str = "revise";

/// What an option the editor chose does.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Chosen {
    /// This answer goes to Waymark now.
    Answer(Answer),
    /// The plan goes back for revision with the feedback the user types as the next prompt.
    FeedbackNext,
}

/// A question as the editor asks it.
pub(crate) struct Asked {
    pub(crate) call: acp::ToolCallUpdate,
    options: Vec<(acp::PermissionOption, Chosen)>,
    /// What an option the question did not offer gives: the question's refusal.
    refusal: Answer,
}

impl Asked {
    pub(crate) fn options(&self) -> Vec<acp::PermissionOption> {
        self.options.iter().map(|(o, _)| o.clone()).collect()
    }

    /// What the option the editor chose does, or the question's refusal for one it was not
    /// offered: such an answer allows nothing.
    pub(crate) fn chosen_or_refusal(&self, option: &str) -> Chosen {
        self.chosen(option)
            .unwrap_or_else(|| Chosen::Answer(self.refusal.clone()))
    }

    /// What the option the editor chose does; `None` for one it was not offered.
    pub(crate) fn chosen(&self, option: &str) -> Option<Chosen> {
        self.options
            .iter()
            .find(|(o, _)| *o.option_id.0 == *option)
            .map(|(_, a)| a.clone())
    }
}

fn option(
    id: &str,
    name: impl Into<String>,
    kind: acp::PermissionOptionKind,
) -> acp::PermissionOption {
    acp::PermissionOption::new(id.to_string(), name.into(), kind)
}

fn approve() -> Answer {
    Answer::Approve {
        option: None,
        as_goal: None,
        handed_to: None,
    }
}

/// The text of a tool call the editor shows a question as.
fn shown_as(
    id: &str,
    title: String,
    kind: acp::ToolKind,
    shown: Vec<String>,
) -> acp::ToolCallUpdate {
    acp::ToolCallUpdate::new(
        id.to_string(),
        acp::ToolCallUpdateFields::new()
            .title(title)
            .kind(kind)
            .content(
                shown
                    .into_iter()
                    .map(acp::ToolCallContent::from)
                    .collect::<Vec<_>>(),
            ),
    )
}

/// `q` as the editor asks it (its call id `id`: the permission's own call, else the
/// questionnaire), or `None` for a kind it cannot show yet.
pub(crate) fn asked(q: &Question, questionnaire_id: &str) -> Option<Asked> {
    let text = shown_as;
    let yes_no = |yes: &str, no: &str| {
        vec![
            (
                option(APPROVE, yes, acp::PermissionOptionKind::AllowOnce),
                Chosen::Answer(approve()),
            ),
            (
                option(DECLINE, no, acp::PermissionOptionKind::RejectOnce),
                Chosen::Answer(Answer::Reject),
            ),
        ]
    };
    match q {
        Question::Permission(p) => Some(permission(p)),
        // Asked with the plan's text (`plan_review`), which only the caller can read.
        Question::PlanApproval(_) => None,
        Question::PlanEntry(p) => Some(Asked {
            call: text(
                questionnaire_id,
                "Plan first?".to_string(),
                acp::ToolKind::SwitchMode,
                vec![match &p.reason {
                    Some(r) => format!(
                        "The agent asks to plan before it changes anything: {}",
                        escape_block(r)
                    ),
                    None => "The agent asks to plan before it changes anything.".to_string(),
                }],
            ),
            options: yes_no("Plan first", "Go on without a plan"),
            refusal: Answer::Reject,
        }),
        Question::GoalApproval(g) => {
            let mut shown = vec![format!("Objective: {}", escape_block(&g.objective))];
            if let Some(c) = &g.criteria {
                shown.push(format!("Done when: {}", escape_block(c)));
            }
            let budget: Vec<String> = [
                g.token_budget.map(|t| format!("{t} tokens")),
                g.turn_budget.map(|t| format!("{t} turns")),
                g.time_budget_seconds.map(|s| format!("{s} s")),
            ]
            .into_iter()
            .flatten()
            .collect();
            if !budget.is_empty() {
                shown.push(format!("Budget: {}", budget.join(", ")));
            }
            Some(Asked {
                call: text(
                    questionnaire_id,
                    "The agent proposes a goal".to_string(),
                    acp::ToolKind::Other,
                    shown,
                ),
                options: yes_no("Start the goal", "Decline"),
                refusal: Answer::Reject,
            })
        }
        // A project's servers run commands from the repository: an editor set to allow
        // every tool call must not start them. The prompt ends saying where to answer.
        Question::ProjectServers(_) | Question::ProjectHooks(_) => None,
        _ => None,
    }
}

/// A plan under review: approve it to implement now (once per approach the plan offers, when
/// it offers some), approve it as a goal (on the plan's own budget), leave it for later, or
/// send it back with the feedback the next prompt gives. Anything else leaves it for later.
/// The review shows the plan itself, fenced, so nothing the model wrote before it can hide
/// or restyle what is approved.
pub(crate) fn plan_review(
    r: &PlanApprovalQuestion,
    markdown: &str,
    questionnaire_id: &str,
) -> Asked {
    let implement = |option: Option<u32>| {
        Chosen::Answer(Answer::Approve {
            option,
            as_goal: None,
            handed_to: None,
        })
    };
    let mut options = Vec::new();
    if r.options.is_empty() {
        options.push((
            option(
                APPROVE,
                "Approve & implement",
                acp::PermissionOptionKind::AllowOnce,
            ),
            implement(None),
        ));
    }
    for (n, label) in (1u32..).zip(&r.options) {
        options.push((
            option(
                &format!("{APPROVE}_{n}"),
                format!("Approve & implement option {n}: {}", escape_line(label)),
                acp::PermissionOptionKind::AllowOnce,
            ),
            implement(Some(n)),
        ));
    }
    let goal_name = match &r.budget {
        Some(b) => format!("Approve & pursue as goal ({})", escape_line(b)),
        None => "Approve & pursue as goal".to_string(),
    };
    options.push((
        option(
            APPROVE_GOAL,
            goal_name,
            acp::PermissionOptionKind::AllowOnce,
        ),
        Chosen::Answer(Answer::Approve {
            option: None,
            // An empty change takes the plan's own budget.
            as_goal: Some(BudgetChange::default()),
            handed_to: None,
        }),
    ));
    options.push((
        option(DEFER, "Not now", acp::PermissionOptionKind::RejectOnce),
        Chosen::Answer(Answer::Defer),
    ));
    options.push((
        option(REVISE, "Revise", acp::PermissionOptionKind::RejectOnce),
        Chosen::FeedbackNext,
    ));
    let mut shown = vec![
        format!("The plan is ready for review (revision v{}):", r.version),
        updates::fenced("markdown", markdown),
    ];
    if r.truncated {
        shown.push(format!(
            "The plan was cut at {} bytes: what is above is what would be approved.",
            r.bytes
        ));
    }
    if !r.checks.is_empty() {
        shown.push(format!(
            "As a goal it is complete only when these pass:\n{}",
            updates::fenced("sh", &r.checks.join("\n"))
        ));
    }
    Asked {
        call: shown_as(
            questionnaire_id,
            format!("Review the plan (v{})", r.version),
            acp::ToolKind::SwitchMode,
            shown,
        ),
        options,
        refusal: Answer::Defer,
    }
}

/// What the editor is shown before it is asked to review a plan: the plan itself as the
/// agent's message, and its steps as the editor's plan, none done yet.
pub(crate) fn plan_shown(r: &PlanApprovalQuestion, markdown: &str) -> Vec<acp::SessionUpdate> {
    let mut text = escape_block(markdown);
    if !text.ends_with('\n') {
        text.push('\n');
    }
    let mut shown = vec![acp::SessionUpdate::AgentMessageChunk(
        acp::ContentChunk::new(format!("\n\n{text}").into()),
    )];
    if !r.steps.is_empty() {
        shown.push(acp::SessionUpdate::Plan(acp::Plan::new(
            r.steps
                .iter()
                .map(|s| {
                    acp::PlanEntry::new(
                        escape_line(s),
                        acp::PlanEntryPriority::Medium,
                        acp::PlanEntryStatus::Pending,
                    )
                })
                .collect(),
        )));
    }
    shown
}

/// A permission question: exactly Waymark's options, "always" only where Waymark offers a
/// grant, as that grant; and what it asks about in full (the command line, each file's diff,
/// else the arguments; its texts are escaped for display already).
fn permission(q: &PermissionQuestion) -> Asked {
    let mut options = vec![(
        option(
            ALLOW_ONCE,
            "Allow once",
            acp::PermissionOptionKind::AllowOnce,
        ),
        Chosen::Answer(Answer::AllowOnce),
    )];
    if !q.git && q.grants.session.is_some() {
        let name = q
            .grants
            .session_text
            .clone()
            .unwrap_or_else(|| "Allow for this session".to_string());
        options.push((
            option(ALLOW_ALWAYS, name, acp::PermissionOptionKind::AllowAlways),
            Chosen::Answer(Answer::AllowForSession),
        ));
    }
    options.push((
        option(REJECT_ONCE, "Deny", acp::PermissionOptionKind::RejectOnce),
        Chosen::Answer(Answer::Deny { message: None }),
    ));
    let mut shown = Vec::new();
    if let Some(command) = &q.command {
        shown.push(acp::ToolCallContent::from(updates::fenced("sh", command)));
    }
    for f in &q.files {
        let diff = f.diff.as_deref().unwrap_or("(no diff could be made)");
        shown.push(acp::ToolCallContent::from(format!(
            "{} `{}`\n{}",
            f.op,
            f.path,
            updates::fenced("diff", diff)
        )));
    }
    if shown.is_empty() {
        let args = serde_json::to_string_pretty(&q.arguments).unwrap_or_default();
        shown.push(acp::ToolCallContent::from(updates::fenced(
            "json",
            &escape_block(&args),
        )));
    }
    Asked {
        call: acp::ToolCallUpdate::new(
            q.call_id.clone(),
            acp::ToolCallUpdateFields::new()
                .title(q.summary.clone())
                .kind(updates::kind_of(&q.tool))
                .content(shown)
                .raw_input(q.arguments.clone()),
        ),
        options,
        refusal: Answer::Deny { message: None },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn question(session: Option<&str>, git: bool) -> Question {
        Question::Permission(
            serde_json::from_value(serde_json::json!({
                "tool": "bash", "shell": true, "arguments": {"command": "make"},
                "summary": "Run make", "command": "make", "git": git,
                "grants": {"session": session, "session_text": "Allow `make` for this session"},
                "call_id": "c1"
            }))
            .unwrap(),
        )
    }

    fn asked_of(q: &Question) -> Asked {
        match q {
            Question::PlanApproval(r) => plan_review(r, "## Plan", "q1"),
            q => asked(q, "q1").unwrap(),
        }
    }

    fn ids(q: &Question) -> Vec<String> {
        asked_of(q)
            .options()
            .iter()
            .map(|o| o.option_id.0.to_string())
            .collect()
    }

    #[test]
    fn always_is_offered_only_as_the_grant_waymark_offers() {
        assert_eq!(
            ids(&question(Some("make"), false)),
            [ALLOW_ONCE, ALLOW_ALWAYS, REJECT_ONCE]
        );
        assert_eq!(ids(&question(None, false)), [ALLOW_ONCE, REJECT_ONCE]);
        // No grant covers a write into `.git` or an instructions file.
        assert_eq!(
            ids(&question(Some("make"), true)),
            [ALLOW_ONCE, REJECT_ONCE]
        );
    }

    #[test]
    fn an_option_not_offered_answers_nothing() {
        let no_grant = asked(&question(None, false), "q1").unwrap();
        assert_eq!(no_grant.chosen(ALLOW_ALWAYS), None);
        assert_eq!(no_grant.chosen("allow_everything"), None);
        // An approval's option is not a permission's.
        assert_eq!(no_grant.chosen(APPROVE), None);
        assert_eq!(
            no_grant.chosen_or_refusal(APPROVE),
            Chosen::Answer(Answer::Deny { message: None })
        );
        let grant = asked(&question(Some("make"), false), "q1").unwrap();
        assert_eq!(
            grant.chosen(ALLOW_ALWAYS),
            Some(Chosen::Answer(Answer::AllowForSession))
        );
    }

    #[test]
    fn plan_entry_asks_approve_or_decline() {
        let q = Question::PlanEntry(waymark_protocol::PlanEntryQuestion {
            reason: Some("the change is large".into()),
        });
        assert_eq!(ids(&q), [APPROVE, DECLINE]);
        assert_eq!(
            asked(&q, "q1").unwrap().chosen(DECLINE),
            Some(Chosen::Answer(Answer::Reject))
        );
        assert_eq!(asked(&q, "q1").unwrap().chosen(ALLOW_ONCE), None);
    }

    fn review(options: &[&str]) -> Question {
        Question::PlanApproval(
            serde_json::from_value(serde_json::json!({
                "plan_id": "p1", "version": 2, "key": "k", "sha256": "s", "bytes": 10,
                "truncated": false, "path": "plan.md",
                "options": options, "budget": "turns=5", "steps": ["one", "two"]
            }))
            .unwrap(),
        )
    }

    #[test]
    fn a_plan_review_offers_approve_goal_not_now_and_revise() {
        let q = review(&[]);
        assert_eq!(ids(&q), [APPROVE, APPROVE_GOAL, DEFER, REVISE]);
        let a = asked_of(&q);
        assert_eq!(a.chosen(REVISE), Some(Chosen::FeedbackNext));
        assert_eq!(a.chosen(DEFER), Some(Chosen::Answer(Answer::Defer)));
        assert!(matches!(
            a.chosen(APPROVE_GOAL),
            Some(Chosen::Answer(Answer::Approve { as_goal: Some(b), option: None, .. })) if b.is_empty()
        ));
        // A permission's option, or one not offered, leaves the plan for later.
        assert_eq!(
            a.chosen_or_refusal(ALLOW_ALWAYS),
            Chosen::Answer(Answer::Defer)
        );
        // A plan with approaches offers one approval each, numbered as Waymark numbers them.
        let q = review(&["Small", "Large"]);
        assert_eq!(
            ids(&q),
            ["approve_1", "approve_2", APPROVE_GOAL, DEFER, REVISE]
        );
        assert!(matches!(
            asked_of(&q).chosen("approve_2"),
            Some(Chosen::Answer(Answer::Approve {
                option: Some(2),
                as_goal: None,
                ..
            }))
        ));
        assert_eq!(asked_of(&q).chosen(APPROVE), None);
    }
}
