//! The `/goal` grammar (G-9): the command words, the checks and the worktree a goal may ask
//! for, and the op a `/goal …` message asks for. Budget values are read by
//! [`waymark_config::budget`].

use waymark_config::budget::{
    BudgetArgs, BudgetSyntaxError, MAX_CHECKS, change_of, check_command, split_args,
};
use waymark_protocol::GoalOp;

/// The words `/goal` reads as commands when they come first: an objective that starts with
/// one is written in quotes (`/goal "status page redesign"`).
pub const COMMAND_WORDS: &[&str] = &[
    "status", "pause", "resume", "clear", "cancel", "edit", "reply", "replace", "next", "wake",
    "draft",
];

/// The `/goal` grammar in a few lines, for `/help goal` and refusals.
pub const GRAMMAR: &str = "/goal                         show the goal and the queue (also /goal status)
/goal <objective> [budgets]   set a goal; budgets: tokens=50K turns=20 time=2h cost=$5
/goal <objective> check=\"cargo test\"   done only when the command exits 0 (repeatable)
/goal tokens=… turns=…        change the budgets (clear removes one: time=clear)
/goal pause | resume          pause the goal, or resume it
/goal clear                   drop the goal (also /goal cancel)
/goal edit <objective>        reword the objective
/goal reply <answer>          answer a goal that is blocked on you
/goal replace <objective>     drop the goal and set this one
/goal next <objective>        queue a goal to start when this one is done
/goal wake                    end the agent's wait now (it waits with its wait tool)
/goal draft <rough words>     draft an objective, criteria and a budget for you to edit
An objective that starts with one of these words goes in quotes: /goal \"pause the build\" tokens=50K";

/// Takes the `check="…"` (or `check=word`) settings out of `args`: the rest, and the
/// checks in order.
pub fn take_checks(args: &str) -> Result<(String, Vec<String>), BudgetSyntaxError> {
    let mut rest = String::new();
    let mut checks = Vec::new();
    let mut s = args;
    loop {
        // The next `check=` that starts a word.
        let at = s
            .match_indices("check=")
            .map(|(i, _)| i)
            .find(|&i| i == 0 || s[..i].ends_with(char::is_whitespace));
        let Some(i) = at else {
            rest.push_str(s);
            break;
        };
        rest.push_str(&s[..i]);
        let after = &s[i + "check=".len()..];
        let (command, tail) = if let Some(inner) = after.strip_prefix('"') {
            let Some((c, t)) = inner.split_once('"') else {
                return Err(BudgetSyntaxError::Grammar(
                    "a check's opening quote is never closed: write check=\"cargo test\"".into(),
                ));
            };
            (c, t)
        } else {
            let end = after.find(char::is_whitespace).unwrap_or(after.len());
            (&after[..end], &after[end..])
        };
        check_command(command)?;
        checks.push(command.trim().to_string());
        s = tail;
    }
    if checks.len() > MAX_CHECKS {
        return Err(BudgetSyntaxError::Grammar(format!(
            "a goal carries at most {MAX_CHECKS} checks (got {})",
            checks.len()
        )));
    }
    Ok((rest, checks))
}

/// A `/goal …` message that asks for its own git worktree (`/goal fix it worktree` or
/// `worktree=NAME`, G-34): the message without that word, and the name if one was given.
/// `None` for any other message. The front ends start such a goal in a new session.
pub fn take_worktree(text: &str) -> Option<(String, Option<String>)> {
    let t = text.trim_start();
    if !(t.starts_with("/goal ") || t == "/goal") {
        return None;
    }
    let mut name = None;
    let mut found = false;
    let mut kept = Vec::new();
    for w in t.split_whitespace() {
        if w == "worktree" && !found {
            found = true;
        } else if let Some(n) = w.strip_prefix("worktree=").filter(|_| !found) {
            found = true;
            name = Some(n.to_string());
        } else {
            kept.push(w);
        }
    }
    found.then(|| (kept.join(" "), name))
}

/// Parses the arguments of `/goal` into the op they ask for (G-9).
pub fn parse(args: &str) -> Result<GoalOp, BudgetSyntaxError> {
    let (args, checks) = take_checks(args)?;
    let op = parse_words(&args)?;
    match op {
        GoalOp::Set {
            objective,
            budget,
            replace,
            criteria,
            ..
        } => Ok(GoalOp::Set {
            objective,
            budget,
            replace,
            criteria,
            checks,
        }),
        _ if !checks.is_empty() => Err(BudgetSyntaxError::Grammar(
            "check= goes with a new goal: /goal <objective> check=\"cargo test\"".into(),
        )),
        op => Ok(op),
    }
}

/// [`parse`] without the checks.
fn parse_words(args: &str) -> Result<GoalOp, BudgetSyntaxError> {
    let (verb, rest) = match args.trim().split_once(char::is_whitespace) {
        Some((v, r)) => (v, r.trim()),
        None => (args.trim(), ""),
    };
    // A command word that takes nothing never has words after it: `/goal clear the cache`
    // is refused rather than clearing the goal or setting "clear the cache" as one.
    let alone = |op: GoalOp| {
        if rest.is_empty() {
            Ok(op)
        } else {
            Err(BudgetSyntaxError::Grammar(format!(
                "`/goal {verb}` takes nothing after it. To set a goal that starts with \"{verb}\", put the objective in quotes: /goal \"{verb} {rest}\""
            )))
        }
    };
    // One that takes text needs some, unquoted or in quotes.
    let text = |what: &str| -> Result<String, BudgetSyntaxError> {
        let (t, b) = split_args(rest)?;
        if b != BudgetArgs::default() {
            return Err(BudgetSyntaxError::Grammar(format!(
                "`/goal {verb}` takes {what}, not budget settings: change budgets with /goal tokens=… turns=… time=… cost=…"
            )));
        }
        if t.is_empty() {
            return Err(BudgetSyntaxError::Grammar(format!(
                "`/goal {verb}` needs {what}: /goal {verb} <{what}>"
            )));
        }
        Ok(t)
    };
    Ok(match verb {
        "" => GoalOp::Show,
        "status" => alone(GoalOp::Show)?,
        "pause" => alone(GoalOp::Pause)?,
        "wake" => alone(GoalOp::WakeNow)?,
        // Drafting is one model call the front end makes and shows for editing (G-48).
        "draft" => {
            return Err(BudgetSyntaxError::Grammar(
                "`/goal draft <rough words>` drafts a goal for you to edit: type it in the app's composer, or run `waymark goal draft --session … \"…\"`".into(),
            ));
        }
        "resume" => alone(GoalOp::Resume)?,
        "clear" | "cancel" => alone(GoalOp::Clear)?,
        "edit" => GoalOp::EditObjective {
            objective: text("the new objective")?,
        },
        "reply" => GoalOp::Reply {
            text: rest.to_string(),
        },
        "next" => {
            let (objective, b) = split_args(rest)?;
            if objective.is_empty() {
                return Err(BudgetSyntaxError::Grammar(
                    "`/goal next` needs an objective: /goal next <objective> [tokens=… turns=… time=… cost=…]".into(),
                ));
            }
            GoalOp::Queue {
                objective,
                budget: change_of(&b),
            }
        }
        "replace" => {
            let (objective, b) = split_args(rest)?;
            GoalOp::Set {
                objective,
                budget: change_of(&b),
                replace: true,
                criteria: None,
                checks: Vec::new(),
            }
        }
        _ => {
            let (objective, b) = split_args(args)?;
            if objective.is_empty() {
                GoalOp::EditBudget {
                    budget: change_of(&b),
                }
            } else {
                GoalOp::Set {
                    objective,
                    budget: change_of(&b),
                    replace: false,
                    criteria: None,
                    checks: Vec::new(),
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use waymark_config::budget::MAX_CHECK_CHARS;
    use waymark_protocol::{BudgetChange, Limit};

    #[test]
    fn checks_are_taken_whole_from_quotes_and_refused_where_they_do_not_belong() {
        let GoalOp::Set {
            objective,
            checks,
            budget,
            ..
        } = parse(r#"fix the parser check="cargo test -p parser" check=make tokens=5K"#).unwrap()
        else {
            panic!("not a new goal")
        };
        assert_eq!(objective, "fix the parser");
        assert_eq!(checks, ["cargo test -p parser", "make"]);
        assert_eq!(budget.tokens, Some(Limit::To(5_000)));
        // `check=` inside a word is a word.
        let GoalOp::Set {
            objective, checks, ..
        } = parse("precheck=fine words").unwrap()
        else {
            panic!()
        };
        assert_eq!(
            (objective.as_str(), checks.len()),
            ("precheck=fine words", 0)
        );
        for bad in [
            r#"fix it check="cargo test"#,
            "fix it check=\"\"",
            "pause check=make",
        ] {
            assert!(
                matches!(parse(bad), Err(BudgetSyntaxError::Grammar(_))),
                "{bad}"
            );
        }
        let many = (0..11)
            .map(|i| format!("check=c{i}"))
            .collect::<Vec<_>>()
            .join(" ");
        assert!(parse(&format!("fix it {many}")).is_err());
        assert!(check_command(&"x".repeat(MAX_CHECK_CHARS + 1)).is_err());
        assert!(check_command("a\nb").is_err());
    }

    #[test]
    fn g_40_command_words_never_become_objectives() {
        assert_eq!(parse("status").unwrap(), GoalOp::Show);
        assert_eq!(parse("  status ").unwrap(), GoalOp::Show);
        assert_eq!(parse("cancel").unwrap(), GoalOp::Clear);
        assert_eq!(parse("clear").unwrap(), GoalOp::Clear);
        assert_eq!(parse("pause").unwrap(), GoalOp::Pause);
        assert_eq!(parse("resume").unwrap(), GoalOp::Resume);
        // A command word with words after it is refused, saying how to quote.
        for bad in [
            "status page redesign",
            "clear the cache",
            "pause the build",
            "cancel it",
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(
                e.contains("takes nothing after it") && e.contains("in quotes"),
                "{bad}: {e}"
            );
        }
        // In quotes, any words are the objective; budgets may follow.
        assert_eq!(
            parse("\"status page redesign\" tokens=50K").unwrap(),
            GoalOp::Set {
                objective: "status page redesign".into(),
                budget: change_of(&BudgetArgs {
                    tokens: Some(Some(50_000)),
                    ..Default::default()
                }),
                replace: false,
                criteria: None,
                checks: Vec::new(),
            }
        );
        assert_eq!(
            parse("replace \"clear the cache\"").unwrap(),
            GoalOp::Set {
                objective: "clear the cache".into(),
                budget: BudgetChange::default(),
                replace: true,
                criteria: None,
                checks: Vec::new(),
            }
        );
        assert_eq!(
            parse("edit \"pause less\"").unwrap(),
            GoalOp::EditObjective {
                objective: "pause less".into()
            }
        );
        let e = parse("\"unclosed tokens=5K").unwrap_err().to_string();
        assert!(e.contains("never closed"), "{e}");
        let e = parse("\"fix it\" now please").unwrap_err().to_string();
        assert!(e.contains("only budget settings"), "{e}");
        // Commands that need text say so.
        for bad in ["edit", "next", "edit tokens=5K"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        // Budgets alone change the budgets; a plain objective is still a goal.
        assert!(matches!(
            parse("tokens=5K").unwrap(),
            GoalOp::EditBudget { .. }
        ));
        assert!(matches!(
            parse("statuses of the builds").unwrap(),
            GoalOp::Set { objective, .. } if objective == "statuses of the builds"
        ));
    }

    #[test]
    fn g_34_a_goal_may_ask_for_its_own_worktree() {
        assert_eq!(
            take_worktree("/goal fix the build worktree cost=$5"),
            Some(("/goal fix the build cost=$5".into(), None))
        );
        assert_eq!(
            take_worktree("/goal worktree=fix-1 fix it"),
            Some(("/goal fix it".into(), Some("fix-1".into())))
        );
        assert_eq!(take_worktree("/goal fix the worktrees"), None);
        assert_eq!(take_worktree("please use a worktree"), None);
    }
}
