//! The safety net in the real window (issue 23): "Rewind to here" with its preview and the
//! undo banner, a worktree goal reviewed and merged, the cost gauge, and the Goals board with
//! an active, a blocked and a budget-limited goal; and the permission dialog with a long diff
//! in a small window (issue 37).

use super::*;

fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn settings(desk: &Desk, json: &str) {
    std::fs::create_dir_all(desk.settings_file().parent().unwrap()).unwrap();
    std::fs::write(desk.settings_file(), json).unwrap();
}

/// Two turns: the first writes notes.txt, the second rewrites it from the shell, adds
/// out/extra.txt and removes src/greet.sh. "Rewind to here" on the second turn puts all three
/// back, folds the turn, and "Undo rewind" brings the second state again.
#[tokio::test(flavor = "multi_thread")]
async fn rewind_to_here_previews_the_files_then_undo_brings_them_back() {
    let desk = Desk::start();
    let ws = workspace(&desk, "rewind");
    let first = desk.exec(
        &ws,
        &script("rewind.json"),
        &["--permission", "auto", "Write a first draft"],
    );
    succeeded(&first);
    let id = session_of(&first);
    succeeded(&desk.cli(&[
        "exec",
        "--json",
        "--session",
        &id,
        "--permission",
        "auto",
        "Rework the draft",
    ]));
    let notes = ws.join("notes.txt");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "second draft\n");
    assert!(ws.join("out/extra.txt").exists());
    assert!(!ws.join("src/greet.sh").exists());

    let app = desk.launch().await;
    app.open_session(&id).await;
    app.wait_text("[data-testid=transcript]", "Second draft written")
        .await;
    // One "Rewind to here" per turn; the second turn's opens its preview.
    let turns = app
        .js("return [...document.querySelectorAll('[data-testid=rewind-here]')].map(b => Number(b.dataset.turn))")
        .await;
    let turns: Vec<u64> = serde_json::from_value(turns).unwrap();
    assert_eq!(turns.len(), 2, "{turns:?}");
    let second = turns[1];
    app.click(&format!("[data-testid=rewind-here][data-turn='{second}']"))
        .await;
    app.el("[data-testid=rewind-dialog]").await;
    // A modal dialog: it takes the focus, and Escape closes it.
    app.wait_js(
        "return document.querySelector('[data-testid=rewind-dialog]').contains(document.activeElement) || null",
        "the focus in the rewind dialog",
    )
    .await;
    app.press(fantoccini::key::Key::Escape).await;
    app.wait_gone("[data-testid=rewind-dialog]").await;
    app.click(&format!("[data-testid=rewind-here][data-turn='{second}']"))
        .await;
    app.el("[data-testid=rewind-dialog]").await;
    app.el("[data-testid=rewind-files]").await;
    let files = app.text("[data-testid=rewind-files]").await.to_lowercase();
    assert_eq!(
        app.text("[data-testid=rewind-file-count]").await,
        "3",
        "{files}"
    );
    for (op, path) in [
        ("revert", "notes.txt"),
        ("delete", "out/extra.txt"),
        ("restore", "src/greet.sh"),
    ] {
        assert!(
            files.contains(op) && files.contains(path),
            "{op} {path}: {files}"
        );
    }
    assert!(
        app.text("[data-testid=rewind-turns]")
            .await
            .contains("1 turn leaves"),
    );
    // Each file unfolds to its diff.
    app.click("[data-testid=rewind-files] li:first-child button")
        .await;
    app.wait_text("[data-testid=rewind-files]", "second draft")
        .await;
    app.shot("safety-1-rewind-preview").await;
    let mut a11y = app.violations("rewind-preview").await;
    // Nothing has moved yet.
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "second draft\n");

    app.click("[data-testid=rewind-both]").await;
    app.wait_gone("[data-testid=rewind-dialog]").await;
    let banner = app
        .wait_text("[data-testid=undo-rewind-banner]", "Rewound")
        .await;
    assert!(banner.contains("3 files changed"), "{banner}");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "first draft\n");
    assert!(!ws.join("out/extra.txt").exists());
    assert_eq!(
        std::fs::read_to_string(ws.join("src/greet.sh")).unwrap(),
        "echo \"Hello, ${1:-world}\"\n"
    );
    // The rewound turn is folded in the transcript, and offers no rewind of its own.
    app.wait_text("[data-testid=rewound-turn]", "Rewound: your message")
        .await;
    let offered = app
        .js("return document.querySelectorAll('[data-testid=rewind-here]').length")
        .await;
    assert_eq!(offered, 1);
    app.shot("safety-2-rewound-with-undo").await;
    a11y.extend(app.violations("rewound-with-undo").await);
    assert!(a11y.is_empty(), "{a11y:#?}");

    app.click("[data-testid=undo-rewind]").await;
    // The undo writes the files one after another; wait for all three.
    let start = Instant::now();
    while std::fs::read_to_string(&notes).unwrap() != "second draft\n"
        || !ws.join("out/extra.txt").exists()
        || ws.join("src/greet.sh").exists()
    {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the undo did not bring the second turn's files back"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    app.wait_js(
        "return document.querySelector('[data-testid=rewound-turn]') === null",
        "the second turn to come back into the conversation",
    )
    .await;
    let listed = desk.cli(&["checkpoints", "--session", &id, "--json"]);
    succeeded(&listed);
    let listed: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    let rewinds = listed
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["trigger"] == "rewind")
        .count();
    assert_eq!(rewinds, 2, "{listed}");
    app.quit().await;
}

/// A goal run with `exec --worktree` leaves the checkout alone; the header's worktree chip
/// opens "Review & merge" with the diff, and a squash brings it into `main` as one commit with
/// the message the user wrote.
#[tokio::test(flavor = "multi_thread")]
async fn a_worktree_goal_is_reviewed_and_merged_from_the_window() {
    let desk = Desk::start();
    settings(&desk, r#"{"goal": {"verification": "none"}}"#);
    let ws = workspace(&desk, "project");
    git(&ws, &["init", "-q", "-b", "main"]);
    git(&ws, &["config", "user.name", "Dev Eloper"]);
    git(&ws, &["config", "user.email", "dev@example.invalid"]);
    std::fs::write(ws.join(".gitignore"), ".env\n").unwrap();
    std::fs::write(ws.join(".worktreeinclude"), ".env\n").unwrap();
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-qm", "start"]);
    std::fs::write(ws.join(".env"), "TOKEN=local\n").unwrap();
    let out = desk.exec(
        &ws,
        &script("worktree_goal.json"),
        &[
            "--permission",
            "auto",
            "--worktree",
            "feature",
            "/goal Add the feature file",
        ],
    );
    succeeded(&out);
    let id = session_of(&out);
    assert!(!ws.join("feature.txt").exists());
    assert!(git(&ws, &["status", "--porcelain"]).is_empty());

    let app = desk.launch().await;
    app.open_session(&id).await;
    let bar = app
        .wait_text("[data-testid=worktree-bar]", "waymark/feature")
        .await;
    assert!(bar.contains("Review & merge"), "{bar}");
    // It says that what the checkout had not committed is not in the worktree.
    assert!(
        bar.contains("changes not committed in your checkout are not in it"),
        "{bar}"
    );
    app.click("[data-testid=worktree-chip]").await;
    app.wait_text("[data-testid=worktree-branch]", "waymark/feature")
        .await;
    app.wait_text("[data-testid=worktree-files]", "feature.txt")
        .await;
    app.wait_text("[data-testid=worktree-dialog]", "made in the worktree")
        .await;
    app.shot("safety-3-worktree-review").await;
    let a11y = app.violations("worktree-review").await;
    assert!(a11y.is_empty(), "{a11y:#?}");
    // The merge message shown is the one the app would write: the objective.
    let shown = app
        .js("return document.querySelector('[data-testid=worktree-message]').value")
        .await;
    assert_eq!(shown, "Add the feature file");
    // Squashed, saying what the user writes.
    app.click("[data-testid=worktree-style-squash]").await;
    app.type_into(
        "[data-testid=worktree-message]",
        "Feature file, as reviewed",
    )
    .await;
    app.wait_text("[data-testid=worktree-merge]", "Squash into main")
        .await;
    app.shot("safety-3b-worktree-squash").await;
    app.click("[data-testid=worktree-merge]").await;
    app.wait_text("[data-testid=toast]", "Squashed into main as one commit")
        .await;
    assert_eq!(
        std::fs::read_to_string(ws.join("feature.txt")).unwrap(),
        "made in the worktree\n"
    );
    let log = git(&ws, &["log", "--format=%an <%ae>|%s", "-3"]);
    assert!(
        log.starts_with("Dev Eloper <dev@example.invalid>|"),
        "{log}"
    );
    assert!(
        log.starts_with("Dev Eloper <dev@example.invalid>|Feature file, as reviewed\n"),
        "{log}"
    );
    // One commit on `main`'s old tip alone: no merge commit.
    assert_eq!(
        git(&ws, &["log", "-1", "--format=%P"])
            .split_whitespace()
            .count(),
        1
    );
    app.wait_text("[data-testid=worktree-merged]", "Merged into main")
        .await;
    app.shot("safety-4-worktree-merged").await;
    // The board names the goal's worktree.
    app.click("[data-testid=worktree-close]").await;
    app.click("[data-testid=open-board]").await;
    app.wait_text("[data-testid=board-worktree]", "waymark/feature")
        .await;
    app.quit().await;
}

/// Three goals on the board: one active (run by the app), one blocked with its question and
/// a reply box, one stopped by its cost budget. The reply resumes the blocked goal from the
/// board; a row opens its session, whose Goal tab shows the cost gauge.
#[tokio::test(flavor = "multi_thread")]
async fn the_board_shows_three_goals_and_a_reply_resumes_the_blocked_one() {
    let desk = Desk::start();
    settings(
        &desk,
        r#"{"goal": {"verification": "none"},
            "pricing": {"scripted:*": {"input_per_mtok": 3, "output_per_mtok": 15}}}"#,
    );
    let limited = desk.exec(
        &workspace(&desk, "limited"),
        &script("goal_budget.json"),
        &["--permission", "auto", "/goal Do the two steps cost=$0.01"],
    );
    ended(&limited, 5);
    let limited = session_of(&limited);
    let blocked = desk.exec(
        &workspace(&desk, "blocked"),
        &script("blocked_reply.json"),
        &["--permission", "auto", "/goal Rename the tool"],
    );
    ended(&blocked, 3);
    let blocked = session_of(&blocked);
    let active = desk.exec(
        &workspace(&desk, "active"),
        &script("goal_slow.json"),
        &["--permission", "auto", "Hello"],
    );
    succeeded(&active);
    let active = session_of(&active);

    let app = desk.launch().await;
    app.open_session(&active).await;
    app.type_into("[data-testid=composer]", "/goal keep checking the folder")
        .await;
    app.click("[data-testid=send]").await;
    app.click("[data-testid=tab-goal]").await;
    app.wait_text("[data-testid=goal-status]", "active").await;

    app.click("[data-testid=open-board]").await;
    app.el("[data-testid=goal-board]").await;
    app.wait_js(
        "return document.querySelectorAll('[data-testid=board-row]').length === 3 || null",
        "three rows on the board",
    )
    .await;
    let row = |id: &str| format!("[data-testid=board-row][data-session-id='{id}']");
    app.wait_text(
        &format!("{} [data-testid=board-status]", row(&active)),
        "active",
    )
    .await;
    app.wait_text(
        &format!("{} [data-testid=board-status]", row(&limited)),
        "budget limited",
    )
    .await;
    let cost = app
        .text(&format!("{} [data-testid=board-cost]", row(&limited)))
        .await;
    assert!(cost.starts_with('$'), "{cost}");
    // The figures at the right of the rows are named: what the sessions cost.
    let head = app.text("[data-testid=board-cost-head]").await;
    assert!(head.to_lowercase().starts_with("cost"), "{head}");
    let level = app
        .js(&format!(
            "return document.querySelector(\"{} [data-testid=board-gauge-cost]\").className",
            row(&limited)
        ))
        .await;
    assert!(level.as_str().unwrap().contains("danger"), "{level}");
    let question = app
        .text(&format!("{} [data-testid=board-question]", row(&blocked)))
        .await;
    assert!(question.contains("full one or the short one"), "{question}");
    app.shot("safety-5-board").await;
    let a11y = app.violations("goal-board").await;
    assert!(a11y.is_empty(), "{a11y:#?}");

    // The reply from the board resumes the blocked goal, which then completes.
    app.type_into(
        &format!("{} [data-testid=board-reply]", row(&blocked)),
        "The short one.",
    )
    .await;
    app.click(&format!("{} [data-testid=board-reply-send]", row(&blocked)))
        .await;
    app.wait_text(
        &format!("{} [data-testid=board-status]", row(&blocked)),
        "complete",
    )
    .await;
    app.shot("safety-6-board-after-reply").await;

    // A row opens its session; its Goal tab shows the cost gauge at the limit.
    app.click(&format!("{} [data-testid=board-open]", row(&limited)))
        .await;
    app.wait_js(
        &format!("return document.querySelector('[data-testid=session].current')?.dataset.sessionId === '{limited}' || null"),
        "the budget-limited session to open",
    )
    .await;
    app.click("[data-testid=tab-goal]").await;
    let gauge = app.wait_text("[data-testid=gauge-cost]", "$").await;
    assert!(gauge.contains("$0.01"), "{gauge}");
    let level = app
        .js("return document.querySelector('[data-testid=gauge-cost]').dataset.level")
        .await;
    assert_eq!(level, "danger");
    app.wait_text("[data-testid=goal-reason]", "cost").await;
    app.shot("safety-7-cost-gauge").await;

    // At 900×600 the board still reads: the rows keep their status and question.
    let window = desk.xdotool(&["search", "--onlyvisible", "--name", "^Waymark$"]);
    desk.xdotool(&["windowsize", &window, "900", "600"]);
    app.wait_js(
        "return window.innerWidth <= 900 || null",
        "the window to shrink",
    )
    .await;
    app.click("[data-testid=open-board]").await;
    app.wait_js(
        "return document.querySelectorAll('[data-testid=board-row]').length === 3 || null",
        "three rows on the narrow board",
    )
    .await;
    app.shot("safety-8-board-900x600").await;
    app.quit().await;
}

/// "Approve & pursue as goal" with "Run in a new worktree" (G-36): the window opens the new
/// session, which implements the plan on its own branch; the plan session's review is closed
/// and the checkout untouched.
#[tokio::test(flavor = "multi_thread")]
async fn a_plan_approved_as_a_goal_runs_in_a_new_worktree_from_the_window() {
    let desk = Desk::start();
    settings(&desk, r#"{"goal": {"verification": "none"}}"#);
    let ws = workspace(&desk, "planned");
    git(&ws, &["init", "-q", "-b", "main"]);
    git(&ws, &["config", "user.name", "Dev Eloper"]);
    git(&ws, &["config", "user.email", "dev@example.invalid"]);
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-qm", "start"]);
    let out = desk.exec(
        &ws,
        &script("plan_worktree.json"),
        &[
            "--permission",
            "auto-edit",
            "--plan",
            "Plan the feature first.",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan = session_of(&out);
    let app = desk.launch().await;
    app.open_session(&plan).await;
    app.click("[data-testid=tab-plan]").await;
    app.click("[data-testid=approve-goal]").await;
    app.click("[data-testid=approve-goal-worktree]").await;
    app.wait_text("[data-testid=approve-goal-send]", "new worktree")
        .await;
    app.shot("safety-9-approve-in-worktree").await;
    app.click("[data-testid=approve-goal-send]").await;
    // The new session opens, in its worktree, and its goal runs to the end.
    app.wait_js(
        &format!("return (document.querySelector('[data-testid=session].current')?.dataset.sessionId ?? {plan:?}) !== {plan:?} || null"),
        "the implementing session to open",
    )
    .await;
    app.wait_text("[data-testid=worktree-bar]", "waymark/")
        .await;
    app.click("[data-testid=tab-goal]").await;
    app.wait_text("[data-testid=goal-status]", "complete").await;
    app.shot("safety-10-implemented-in-worktree").await;
    assert!(!ws.join("feature.txt").exists(), "the checkout was touched");
    let wt = desk.data_dir().join("worktrees");
    // Waymark's own folders there (the sealed git folders) start with a dot.
    let made: Vec<_> = std::fs::read_dir(&wt)
        .unwrap()
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    assert_eq!(made.len(), 1);
    assert_eq!(
        std::fs::read_to_string(made[0].path().join("feature.txt")).unwrap(),
        "made in the worktree\n"
    );
    // The plan session's review is closed.
    let show = desk.cli(&["show", "--session", &plan, "--json"]);
    succeeded(&show);
    let show: serde_json::Value = serde_json::from_slice(&show.stdout).unwrap();
    assert!(
        show["questionnaires"]
            .as_array()
            .unwrap()
            .iter()
            .all(|q| q["status"] != "pending"),
        "{show}"
    );
    app.quit().await;
}

/// A write of 80 lines asked about in a 900×600 window (issue 37): the diff scrolls inside
/// the dialog while Allow and Deny stay in view, each with its number key shown; pressing
/// Allow's key answers, and the file is written.
#[tokio::test(flavor = "multi_thread")]
async fn a_long_diff_scrolls_while_allow_and_deny_stay_in_view_at_900x600() {
    let desk = Desk::start();
    let ws = workspace(&desk, "long");
    let out = desk.exec(
        &ws,
        &script("long_write.json"),
        &["--permission", "ask", "Write the long file"],
    );
    assert_eq!(
        out.status.code(),
        Some(3),
        "exec should stop at the permission question: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let id = session_of(&out);
    assert!(!ws.join("long.txt").exists());

    let app = desk.launch().await;
    let window = desk.xdotool(&["search", "--onlyvisible", "--name", "^Waymark$"]);
    desk.xdotool(&["windowsize", &window, "900", "600"]);
    app.wait_js(
        "return (window.innerWidth <= 900 && window.innerHeight <= 600) || null",
        "the window to shrink to 900×600",
    )
    .await;
    app.open_session(&id).await;
    app.el("[data-testid=question-dialog][data-kind=permission]")
        .await;
    app.wait_js(
        "return document.querySelectorAll('[data-testid=permission-diff] .add').length === 80 || null",
        "the 80 added lines in the dialog",
    )
    .await;

    // Where things are, as the window lays them out, before anything is scrolled.
    let geometry = "const box = (s) => { const r = document.querySelector(s).getBoundingClientRect(); \
           return { left: r.left, top: r.top, right: r.right, bottom: r.bottom }; }; \
         const seen = (b) => b.left >= 0 && b.top >= 0 && b.right <= window.innerWidth && b.bottom <= window.innerHeight && b.right > b.left && b.bottom > b.top; \
         const body = document.querySelector('[data-testid=question-body]'); \
         const backdrop = document.querySelector('[data-testid=question-dialog]').closest('.backdrop'); \
         const allow = box('[data-testid=allow-once]'), deny = box('[data-testid=deny]'); \
         return { allow, deny, allowSeen: seen(allow), denySeen: seen(deny), \
           width: window.innerWidth, height: window.innerHeight, \
           bodyScroll: [body.scrollHeight, body.clientHeight], \
           pageScroll: [backdrop.scrollHeight, backdrop.clientHeight, document.scrollingElement.scrollTop] };";
    let at_top = app.js(geometry).await;
    assert_eq!(
        at_top["allowSeen"], true,
        "Allow once out of view: {at_top}"
    );
    assert_eq!(at_top["denySeen"], true, "Deny out of view: {at_top}");
    let (scroll, client) = (
        at_top["bodyScroll"][0].as_f64().unwrap(),
        at_top["bodyScroll"][1].as_f64().unwrap(),
    );
    assert!(scroll > client, "the diff area does not scroll: {at_top}");
    // Nothing around the dialog scrolls (a pixel of rounding aside): the answers are in
    // view without it.
    let page: Vec<f64> = serde_json::from_value(at_top["pageScroll"].clone()).unwrap();
    assert!(
        page[0] <= page[1] + 1.0 && page[2] == 0.0,
        "the page scrolls: {at_top}"
    );
    app.shot("safety-11-long-diff-900x600").await;

    // Scrolled to its last line, the diff moves and the answers do not.
    let last = app
        .js("const body = document.querySelector('[data-testid=question-body]'); \
             body.scrollTop = body.scrollHeight; \
             const line = [...document.querySelectorAll('[data-testid=permission-diff] .add')].pop().getBoundingClientRect(); \
             const shown = body.getBoundingClientRect(); \
             return body.scrollTop > 0 && line.bottom <= shown.bottom + 1 && line.top >= shown.top")
        .await;
    assert_eq!(
        last, true,
        "the last line of the diff cannot be scrolled to"
    );
    let at_end = app.js(geometry).await;
    assert_eq!(at_end["allow"], at_top["allow"], "{at_end}");
    assert_eq!(at_end["deny"], at_top["deny"], "{at_end}");
    app.shot("safety-12-long-diff-scrolled").await;
    let a11y = app.violations("permission-long-diff").await;
    assert!(a11y.is_empty(), "{a11y:#?}");

    // Each answer shows its number key, and that key answers.
    let keys = app
        .js("return [...document.querySelectorAll('[data-testid=question-dialog] .buttons button')] \
               .map((b) => [b.dataset.testid, b.querySelector('kbd')?.textContent, b.getAttribute('aria-keyshortcuts')])")
        .await;
    let keys: Vec<(String, Option<String>, Option<String>)> = serde_json::from_value(keys).unwrap();
    assert_eq!(keys.first().map(|k| k.0.as_str()), Some("allow-once"));
    assert_eq!(keys.last().map(|k| k.0.as_str()), Some("deny"));
    for (i, (button, shown, named)) in keys.iter().enumerate() {
        let n = (i + 1).to_string();
        assert_eq!(shown.as_deref(), Some(n.as_str()), "{button}: {keys:?}");
        assert_eq!(named.as_deref(), Some(n.as_str()), "{button}: {keys:?}");
    }
    // The focus on the dialog itself, where it was when the dialog opened (not in the
    // reason field, where a digit is text).
    app.js("document.querySelector('[data-testid=question-dialog]').focus(); return true")
        .await;
    app.press_char('1').await;
    app.wait_gone("[data-testid=question-dialog]").await;
    app.wait_text("[data-testid=transcript]", "long.txt is written")
        .await;
    let written = std::fs::read_to_string(ws.join("long.txt")).unwrap();
    assert_eq!(written.lines().count(), 80);
    app.quit().await;
}
