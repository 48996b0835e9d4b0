//! Worktrees against the real git, in temporary repositories.

use super::*;
use crate::db::WorktreeRow;

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

fn row(m: &Made) -> WorktreeRow {
    WorktreeRow {
        session_id: "s".into(),
        name: m.name.clone(),
        branch: m.branch.clone(),
        path: m.path.display().to_string(),
        repo: m.repo.display().to_string(),
        base_branch: m.base_branch.clone(),
        base_commit: m.base_commit.clone(),
        state: WorktreeState::Active,
        included: m.included.clone(),
        created_at: 0,
    }
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
    let w = row(&m);
    let (files, commits) = status(&w).unwrap();
    let names: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!((names, commits), (vec!["NEW.md", "src/lib.rs"], 0));
    assert!(diff(&w).unwrap().contains("+fn a() { /* better */ }"));
    let done = merge(&w, "Make a better").unwrap();
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
}

#[test]
fn a_conflicting_or_dirty_target_is_refused_and_nothing_changes() {
    let r = repo();
    let m = create(&r.main, &r.root, "clash").unwrap();
    let w = row(&m);
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
    let e = merge(&w, "Readme").unwrap_err();
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
    let e = merge(&w, "Readme").unwrap_err();
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
    assert_eq!(merge(&w, "x").unwrap_err().code(), "branch_moved");
}

#[test]
fn discard_removes_the_worktree_and_its_branch() {
    let r = repo();
    let m = create(&r.main, &r.root, "drop-me").unwrap();
    std::fs::write(m.path.join("scratch.txt"), "x").unwrap();
    discard(&row(&m)).unwrap();
    assert!(!m.path.exists());
    let branches = git(&r.main, &["branch", "--list", "waymark/*"]);
    assert!(branches.trim().is_empty(), "{branches}");
    let mut gone = row(&m);
    gone.state = WorktreeState::Discarded;
    assert_eq!(discard(&gone).unwrap_err().code(), "worktree_closed");
}

/// The worktree is the agent's to write, its `.git` file included. An agent that points that
/// file at a git folder of its own making, whose settings name a program for git to run
/// (`core.fsmonitor`, `diff.external`, a hook folder), gets nothing run when the user
/// reviews, diffs, merges or discards: Waymark names the worktree's real git folder itself.
#[test]
fn a_worktree_git_file_rewritten_by_the_agent_runs_nothing() {
    use std::os::unix::fs::PermissionsExt as _;
    let r = repo();
    let m = create(&r.main, &r.root, "evil").unwrap();
    let fake = m.path.join("notes/fake-git");
    std::fs::create_dir_all(fake.join("hooks")).unwrap();
    let marker = r._dir.path().join("ran");
    let prog = m.path.join("notes/prog.sh");
    std::fs::write(
        &prog,
        format!(
            "#!/bin/sh\necho \"$0 $*\" >> {}\nexit 0\n",
            marker.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).unwrap();
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

    let row = row(&m);
    let (files, _) = status(&row).unwrap();
    assert!(files.iter().any(|f| f.path == "README.md"), "{files:?}");
    let d = diff(&row).unwrap();
    assert!(d.contains("changed by the agent"), "{d}");
    merge(&row, "the agent's work").unwrap();
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
