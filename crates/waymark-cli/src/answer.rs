//! Answers typed on the command line: the answer's name with `--text`, `--option`,
//! `--comment`s, `--as-goal [--budget]`, and a form's `--field name=value`s.

use std::process::ExitCode;
use waymark_protocol::{Answer, Op};
use waymark_runtime::Runtime;

/// An answer from the command line: its name, `--text`, `--option`, `--comment`s and
/// `--as-goal [--budget]`, each checked against what the answer takes.
pub(crate) fn build_answer(
    name: &str,
    text: Option<String>,
    option: Option<u32>,
    comments: &[String],
    as_goal: bool,
    budget: Option<String>,
) -> anyhow::Result<Answer> {
    let comments = comments
        .iter()
        .map(|c| waymark_protocol::LineComment::parse(c))
        .collect::<Result<Vec<_>, _>>()?;
    let is = |n: &str| name.replace('-', "_") == n;
    if !comments.is_empty() && !is("revise") {
        anyhow::bail!("--comment goes with `revise`");
    }
    if as_goal && !is("approve") {
        anyhow::bail!("--as-goal goes with `approve`");
    }
    let mut answer = if is("revise") && !comments.is_empty() {
        Answer::Revise {
            text: text.unwrap_or_default(),
            comments: Vec::new(),
        }
    } else {
        Answer::parse(name, text, option)?
    };
    match &mut answer {
        Answer::Revise { comments: c, .. } => *c = comments,
        Answer::Approve { as_goal: goal, .. } if as_goal => {
            *goal = Some(match budget {
                None => waymark_protocol::BudgetChange::default(),
                Some(b) => match waymark_runtime::goal::parse_command(&b)? {
                    waymark_protocol::GoalOp::EditBudget { budget } => budget,
                    _ => anyhow::bail!(
                        "--budget `{b}` is not a budget: write tokens=50K turns=20 time=2h"
                    ),
                },
            });
        }
        _ => {}
    }
    Ok(answer)
}

/// `name=value` pairs as a form's answer (each value as text; the form reads it as its
/// field's type).
pub(crate) fn form_values(fields: &[String]) -> anyhow::Result<serde_json::Value> {
    let mut out = serde_json::Map::new();
    for f in fields {
        let Some((k, v)) = f.split_once('=') else {
            anyhow::bail!(
                "--field `{}` is not name=value",
                waymark_protocol::display::clip(f)
            );
        };
        if out
            .insert(
                k.trim().to_string(),
                serde_json::Value::String(v.to_string()),
            )
            .is_some()
        {
            anyhow::bail!("--field `{}` is given twice", k.trim());
        }
    }
    Ok(serde_json::Value::Object(out))
}

/// `answer … approve --worktree [NAME]` (G-36): the plan is implemented by a new session in a
/// new worktree of the project, which then runs (unless `no_run`); the plan session records
/// the approval.
pub(crate) async fn approve_in_worktree(
    runtime: &Runtime,
    (session, questionnaire): (&str, &str),
    answer: Answer,
    name: &str,
    no_run: bool,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let Answer::Approve {
        option, as_goal, ..
    } = answer
    else {
        anyhow::bail!("--worktree goes with `approve`");
    };
    let plan = crate::follow::open_held(runtime, session)?;
    let name = Some(name.trim()).filter(|n| !n.is_empty());
    let made = runtime
        .approve_in_worktree(&plan, questionnaire, option, as_goal, name)
        .await;
    plan.shutdown().await?;
    let made = made?;
    if !json {
        crate::term::outln!("{}", crate::worktree::made_line(runtime, made.id())?);
        crate::term::outln!(
            "● the plan of session {session} is implemented in session {}",
            made.id()
        );
    }
    if no_run {
        made.shutdown().await?;
        return Ok(ExitCode::SUCCESS);
    }
    crate::follow::drive(
        runtime,
        made,
        Some(Op::Resume),
        json,
        crate::follow::DEFAULT_WAIT_LIMIT,
    )
    .await
}
