//! Fifth red-team: what makes git wait forever (a FIFO where it reads a file) stops a
//! review with an error instead of hanging the app, and never stops a discard.

use super::*;

fn fifo(path: &Path) {
    let made = std::process::Command::new("mkfifo").arg(path).status();
    assert!(made.unwrap().success());
}

#[test]
fn a_fifo_git_reads_stops_the_review_with_an_error_and_discard_still_works() {
    let r = repo();
    let m = create(&r.main, &r.root, "fifo").unwrap();
    std::fs::remove_file(m.path.join(".gitignore")).unwrap();
    fifo(&m.path.join(".gitignore"));
    let w = m.row("s", 0);
    let e = status(&w).unwrap_err();
    assert!(e.to_string().contains("did not finish"), "{e}");
    discard(&w).unwrap();
    assert!(!m.path.exists());
}

#[test]
fn an_ignore_list_setting_naming_a_fifo_is_not_waited_on() {
    let r = repo();
    let m = create(&r.main, &r.root, "excl").unwrap();
    std::fs::write(m.path.join("src/lib.rs"), "fn a() { 1 }\n").unwrap();
    // The agent names a FIFO as the user's ignore list in the project's settings.
    let pipe = r._dir.path().join("pipe");
    fifo(&pipe);
    git(
        &r.main,
        &["config", "core.excludesFile", pipe.to_str().unwrap()],
    );
    let d = diff(&m.row("s", 0)).unwrap();
    assert!(d.diff.contains("+fn a() { 1 }"), "{}", d.diff);
}

/// The user's own ignore list is read once, when the review starts.
#[test]
fn the_users_ignore_list_is_honoured() {
    let r = repo();
    let m = create(&r.main, &r.root, "user-excl").unwrap();
    let list = r._dir.path().join("ignore");
    std::fs::write(&list, "*.swp\n").unwrap();
    git(
        &r.main,
        &["config", "core.excludesFile", list.to_str().unwrap()],
    );
    std::fs::write(m.path.join("notes.swp"), "editor state\n").unwrap();
    std::fs::write(m.path.join("kept.txt"), "kept\n").unwrap();
    let (files, _) = status(&m.row("s", 0)).unwrap();
    let names: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(names, ["kept.txt"]);
}
