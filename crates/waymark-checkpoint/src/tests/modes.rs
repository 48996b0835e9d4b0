//! Permission bits across a rewind: a private file never comes back readable by others.

use super::*;

fn mode(f: &Fixture, rel: &str) -> u32 {
    std::fs::symlink_metadata(f.ws.join(rel))
        .unwrap()
        .permissions()
        .mode()
        & 0o777
}

fn chmod(f: &Fixture, rel: &str, bits: u32) {
    std::fs::set_permissions(f.ws.join(rel), std::fs::Permissions::from_mode(bits)).unwrap();
}

/// The process's umask, as the kernel reports it.
fn umask() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("Umask:")).unwrap();
    u32::from_str_radix(line["Umask:".len()..].trim(), 8).unwrap()
}

/// The red-team's case: a `0600` secret the agent deletes (or rewrites and opens up) comes
/// back `0600` from a rewind, not `0644`, whatever the umask.
#[test]
fn a_private_file_comes_back_private() {
    let f = fixture();
    write(&f.ws, "secret.env", "TOKEN=1\n");
    chmod(&f, "secret.env", 0o600);
    write(&f.ws, "run.sh", "#!/bin/sh\n");
    chmod(&f, "run.sh", 0o750);
    write(&f.ws, "private/notes.txt", "mine\n");
    chmod(&f, "private/notes.txt", 0o640);
    chmod(&f, "private", 0o700);
    let a = snap(&f);
    // Deleted, rewritten wider, and a private folder gone.
    std::fs::remove_file(f.ws.join("secret.env")).unwrap();
    write(&f.ws, "run.sh", "#!/bin/sh\necho changed\n");
    chmod(&f, "run.sh", 0o777);
    std::fs::remove_dir_all(f.ws.join("private")).unwrap();
    rewind(&f, &a);
    assert_eq!(mode(&f, "secret.env"), 0o600);
    assert_eq!(mode(&f, "run.sh"), 0o750);
    assert_eq!(mode(&f, "private"), 0o700);
    assert_eq!(mode(&f, "private/notes.txt"), 0o640);
    assert_eq!(
        std::fs::read_to_string(f.ws.join("secret.env")).unwrap(),
        "TOKEN=1\n"
    );
}

/// A file whose content is the same but whose bits were opened up (the agent's `chmod 644`)
/// gets its bits back too; so does a folder.
#[test]
fn bits_changed_alone_are_put_back() {
    let f = fixture();
    write(&f.ws, "secret.env", "TOKEN=1\n");
    chmod(&f, "secret.env", 0o600);
    write(&f.ws, "keys/id", "k\n");
    chmod(&f, "keys", 0o700);
    let a = snap(&f);
    chmod(&f, "secret.env", 0o644);
    chmod(&f, "keys", 0o755);
    let (done, _) = rewind(&f, &a);
    assert!(done.written.is_empty(), "no content changed: {done:?}");
    assert_eq!(mode(&f, "secret.env"), 0o600);
    assert_eq!(mode(&f, "keys"), 0o700);
}

/// A checkpoint taken before bits were recorded cannot say what a file's were: what it
/// writes gets the user's umask, and never more than the file it replaces had.
#[test]
fn without_a_record_files_get_the_umask_and_never_widen() {
    let f = fixture();
    write(&f.ws, "gone.txt", "old\n");
    write(&f.ws, "kept.env", "old\n");
    let a = snap(&f);
    let legacy = Point {
        tree: a.tree,
        modes: None,
    };
    std::fs::remove_file(f.ws.join("gone.txt")).unwrap();
    write(&f.ws, "kept.env", "new\n");
    chmod(&f, "kept.env", 0o600);
    let now = snap(&f);
    f.store.restore(&f.ws, &now.point(), &legacy, &[]).unwrap();
    assert_eq!(mode(&f, "gone.txt"), 0o666 & !umask());
    assert_eq!(mode(&f, "kept.env"), 0o600 & 0o666 & !umask());
}

/// A record a checkpoint names that is damaged stops the rewind before anything changes.
#[test]
fn a_damaged_mode_record_changes_nothing() {
    let f = fixture();
    write(&f.ws, "a.txt", "one\n");
    let a = snap(&f);
    write(&f.ws, "a.txt", "two\n");
    let now = snap(&f);
    let bogus = f
        .store
        .write(gix_object::Kind::Blob, b"not a record")
        .unwrap();
    let target = Point {
        tree: a.tree,
        modes: Some(bogus),
    };
    let e = f
        .store
        .restore(&f.ws, &now.point(), &target, &[])
        .unwrap_err();
    assert!(e.to_string().contains("not a record of file modes"), "{e}");
    assert_eq!(
        std::fs::read_to_string(f.ws.join("a.txt")).unwrap(),
        "two\n"
    );
}
