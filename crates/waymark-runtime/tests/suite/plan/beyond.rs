//! Review beyond approve/reject (PM-25 … PM-28): line comments that reach the model and are
//! marked addressed or unchanged by the next revision, the plan history with outcomes,
//! approving a plan as a goal with the plan's budget and per-step verdicts, and exporting an
//! approved revision into the workspace under the permission mode.

use super::*;
use waymark_protocol::{BudgetChange, CommentState, GoalStatus, LineComment, PlanStatus};

const PLAN_V1: &str = "## Summary\nAdd a retry to the uploader.\n\n## Steps\n1. Wrap the upload call in a retry loop\n2. Add a test for the flaky network\n3. Update the docs\n\n## Budget\nbudget=40K turns=6 time=1h\n";
/// v2 changes step 1, keeps step 2 word for word (two lines lower), drops the docs step.
const PLAN_V2: &str = "## Summary\nAdd a retry to the uploader.\n\nRetries back off exponentially.\n\n## Steps\n1. Wrap the upload call in a retry loop with exponential backoff\n2. Add a test for the flaky network\n\n## Budget\nbudget=40K turns=6 time=1h\n";

/// A comment's first line, its state, and where its passage is now.
type Placed = (u32, CommentState, Option<(u32, u32)>);

fn comment(start: u32, end: u32, text: &str) -> LineComment {
    LineComment {
        start,
        end,
        text: text.into(),
    }
}

/// A session whose model keeps submitting `PLAN_V1`, its review pending: the harness, the
/// session and the questionnaire.
async fn v1_under_review() -> (Harness, SessionHandle, String) {
    let h = Harness::new(Config::default());
    let s = h.session(
        json!({"responses": [write_and_exit(PLAN_V1)], "when_exhausted": "repeat_last"}),
        PermissionMode::AutoEdit,
    );
    let q = waiting_on(&run(&s, plan_entry("plan")).await);
    (h, s, q)
}

/// Approve the plan as a goal with `budget` (empty: the plan's own).
fn as_goal(budget: BudgetChange) -> Answer {
    Answer::Approve {
        option: None,
        as_goal: Some(budget),
        handed_to: None,
    }
}

/// A session in plan mode whose script writes `PLAN_V1`, then after the revise `PLAN_V2`,
/// then `rest`.
async fn reviewing(mode: PermissionMode, rest: Vec<Value>) -> (Harness, SessionHandle, String) {
    let h = Harness::new(Config::default());
    let mut responses = vec![write_and_exit(PLAN_V1), write_and_exit(PLAN_V2)];
    responses.extend(rest);
    let s = h.session(json!({ "responses": responses }), mode);
    let ev = run(&s, plan_entry("plan the retry")).await;
    (h, s, waiting_on(&ev))
}

#[tokio::test]
async fn pm_25_comments_reach_the_model_in_one_message_and_the_next_revision_marks_them() {
    let (h, s, q) = reviewing(PermissionMode::AutoEdit, vec![]).await;
    // The payload the review shows carries the plan's steps and budget.
    let asked = questionnaire(&h, &s, &q);
    assert_eq!(asked.payload["steps"].as_array().unwrap().len(), 3);
    assert_eq!(asked.payload["budget"], "budget=40K turns=6 time=1h");
    let ev = run(
        &s,
        answer(
            &q,
            Answer::Revise {
                text: "Keep it small.".into(),
                comments: vec![
                    comment(5, 5, "Say how it backs off.\nExponential, please."),
                    comment(6, 6, "Which network failure?"),
                ],
            },
        ),
    )
    .await;
    // Logged, with the lines each comment is on.
    let logged = ev
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::PlanCommented {
                version, comments, ..
            } => Some((*version, comments.len())),
            _ => None,
        })
        .expect("plan.commented");
    assert_eq!(logged, (1, 2));
    // One message, as the model receives it.
    let feedback = messages(&h, &s)
        .into_iter()
        .find(|m| m.text.starts_with("The user reviewed revision v1"))
        .expect("the feedback message")
        .text;
    insta::assert_snapshot!("plan_feedback_with_comments", feedback);
    // The model wrote v2: step 1 changed (addressed), step 2 moved but did not (unchanged).
    let view = h.runtime.plan_view(s.id()).unwrap();
    let states: Vec<Placed> = view
        .comments
        .iter()
        .map(|c| (c.start, c.state, c.now_at))
        .collect();
    assert_eq!(
        states,
        [
            (5, CommentState::Addressed, None),
            (6, CommentState::Unchanged, Some((8, 8)))
        ]
    );
    // Kept across a restart.
    let id = s.id().to_string();
    s.shutdown().await.unwrap();
    let again = h.reopen(|_| {});
    assert_eq!(again.plan_view(&id).unwrap().comments.len(), 2);
}

/// Hostile answers: comments outside the revision, empty ones, or a revise with nothing in
/// it are refused with the reason, and nothing is queued.
#[tokio::test]
async fn pm_25_comments_that_do_not_fit_the_revision_are_refused() {
    let (h, s, q) = reviewing(PermissionMode::AutoEdit, vec![]).await;
    for (bad, why) in [
        (
            Answer::Revise {
                text: String::new(),
                comments: vec![comment(3, 400, "x")],
            },
            "past the end",
        ),
        (
            Answer::Revise {
                text: String::new(),
                comments: vec![comment(2, 2, "   ")],
            },
            "empty",
        ),
        (
            Answer::Revise {
                text: " ".into(),
                comments: vec![],
            },
            "needs feedback",
        ),
    ] {
        let e = s.submit(answer(&q, bad)).await.unwrap_err();
        assert!(e.to_string().contains(why), "{e}");
    }
    assert!(h.runtime.plan_view(s.id()).unwrap().comments.is_empty());
    assert_eq!(
        mode(&h, &s),
        InteractionMode::Plan,
        "still waiting for the review"
    );
    s.shutdown().await.unwrap();
}

/// Each entry into plan mode is a plan of its own, listed with how it ended.
#[tokio::test]
async fn pm_26_every_plan_is_kept_with_its_outcome() {
    let h = Harness::new(Config::default());
    let s = h.session(
        json!({"responses": [write_and_exit(PLAN_V1), write_and_exit(PLAN_V2), {"text": "done"}]}),
        PermissionMode::AutoEdit,
    );
    let q = waiting_on(&run(&s, plan_entry("first")).await);
    run(&s, answer(&q, Answer::Reject)).await;
    let q = waiting_on(&run(&s, plan_entry("second")).await);
    run(&s, answer(&q, approve())).await;
    let plans = h.runtime.plans(s.id()).unwrap();
    let summary: Vec<(PlanStatus, u32, bool)> = plans
        .iter()
        .map(|p| (p.status, p.revisions, p.current))
        .collect();
    assert_eq!(
        summary,
        [
            (PlanStatus::Rejected, 1, false),
            (PlanStatus::Approved, 1, true)
        ]
    );
    assert_eq!(
        plans[0].title.as_deref(),
        Some("Add a retry to the uploader")
    );
    assert!(plans.iter().all(|p| p.ended_at.is_some()));
    // An earlier plan stays readable.
    let old = h
        .runtime
        .plan_revision(s.id(), &plans[0].plan_id, 1)
        .unwrap();
    assert!(old.markdown.contains("Update the docs") && old.html.contains("<h2"));
    s.shutdown().await.unwrap();
}

/// Approving as a goal: the objective cites the frozen revision, the budget comes from the
/// plan's `## Budget`, and the reviewer's per-step verdicts are kept (steps met n/m).
#[tokio::test]
async fn pm_27_approve_as_a_goal_with_the_plans_budget_and_steps_checked() {
    let claim = |msg: &str| json!({"text": "claiming", "tool_calls": [{"name": "update_goal", "arguments": {"mode": "status", "status": "complete", "message": msg}}]});
    let h = Harness::new(Config::default());
    let s = h.session(
        json!({
            "responses": [write_and_exit(PLAN_V1), {"text": "Step one is in."}, claim("step 1 done"), claim("all done")],
            "verifier": [
                {"text": "STEP 1: MET\nSTEP 2: NOT MET\nSTEP 3: NOT MET\n- no test yet\nVERDICT: FAIL"},
                {"text": "STEP 1: MET\nSTEP 2: MET\nSTEP 3: MET\nVERDICT: PASS"}
            ]
        }),
        PermissionMode::AutoEdit,
    );
    let q = waiting_on(&run(&s, plan_entry("plan the retry")).await);
    let ev = run(&s, answer(&q, as_goal(BudgetChange::default()))).await;
    let g = h.runtime.goal(s.id()).unwrap().unwrap();
    // Called by the plan's summary line; which revision it implements is in its criteria.
    assert_eq!(g.objective, "Add a retry to the uploader");
    let criteria = g.criteria.as_deref().unwrap_or_default();
    assert!(
        criteria.contains("plan plan-") && criteria.contains("revision v1 (sha256 "),
        "{criteria}"
    );
    assert_eq!(g.budget.tokens.limit, Some(40_000));
    assert_eq!(g.budget.main_turns.limit, Some(6));
    assert_eq!(g.budget.active_seconds.limit, Some(3600));
    assert_eq!(g.status, GoalStatus::Complete, "{g:?}");
    let met: Vec<Option<bool>> = g.steps.iter().map(|s| s.met).collect();
    assert_eq!(met, [Some(true), Some(true), Some(true)]);
    // On the way the first check found one step of three met: the gauge moved 1/3 → 3/3.
    let progress: Vec<usize> = ev
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::GoalUpdated { goal } => {
                Some(goal.steps.iter().filter(|s| s.met == Some(true)).count())
            }
            _ => None,
        })
        .collect();
    assert!(
        progress.contains(&1) && progress.last() == Some(&3),
        "{progress:?}"
    );
    assert_eq!(implementation_messages(&h, &s), 1);
    s.shutdown().await.unwrap();
}

/// The user's budget wins over the plan's, and a goal already running is not replaced.
#[tokio::test]
async fn pm_27_the_users_budget_wins_and_a_running_goal_is_not_replaced() {
    let (h, s, q) = v1_under_review().await;
    let mine = BudgetChange {
        turns: Some(waymark_protocol::Limit::To(2)),
        ..BudgetChange::default()
    };
    s.submit(answer(&q, as_goal(mine))).await.unwrap();
    let g = h.runtime.goal(s.id()).unwrap().unwrap();
    assert_eq!(
        (g.budget.main_turns.limit, g.budget.tokens.limit),
        (Some(2), None)
    );
    s.shutdown().await.unwrap();

    let h = Harness::new(Config::default());
    let s = h.held_session(
        json!({"responses": [write_and_exit(PLAN_V1)]}),
        PermissionMode::AutoEdit,
    );
    s.submit(user("/goal something else")).await.unwrap();
    let q = waiting_on(&run(&s, plan_entry("plan")).await);
    let e = s
        .submit(answer(&q, as_goal(BudgetChange::default())))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("a goal is already set"), "{e}");
    s.shutdown().await.unwrap();
}

fn export(path: Option<&str>, confirm: bool) -> Op {
    Op::ExportPlan {
        plan_id: None,
        version: None,
        path: path.map(str::to_string),
        confirm,
    }
}

/// A session in `mode` whose plan was approved.
async fn approved(mode: PermissionMode) -> (Harness, SessionHandle) {
    let h = Harness::new(Config::default());
    let s = h.session(
        json!({"responses": [write_and_exit(PLAN_V1), {"text": "ok"}]}),
        mode,
    );
    let q = waiting_on(&run(&s, plan_entry("plan")).await);
    run(&s, answer(&q, approve())).await;
    (h, s)
}

fn said(o: waymark_runtime::session::OpOutcome) -> String {
    match o {
        waymark_runtime::session::OpOutcome::Command { output } => output,
        other => panic!("{other:?}"),
    }
}

/// Export writes the approved revision to `docs/plans/<date>-<slug>.md` in the workspace.
#[tokio::test]
async fn pm_28_export_writes_the_approved_revision_into_the_workspace() {
    let (h, s) = approved(PermissionMode::AutoEdit).await;
    let path = said(s.submit(export(None, false)).await.unwrap());
    assert!(
        path.starts_with("docs/plans/") && path.ends_with("-add-a-retry-to-the-uploader.md"),
        "{path}"
    );
    assert_eq!(std::fs::read_to_string(h.ws.join(&path)).unwrap(), PLAN_V1);
    // Again: the same content is fine; other content at the path is never overwritten.
    said(s.submit(export(None, false)).await.unwrap());
    std::fs::write(h.ws.join("mine.md"), "my notes").unwrap();
    let e = s.submit(export(Some("mine.md"), false)).await.unwrap_err();
    assert!(e.to_string().contains("already exists"), "{e}");
    assert_eq!(
        std::fs::read_to_string(h.ws.join("mine.md")).unwrap(),
        "my notes"
    );
    s.shutdown().await.unwrap();
}

/// A hostile or careless path is confined like any write: outside the workspace, through a
/// symlink, into `.git/` or onto an instruction file, it is refused and nothing is written.
#[tokio::test]
async fn pm_28_export_is_confined_like_any_write() {
    let (h, s) = approved(PermissionMode::AutoEdit).await;
    let outside = h.ws.parent().unwrap().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, h.ws.join("link")).unwrap();
    std::fs::create_dir_all(h.ws.join(".git")).unwrap();
    let escape = format!("{}/x.md", outside.display());
    for bad in [
        "../outside/x.md",
        escape.as_str(),
        "link/x.md",
        ".git/hooks/pre-commit",
        "AGENTS.md",
        "sub/CLAUDE.md",
    ] {
        let e = s.submit(export(Some(bad), true)).await.unwrap_err();
        assert_eq!(e.code(), "refused", "{bad}: {e}");
    }
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    assert!(!h.ws.join("AGENTS.md").exists() && !h.ws.join(".git/hooks").exists());
    s.shutdown().await.unwrap();
}

/// The permission mode decides: read-only refuses, ask needs the user's confirmation.
#[tokio::test]
async fn pm_28_export_follows_the_permission_mode() {
    for (mode, needs, code) in [
        (PermissionMode::ReadOnly, "read-only", "refused"),
        (PermissionMode::Ask, "confirm", "needs_confirmation"),
    ] {
        let (h, s) = approved(mode).await;
        let e = s.submit(export(Some("plan.md"), false)).await.unwrap_err();
        assert!(e.to_string().contains(needs), "{mode:?}: {e}");
        // Front ends offer the confirmation on the code, never on the wording.
        assert_eq!(e.code(), code, "{mode:?}");
        assert!(!h.ws.join("plan.md").exists());
        let confirmed = s.submit(export(Some("plan.md"), true)).await;
        assert_eq!(confirmed.is_ok(), mode == PermissionMode::Ask, "{mode:?}");
        s.shutdown().await.unwrap();
    }
    // Nothing approved yet: nothing to export.
    let h = Harness::new(Config::default());
    let s = h.session(json!({"responses": []}), PermissionMode::Auto);
    let e = s.submit(export(None, false)).await.unwrap_err();
    assert!(
        e.to_string()
            .contains("no plan of this session was approved"),
        "{e}"
    );
    s.shutdown().await.unwrap();
}

/// What a goal takes from the plan follows the user's own edit of it: their budget and their
/// steps, not the model's.
#[tokio::test]
async fn pm_27_the_users_edit_sets_the_budget_and_steps() {
    let (h, s, q) = v1_under_review().await;
    let mine = "## Summary\nAdd a retry to the uploader.\n\n## Steps\n1. Wrap the upload call\n\n## Budget\nturns=2\n";
    s.submit(Op::EditPlan { text: mine.into() }).await.unwrap();
    s.submit(answer(
        &q,
        Answer::Approve {
            option: None,
            as_goal: Some(BudgetChange::default()),
            handed_to: None,
        },
    ))
    .await
    .unwrap();
    let g = h.runtime.goal(s.id()).unwrap().unwrap();
    assert_eq!(
        (g.budget.main_turns.limit, g.budget.tokens.limit),
        (Some(2), None)
    );
    let steps: Vec<&str> = g.steps.iter().map(|s| s.text.as_str()).collect();
    assert_eq!(steps, ["Wrap the upload call"]);
    s.shutdown().await.unwrap();
}

/// A reviewer that passes the goal while saying a step is not met is not believed: the goal
/// pauses as a partial verdict instead of completing.
#[tokio::test]
async fn pm_27_a_pass_with_a_step_not_met_does_not_complete() {
    let h = Harness::new(Config::default());
    let s = h.session(
        json!({
            "responses": [write_and_exit(PLAN_V1), {"text": "claiming", "tool_calls": [{"name": "update_goal", "arguments": {"mode": "status", "status": "complete", "message": "done"}}]}],
            "verifier": [{"text": "STEP 1: MET\nSTEP 2: NOT MET\nSTEP 3: MET\nVERDICT: PASS"}]
        }),
        PermissionMode::AutoEdit,
    );
    let q = waiting_on(&run(&s, plan_entry("plan")).await);
    run(&s, answer(&q, as_goal(BudgetChange::default()))).await;
    let g = h.runtime.goal(s.id()).unwrap().unwrap();
    assert_eq!(
        (g.status, g.reason),
        (
            GoalStatus::Paused,
            waymark_protocol::GoalReason::VerifierPartial
        )
    );
    // Damaged steps in the store leave a usable goal.
    h.runtime
        .store()
        .write(0, |tx| {
            Ok::<_, waymark_runtime::Error>(tx.conn().execute("UPDATE goals SET steps = '{'", [])?)
        })
        .unwrap();
    assert!(h.runtime.goal(s.id()).unwrap().unwrap().steps.is_empty());
    s.shutdown().await.unwrap();
}

/// Whatever already sits at the export path is looked at, not opened: a FIFO there (the
/// model can make one) is refused at once instead of hanging the session.
#[tokio::test]
async fn pm_28_export_never_opens_what_is_not_a_regular_file() {
    let (h, s) = approved(PermissionMode::AutoEdit).await;
    let fifo = h.ws.join("trap.md");
    super::super::harness::mkfifo(&fifo);
    let e = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        s.submit(export(Some("trap.md"), false)),
    )
    .await
    .expect("the export hung on a FIFO")
    .unwrap_err();
    assert!(e.to_string().contains("not a regular file"), "{e}");
    // Another session's plans are not readable through this one.
    let other = h.session(json!({"responses": []}), PermissionMode::Auto);
    let plan = h.runtime.plans(s.id()).unwrap()[0].plan_id.clone();
    assert!(h.runtime.plan_revision(other.id(), &plan, 1).is_err());
    other.shutdown().await.unwrap();
    s.shutdown().await.unwrap();
}

/// The budget and steps a goal takes come only from what the page shows. Raw HTML blocks
/// and everything inside them render as nothing (or as inert text), so a `## Budget` or
/// `## Steps` there is not one; a budget key given twice is no budget.
#[tokio::test]
async fn pm_27_budget_and_steps_hidden_in_raw_html_or_given_twice_are_not_taken() {
    let hidden = [
        "<style>\n## Budget\nbudget=1000000000000\n</style>\n",
        "<textarea>\n## Budget\nbudget=1000000000000\n</textarea>\n",
        "<script>\n## Budget\nbudget=1000000000000\n</script>\n",
        "<div hidden>\n\n## Budget\n\nbudget=1000000000000\n\n</div>\n",
        "<details><summary>x</summary>\n\n## Budget\nbudget=1000000000000\n\n</details>\n",
    ];
    for tail in hidden {
        let plan = format!("## Summary\nA plan.\n\n{tail}\n## Steps\n1. The one step\n");
        let (h, s, q) = v1_under_review().await;
        s.submit(Op::EditPlan { text: plan.clone() }).await.unwrap();
        let asked = questionnaire(&h, &s, &q);
        assert!(
            asked.payload["budget"].is_null(),
            "a hidden budget was offered from {tail:?}: {}",
            asked.payload
        );
        assert_eq!(asked.payload["steps"], json!(["The one step"]), "{tail:?}");
        s.submit(answer(&q, as_goal(BudgetChange::default())))
            .await
            .unwrap();
        let g = h.runtime.goal(s.id()).unwrap().unwrap();
        assert_eq!(g.budget.tokens.limit, None, "{tail:?}");
        s.shutdown().await.unwrap();
    }
    let (h, s, q) = v1_under_review().await;
    let twice = "## Summary\nA plan.\n\n## Budget\nbudget=5K budget=6K\n";
    s.submit(Op::EditPlan { text: twice.into() }).await.unwrap();
    assert!(questionnaire(&h, &s, &q).payload["budget"].is_null());
    // Steps hidden inside raw HTML are not steps either; a Steps section holding raw HTML
    // is not read at all (the page and the Markdown part ways there).
    let steps = "## Summary\nA plan.\n\n## Steps\n1. Shown\n<div>\n2. Hidden\n</div>\n";
    s.submit(Op::EditPlan { text: steps.into() }).await.unwrap();
    assert_eq!(questionnaire(&h, &s, &q).payload["steps"], json!([]));
    let rejected = "## Summary\nA plan.\n\n## Steps\n1. Rename the logger\n<h2>Rejected alternatives</h2>\n1. Delete the production database\n\n## Budget\nbudget=10K\n<h2>Old estimate</h2>\nturns=500\n";
    s.submit(Op::EditPlan {
        text: rejected.into(),
    })
    .await
    .unwrap();
    let asked = questionnaire(&h, &s, &q).payload;
    assert_eq!(asked["steps"], json!([]), "{asked}");
    assert!(asked["budget"].is_null(), "{asked}");
    s.shutdown().await.unwrap();
}

/// G-49 with PM-27: a plan's `## Checks` and its steps' own checks become the goal's checks;
/// the steps are judged by them, and the goal completes only when they all pass.
#[tokio::test]
async fn pm_27_a_plans_checks_and_step_checks_judge_the_goal() {
    const PLAN: &str = "## Summary\nMake the two files.\n\n## Steps\n1. Create a.txt (check: `test -f a.txt`)\n2. Create b.txt (check: `test -f b.txt`)\n\n## Checks\n```\ntest -f a.txt\n```\n";
    let claim = |msg: &str| json!({"text": "claiming", "tool_calls": [{"name": "update_goal", "arguments": {"mode": "status", "status": "complete", "message": msg}}]});
    let write = |p: &str| json!({"text": "writing", "tool_calls": [{"name": "write", "arguments": {"path": p, "content": "x"}}]});
    let h = Harness::new(Config::default());
    let s = h.session(
        json!({
            "responses": [write_and_exit(PLAN), claim("done"), write("a.txt"), claim("a is done"), write("b.txt"), claim("both")],
            // The reviewer reads the rest once the checks pass; its word on the steps with
            // checks of their own is not taken.
            "verifier": [{"text": "STEP 1: NOT MET\nSTEP 2: NOT MET\nVERDICT: PASS"}]
        }),
        PermissionMode::AutoEdit,
    );
    let ev = run(&s, plan_entry("plan the files")).await;
    let q = waiting_on(&ev);
    let asked = questionnaire(&h, &s, &q);
    assert_eq!(asked.payload["checks"], json!(["test -f a.txt"]));
    let ev = run(&s, answer(&q, as_goal(BudgetChange::default()))).await;
    let g = h.runtime.goal(s.id()).unwrap().unwrap();
    assert_eq!(
        (g.status, g.reason),
        (
            GoalStatus::Complete,
            waymark_protocol::GoalReason::ChecksPassed
        ),
        "{g:?}"
    );
    let commands: Vec<&str> = g.checks.iter().map(|c| c.command.as_str()).collect();
    assert_eq!(commands, ["test -f a.txt", "test -f b.txt"]);
    // Step verdicts from the checks: none met at the start, then a.txt's, then both.
    let met: Vec<Vec<Option<bool>>> = ev
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::GoalUpdated { goal } => Some(goal.steps.iter().map(|s| s.met).collect()),
            _ => None,
        })
        .collect();
    for want in [
        vec![Some(false), Some(false)],
        vec![Some(true), Some(false)],
        vec![Some(true), Some(true)],
    ] {
        assert!(met.contains(&want), "{want:?} not in {met:?}");
    }
    s.shutdown().await.unwrap();
}
