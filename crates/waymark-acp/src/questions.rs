//! Waymark's questions as the editor's `session/request_permission`: for each kind the editor
//! can show, the title, what it asks about and the options, each tied to the one answer it
//! gives. A permission question offers exactly Waymark's options (once; the grant Waymark
//! offers, as "always"; deny); plan entry, a proposed goal and a project's servers offer
//! approve or decline. An option the question did not offer answers nothing.

use crate::updates;
use agent_client_protocol::v1::schema as acp;
use waymark_protocol::display::escape_block;
use waymark_protocol::{Answer, PermissionQuestion, Question};

const ALLOW_ONCE: &str = "allow_once";
const ALLOW_ALWAYS: &str = "allow_always";
const REJECT_ONCE: &str = "reject_once";
const APPROVE: &str = "approve";
const DECLINE: &str = "decline";

/// A question as the editor asks it.
pub(crate) struct Asked {
    pub(crate) call: acp::ToolCallUpdate,
    options: Vec<(acp::PermissionOption, Answer)>,
}

impl Asked {
    pub(crate) fn options(&self) -> Vec<acp::PermissionOption> {
        self.options.iter().map(|(o, _)| o.clone()).collect()
    }

    /// The answer the option the editor chose gives, or the question's refusal for one it
    /// was not offered: such an answer allows nothing.
    pub(crate) fn answer_or_refusal(&self, option: &str) -> Answer {
        self.answer(option).unwrap_or_else(|| {
            self.options
                .last()
                .map(|(_, a)| a.clone())
                .unwrap_or(Answer::Reject)
        })
    }

    /// The answer the option the editor chose gives; `None` for one it was not offered.
    pub(crate) fn answer(&self, option: &str) -> Option<Answer> {
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

/// `q` as the editor asks it (its call id `id`: the permission's own call, else the
/// questionnaire), or `None` for a kind it cannot show yet.
pub(crate) fn asked(q: &Question, questionnaire_id: &str) -> Option<Asked> {
    let text = |id: &str, title: String, kind: acp::ToolKind, shown: Vec<String>| {
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
    };
    let yes_no = |yes: &str, no: &str| {
        vec![
            (
                option(APPROVE, yes, acp::PermissionOptionKind::AllowOnce),
                approve(),
            ),
            (
                option(DECLINE, no, acp::PermissionOptionKind::RejectOnce),
                Answer::Reject,
            ),
        ]
    };
    match q {
        Question::Permission(p) => Some(permission(p)),
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
            })
        }
        Question::ProjectServers(s) => {
            let shown = s
                .servers
                .iter()
                .map(|v| {
                    let mut line = format!("{}: {}", v.name, v.target);
                    for e in &v.env {
                        line.push_str(&format!("\n  env {e}"));
                    }
                    for h in &v.headers {
                        line.push_str(&format!("\n  header {h}"));
                    }
                    updates::fenced("", &line)
                })
                .collect();
            Some(Asked {
                call: text(
                    questionnaire_id,
                    format!("Start the MCP servers of {}?", s.path),
                    acp::ToolKind::Execute,
                    shown,
                ),
                options: yes_no("Start them", "Do not start them"),
            })
        }
        _ => None,
    }
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
        Answer::AllowOnce,
    )];
    if !q.git && q.grants.session.is_some() {
        let name = q
            .grants
            .session_text
            .clone()
            .unwrap_or_else(|| "Allow for this session".to_string());
        options.push((
            option(ALLOW_ALWAYS, name, acp::PermissionOptionKind::AllowAlways),
            Answer::AllowForSession,
        ));
    }
    options.push((
        option(REJECT_ONCE, "Deny", acp::PermissionOptionKind::RejectOnce),
        Answer::Deny { message: None },
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

    fn ids(q: &Question) -> Vec<String> {
        asked(q, "q1")
            .unwrap()
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
        assert_eq!(no_grant.answer(ALLOW_ALWAYS), None);
        assert_eq!(no_grant.answer("allow_everything"), None);
        // An approval's option is not a permission's.
        assert_eq!(no_grant.answer(APPROVE), None);
        let grant = asked(&question(Some("make"), false), "q1").unwrap();
        assert_eq!(grant.answer(ALLOW_ALWAYS), Some(Answer::AllowForSession));
    }

    #[test]
    fn plan_entry_asks_approve_or_decline() {
        let q = Question::PlanEntry(waymark_protocol::PlanEntryQuestion {
            reason: Some("the change is large".into()),
        });
        assert_eq!(ids(&q), [APPROVE, DECLINE]);
        assert_eq!(
            asked(&q, "q1").unwrap().answer(DECLINE),
            Some(Answer::Reject)
        );
        assert_eq!(asked(&q, "q1").unwrap().answer(ALLOW_ONCE), None);
    }
}
