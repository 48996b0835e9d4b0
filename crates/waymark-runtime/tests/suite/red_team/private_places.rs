//! Trust, round two (issue 19): the private places the sandboxed shell cannot read stay
//! private from the rest of the agent too. The file tools ask before reading one, a granted
//! read-only command asks again when an operand leads into one, a write aimed at one asks
//! without showing its contents, and a read-only git grant runs no program the model
//! planted in the workspace.

use super::super::harness::{
    Harness, permission_asked, results, run, session_on, user, verifier_results,
};
use super::confinement::{bash, fake_home, git, home_runtime, tool_env};
use super::plan_entry;
use serde_json::json;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use waymark_config::{Config, Verification};
use waymark_protocol::{PermissionMode, ToolStatus};

fn answer(q: &str, a: waymark_protocol::Answer) -> waymark_protocol::Op {
    waymark_protocol::Op::Answer {
        questionnaire_id: q.to_string(),
        answer: a,
    }
}

/// A read-only git grant runs no program the model planted. The model writes the files of a
/// repository (`HEAD`, `config` with a `core.fsmonitor` command, `objects/`, `refs/`) at the
/// workspace's root — none of them in `.git/`, so `auto-edit` writes them without asking —
/// and a granted `git status` or `git diff` would take the workspace for that repository and
/// run the command. And a `core.hooksPath` folder in the workspace holds a
/// `post-index-change` hook that `git status` would start when it refreshes the index.
#[tokio::test]
async fn a_read_only_git_grant_runs_no_program_the_model_planted() {
    let h = Harness::new(Config::default());
    let marker = h.dir.path().join("fsmonitor-ran");
    let config = format!(
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = \"touch {}; false\"\n",
        marker.display()
    );
    let write = |path: &str, content: &str| json!({"name": "write", "arguments": {"path": path, "content": content}});
    let s = h.session(
        json!({"responses": [
            {"tool_calls": [bash("git status")]},
            {"tool_calls": [
                write("HEAD", "ref: refs/heads/main\n"),
                write("config", &config),
                write("objects/info/keep", ""),
                write("refs/heads/keep", ""),
            ]},
            {"tool_calls": [bash("git status"), bash("git diff"), bash("git ls-files")]},
            {"text": "done"}
        ]}),
        PermissionMode::AutoEdit,
    );
    let q = super::super::harness::waiting_on(&run(&s, user("look")).await);
    run(&s, answer(&q, waymark_protocol::Answer::AllowPrefix)).await;
    // The grant covered `git status`; `git diff` and `git ls-files` asked (other prefixes).
    assert!(!marker.exists(), "git ran the planted fsmonitor command");
    s.shutdown().await.unwrap();

    // A project whose hooks live in the workspace (husky's `.husky/`).
    let h = Harness::new(Config::default());
    let hook_ran = h.dir.path().join("hook-ran");
    git(&h.ws, &["init", "-q"]);
    std::fs::write(h.ws.join("f"), "a\n").unwrap();
    git(&h.ws, &["add", "f"]);
    git(&h.ws, &["commit", "-q", "-m", "f"]);
    git(&h.ws, &["config", "core.hooksPath", ".husky"]);
    let hook = h.ws.join(".husky/post-index-change");
    std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
    std::fs::write(&hook, format!("#!/bin/sh\ntouch {}\n", hook_ran.display())).unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    // A changed stat makes `git status` refresh (and, if it may, write) the index.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    std::fs::write(h.ws.join("f"), "a\n").unwrap();
    let s = h.session(
        json!({"responses": [{"tool_calls": [bash("git status")]}, {"text": "done"}]}),
        PermissionMode::Auto,
    );
    let r = results(&run(&s, user("look")).await);
    assert_eq!(r[0].1, ToolStatus::Ok, "{r:?}");
    assert!(!hook_ran.exists(), "git status started a workspace hook");
    s.shutdown().await.unwrap();
}

/// The file tools keep the same private places as the sandboxed shell: reading a credential
/// store, another session or the settings asks (no grant covers it) in plan mode whatever
/// the permission mode, and outside plan mode in every mode but `auto`; the reviewer is
/// refused; searches skip them; the session's own plan reads as usual.
#[tokio::test]
async fn the_file_tools_ask_before_reading_a_private_place_and_searches_skip_them() {
    use waymark_protocol::EventKind;
    let h = Harness::new(Config::default());
    let home = fake_home(h.dir.path());
    let data = h.dir.path().join("data").canonicalize().unwrap();
    let env = tool_env(&home);
    let rt = h.reopen(|o| o.process_env = env.clone());
    let other = super::super::harness::idle_session(&h, &rt);
    let other_plan = data
        .join("sessions")
        .join(other.id())
        .join("artifacts/plan.md");
    std::fs::create_dir_all(other_plan.parent().unwrap()).unwrap();
    std::fs::write(&other_plan, "## Summary\nother-session-secret\n").unwrap();
    let read = |p: &Path| json!({"name": "read_file", "arguments": {"path": p}});
    let ssh = home.join(".ssh/id_ed25519");
    for (mode, plan) in [
        (PermissionMode::Auto, true),
        (PermissionMode::ReadOnly, false),
        (PermissionMode::Ask, false),
    ] {
        let s = session_on(
            &h,
            &rt,
            &h.ws,
            json!({"responses": [
                {"tool_calls": [read(&ssh)]},
                {"tool_calls": [read(&other_plan)]},
                {"tool_calls": [read(Path::new("/proc/self/environ"))]},
                {"text": "done"}
            ]}),
            mode,
        );
        let op = if plan {
            plan_entry("look")
        } else {
            user("look")
        };
        let ev = run(&s, op).await;
        let asked = ev.iter().find_map(|e| match &e.kind {
            EventKind::QuestionnaireOpened { id, question } => Some((id.clone(), question.clone())),
            _ => None,
        });
        let (q, question) = asked.unwrap_or_else(|| panic!("{mode:?}: no question: {ev:?}"));
        let waymark_protocol::Question::Permission(p) = *question else {
            panic!("{question:?}")
        };
        assert!(p.summary.contains("private"), "{}", p.summary);
        assert!(
            p.grants.session.is_none() && p.grants.prefix.is_none(),
            "{p:?}"
        );
        assert!(
            s.submit(answer(&q, waymark_protocol::Answer::AllowForSession))
                .await
                .is_err(),
            "a session grant was accepted"
        );
        let ev = run(
            &s,
            answer(&q, waymark_protocol::Answer::Deny { message: None }),
        )
        .await;
        // The next private reads ask again: another session's plan, then the runtime's own
        // environment (the provider key lives there).
        let asked_again = |ev: &[waymark_protocol::Event]| {
            ev.iter().find_map(|e| match &e.kind {
                EventKind::QuestionnaireOpened { id, .. } => Some(id.clone()),
                _ => None,
            })
        };
        let q = asked_again(&ev)
            .unwrap_or_else(|| panic!("{mode:?}: the second private read did not ask"));
        let ev = run(
            &s,
            answer(&q, waymark_protocol::Answer::Deny { message: None }),
        )
        .await;
        assert!(
            asked_again(&ev).is_some(),
            "{mode:?}: reading /proc/self/environ did not ask: {ev:?}"
        );
        let shown = serde_json::to_string(&rt.events(s.id(), 0, 10_000).unwrap()).unwrap();
        assert!(!shown.contains("ssh-secret") && !shown.contains("other-session-secret"));
        s.shutdown().await.unwrap();
    }
    // Outside plan mode, `auto` reads it (the user let the agent do anything); once allowed,
    // the read goes through.
    let s = session_on(
        &h,
        &rt,
        &home,
        json!({"responses": [
            {"tool_calls": [
                read(&ssh),
                json!({"name": "grep", "arguments": {"pattern": "secret"}}),
                json!({"name": "glob", "arguments": {"pattern": "**/*"}}),
                read(Path::new("${session_dir}/artifacts")),
            ]},
            {"text": "done"}
        ]}),
        PermissionMode::Auto,
    );
    let r = results(&run(&s, user("look")).await);
    assert!(
        r[0].2.contains("ssh-secret"),
        "auto reads what it is told: {:?}",
        r[0]
    );
    // The searches of the home folder skip its private places.
    for (_, _, out) in &r[1..3] {
        for secret in [
            "ssh-secret",
            "aws-secret",
            "gh-secret",
            "settings-secret",
            ".ssh/",
            ".aws/",
        ] {
            assert!(
                !out.contains(secret),
                "a search entered a private place: {out}"
            );
        }
    }
    assert!(r[2].2.contains("notes.txt"), "{:?}", r[2]);
    s.shutdown().await.unwrap();

    // The reviewer is refused, and never asks.
    let mut c = Config::default();
    c.goal.verification = Some(Verification::Subagent);
    let h2 = Harness::new(c);
    let rt2 = h2.reopen(|o| o.process_env = env.clone());
    let s = session_on(
        &h2,
        &rt2,
        &h2.ws,
        json!({
            "responses": [{"text": "Done.", "tool_calls": [{"name": "update_goal", "arguments":
                {"mode": "status", "status": "complete", "message": "all done"}}]}],
            "verifier": [{"text": "Checking.", "tool_calls": [read(&ssh)]}, {"text": "VERDICT: PASS"}]
        }),
        PermissionMode::Ask,
    );
    let ev = run(&s, user("/goal finish it")).await;
    assert!(
        !ev.iter()
            .any(|e| matches!(e.kind, EventKind::QuestionnaireOpened { .. }))
    );
    let out = verifier_results(&rt2, s.id());
    assert_eq!(out.len(), 1, "{out:?}");
    assert!(
        out[0].contains("private") && !out[0].contains("ssh-secret"),
        "{out:?}"
    );
    other.shutdown().await.unwrap();
    s.shutdown().await.unwrap();
}

/// A prefix grant for a read-only tool runs unsandboxed, so its operands could name any
/// file: one that leads into a private place (spelled with `~`, absolute, or relative to a
/// workspace that holds the home folder) asks again. A write tool aimed at a private place
/// asks showing only what it would write, never the file, and one aimed outside the workspace is refused at once.
#[tokio::test]
async fn grants_and_write_questions_keep_private_places_private() {
    let h = Harness::new(Config::default());
    let (home, rt) = home_runtime(&h);
    std::fs::write(home.join("a.txt"), "plain\n").unwrap();
    std::fs::create_dir(home.join("d\u{b}")).unwrap();
    let s = session_on(
        &h,
        &rt,
        &home,
        json!({"responses": [
            {"tool_calls": [bash("cat a.txt")]},
            {"tool_calls": [bash("cat a.txt notes.txt")]},
            {"tool_calls": [bash("cat ~/.ssh/id_ed25519")]},
            {"tool_calls": [bash(&format!("cat {}", home.join(".aws/credentials").display()))]},
            {"tool_calls": [bash("cat .netrc")]},
            {"tool_calls": [bash("cat /proc/self/cwd/.netrc")]},
            {"tool_calls": [bash("cat a.txt d\u{b}/../.ssh/id_ed25519")]},
            // A device is not a file: a terminal (keystrokes), the kernel log, a disk.
            {"tool_calls": [bash("cat a.txt /dev/null")]},
            {"tool_calls": [{"name": "edit", "arguments": {"path": ".ssh/id_ed25519", "old_string": "BEGIN OPENSSH", "new_string": "x"}}]},
            {"tool_calls": [{"name": "write", "arguments": {"path": "/etc/waymark-should-not-exist", "content": "x"}}]},
            {"text": "done"}
        ]}),
        PermissionMode::Ask,
    );
    let ev = run(&s, user("look")).await;
    let (q, _) = permission_asked(&ev).unwrap();
    let ev = run(&s, answer(&q, waymark_protocol::Answer::AllowPrefix)).await;
    // `cat a.txt notes.txt` ran under the grant; each private read asks again.
    let mut commands = Vec::new();
    let mut ev = ev;
    for _ in 0..6 {
        let (q, p) = permission_asked(&ev).expect("a private read under the grant asked");
        commands.push(p.command.clone().unwrap_or_default());
        ev = run(
            &s,
            answer(&q, waymark_protocol::Answer::Deny { message: None }),
        )
        .await;
    }
    assert!(commands[0].contains("~/.ssh"), "{commands:?}");
    assert!(commands[1].contains(".aws/credentials"), "{commands:?}");
    assert!(commands[2].contains(".netrc"), "{commands:?}");
    // The runtime and the command read `/proc/self` as two different processes.
    assert!(commands[3].contains("/proc/self/cwd"), "{commands:?}");
    // bash reads `d<VT>/../.ssh/id_ed25519` as one word, through the folder `d<VT>`.
    assert!(commands[4].contains(".ssh/id_ed25519"), "{commands:?}");
    assert_eq!(commands[5], "cat a.txt /dev/null");
    // The edit of a private file asks (no grant covers it) and does not show the file, only
    // what the call asks to change: nobody approves it blind.
    let (q, p) = permission_asked(&ev).expect("the edit asked");
    assert!(p.grants.session.is_none(), "{p:?}");
    let diff = p.files[0]
        .diff
        .as_deref()
        .expect("the requested change is shown");
    assert!(
        diff.contains("-BEGIN OPENSSH") && diff.contains("+x"),
        "{diff}"
    );
    assert!(!diff.contains("ssh-secret"), "{diff}");
    assert!(
        p.files[0]
            .note
            .as_deref()
            .is_some_and(|n| n.contains("private")),
        "{p:?}"
    );
    let ev = run(
        &s,
        answer(&q, waymark_protocol::Answer::Deny { message: None }),
    )
    .await;
    // The write outside the workspace is refused without a question.
    assert!(permission_asked(&ev).is_none(), "{ev:?}");
    let log = serde_json::to_string(&rt.events(s.id(), 0, 10_000).unwrap()).unwrap();
    for secret in ["ssh-secret", "aws-secret", "netrc-secret"] {
        assert!(!log.contains(secret), "{secret} reached the log");
    }
    assert!(log.contains("outside the workspace"), "{log}");
    assert!(!Path::new("/etc/waymark-should-not-exist").exists());
    s.shutdown().await.unwrap();
}

/// A granted search reads whole folders: naming one that holds a private place (the
/// workspace holding the home folder's stores, `/etc` with its secrets, `/`) asks again,
/// while a folder without one is covered.
#[tokio::test]
async fn a_granted_search_of_a_folder_holding_a_private_place_asks_again() {
    let h = Harness::new(Config::default());
    let (home, rt) = home_runtime(&h);
    std::fs::create_dir_all(home.join("code")).unwrap();
    std::fs::write(home.join("code/a.txt"), "plain\n").unwrap();
    let s = session_on(
        &h,
        &rt,
        &home,
        json!({"responses": [
            {"tool_calls": [bash("rg plain code")]},
            {"tool_calls": [bash("rg plain code/a.txt")]},
            {"tool_calls": [bash("rg secret .")]},
            {"tool_calls": [bash("rg root /etc")]},
            {"tool_calls": [bash("rg secret /")]},
            // No path: rg searches the workspace, which holds the home folder's stores.
            {"tool_calls": [bash("rg secret")]},
            {"text": "done"}
        ]}),
        PermissionMode::Ask,
    );
    let (q, _) = permission_asked(&run(&s, user("look")).await).unwrap();
    let mut ev = run(&s, answer(&q, waymark_protocol::Answer::AllowPrefix)).await;
    assert_eq!(results(&ev).len(), 2, "rg code/a.txt ran under the grant");
    let mut commands = Vec::new();
    for _ in 0..4 {
        let (q, p) =
            permission_asked(&ev).expect("a search of a folder holding a private place asked");
        commands.push(p.command.clone().unwrap_or_default());
        ev = run(
            &s,
            answer(&q, waymark_protocol::Answer::Deny { message: None }),
        )
        .await;
    }
    assert_eq!(
        commands,
        ["rg secret .", "rg root /etc", "rg secret /", "rg secret"]
    );
    s.shutdown().await.unwrap();
}

/// `diff` given folders compares every file they share by name and follows links to do it,
/// so a link inside a folder (one a sandboxed command made in its temp folder, or one the
/// repository holds) could lead into a private place: a granted `diff` covers files only.
#[tokio::test]
async fn a_granted_diff_of_folders_asks_again() {
    use std::os::unix::fs::symlink;
    let h = Harness::new(Config::default());
    let (home, rt) = home_runtime(&h);
    for d in ["docs", "other"] {
        std::fs::create_dir_all(h.ws.join(d)).unwrap();
    }
    symlink(home.join(".ssh/id_ed25519"), h.ws.join("docs/k")).unwrap();
    std::fs::write(h.ws.join("other/k"), "").unwrap();
    std::fs::write(h.ws.join("a.txt"), "a\n").unwrap();
    std::fs::write(h.ws.join("b.txt"), "b\n").unwrap();
    let s = session_on(
        &h,
        &rt,
        &h.ws,
        json!({"responses": [
            {"tool_calls": [bash("diff a.txt b.txt")]},
            {"tool_calls": [bash("diff b.txt a.txt")]},
            {"tool_calls": [bash("diff docs other")]},
            {"text": "done"}
        ]}),
        PermissionMode::Ask,
    );
    let (q, _) = permission_asked(&run(&s, user("look")).await).unwrap();
    let ev = run(&s, answer(&q, waymark_protocol::Answer::AllowPrefix)).await;
    assert_eq!(
        results(&ev).len(),
        2,
        "diff b.txt a.txt ran under the grant"
    );
    let (q, p) = permission_asked(&ev).expect("the diff of folders asked");
    assert_eq!(p.command.as_deref(), Some("diff docs other"));
    run(
        &s,
        answer(&q, waymark_protocol::Answer::Deny { message: None }),
    )
    .await;
    let log = serde_json::to_string(&rt.events(s.id(), 0, 10_000).unwrap()).unwrap();
    assert!(!log.contains("ssh-secret"), "{log}");
    s.shutdown().await.unwrap();
}

/// A hidden file the home folder gets while the session runs (`vault login` writing
/// `~/.vault-token`) is private like the rest: the sandboxed shell of a workspace holding the
/// home cannot read it, and the file tools ask.
#[tokio::test]
async fn a_hidden_home_file_made_during_the_session_is_private() {
    let h = Harness::new(Config::default());
    let (home, rt) = home_runtime(&h);
    let s = session_on(
        &h,
        &rt,
        &home,
        json!({"responses": [
            {"tool_calls": [bash("cat notes.txt")]},
            {"text": "looked"},
            {"tool_calls": [
                bash("cat .vault-token"),
                {"name": "read_file", "arguments": {"path": ".vault-token"}}
            ]},
            {"text": "done"}
        ]}),
        PermissionMode::Auto,
    );
    let r = results(&run(&s, plan_entry("look")).await);
    assert!(r[0].2.contains("ordinary notes"), "{r:?}");
    std::fs::write(home.join(".vault-token"), "vault-secret").unwrap();
    let ev = run(&s, user("again")).await;
    let r = results(&ev);
    assert_eq!(r[0].0, "bash", "{r:?}");
    assert!(!r[0].2.contains("vault-secret"), "{r:?}");
    assert!(
        permission_asked(&ev).is_some(),
        "reading it with the file tools did not ask: {ev:?}"
    );
    let log = serde_json::to_string(&rt.events(s.id(), 0, 10_000).unwrap()).unwrap();
    assert!(!log.contains("vault-secret"), "{log}");
    s.shutdown().await.unwrap();
}

/// A patch whose new name differs from its old one writes the new file from the old one's
/// text and keeps the old: a copy. Of a private file it would put what Waymark keeps from
/// the model under a name anyone reads, so it is refused before anyone is asked, in every
/// mode; the tool refuses it on its own too.
#[tokio::test]
async fn a_patch_copying_a_private_file_elsewhere_is_refused() {
    let h = Harness::new(Config::default());
    let (home, rt) = home_runtime(&h);
    let copy = json!({"name": "apply_patch", "arguments": {"patch": "--- a/.ssh/id_ed25519\n+++ b/notes-copy.txt\n"}});
    let s = session_on(
        &h,
        &rt,
        &home,
        json!({"responses": [
            {"tool_calls": [copy.clone()]},
            {"text": "done"}
        ]}),
        PermissionMode::Auto,
    );
    let ev = run(&s, user("tidy")).await;
    assert!(permission_asked(&ev).is_none(), "{ev:?}");
    let r = results(&ev);
    assert_eq!(r[0].1, ToolStatus::Denied, "{r:?}");
    assert!(r[0].2.contains("would copy"), "{r:?}");
    assert!(!home.join("notes-copy.txt").exists());
    s.shutdown().await.unwrap();
}

/// An edit of a private file the user allowed once shows, in its result's diff, only what
/// the call asked to change: a hostile model cannot use the transcript (or the log) to read
/// what the file held around the line it edits.
#[tokio::test]
async fn the_diff_of_an_allowed_private_edit_shows_only_the_requested_change() {
    let h = Harness::new(Config::default());
    let (home, rt) = home_runtime(&h);
    let s = session_on(
        &h,
        &rt,
        &home,
        json!({"responses": [
            {"tool_calls": [{"name": "edit", "arguments": {"path": ".netrc", "old_string": "example.com", "new_string": "example.org"}}]},
            {"text": "done"}
        ]}),
        PermissionMode::Ask,
    );
    let (q, _) = permission_asked(&run(&s, user("edit")).await).expect("the edit asked");
    let ev = run(&s, answer(&q, waymark_protocol::Answer::AllowOnce)).await;
    let got = super::super::harness::changes(&ev);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].1, ToolStatus::Ok, "{got:?}");
    let diff = got[0].2[0].diff.as_deref().expect("a diff");
    assert!(
        diff.contains("-example.com") && diff.contains("+example.org"),
        "{diff}"
    );
    assert!(
        std::fs::read_to_string(home.join(".netrc"))
            .unwrap()
            .contains("example.org"),
        "the edit ran"
    );
    let log = serde_json::to_string(&rt.events(s.id(), 0, 10_000).unwrap()).unwrap();
    assert!(
        !log.contains("netrc-secret"),
        "the file's contents reached the log"
    );
    s.shutdown().await.unwrap();
}
