//! What came since and cannot simply be removed: entries the undo checkpoint could not take,
//! folders shut to the user, a workspace on another file system than the store, and a store
//! damaged behind the restore's back.

use super::*;

fn chmod(p: &Path, bits: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(bits)).unwrap();
}

/// Restores `target` into `ws` from a checkpoint taken now with `limits`, telling the
/// restore what that checkpoint left out, as a rewind does.
fn rewind_in(f: &Fixture, ws: &Path, target: &Snapshot, limits: &Limits) -> Result<Restored> {
    let root = crate::Root::open(ws).unwrap();
    let now = f.store.snapshot_of(&root, limits).unwrap();
    let current: Vec<String> = now.skipped.iter().map(|s| s.path.clone()).collect();
    let opts = RestoreOptions {
        current_left_out: &current,
        ..RestoreOptions::default()
    };
    f.store
        .restore_at(&root, &now.point(), &target.point(), &opts)
}

/// [`rewind_in`] the fixture's workspace, which must succeed.
fn rewind_noting(f: &Fixture, target: &Snapshot, limits: &Limits) -> Restored {
    rewind_in(f, &f.ws, target, limits).unwrap()
}

/// Fourth red-team: what came since but the undo checkpoint could not take (a file shut to
/// the user, one over the size limit, files in a folder shut to the user) stayed after the
/// rewind, which said only what it reverted. It goes aside like anything else that came since.
#[test]
fn what_the_undo_checkpoint_could_not_take_still_goes() {
    super::modes::as_an_ordinary_user();
    let f = fixture();
    write(&f.ws, "a.txt", "one\n");
    write(&f.ws, "ro/kept.txt", "kept\n");
    let limits = Limits {
        max_file_bytes: 1024,
        ..Limits::default()
    };
    let a = f.store.snapshot(&f.ws, &limits).unwrap();
    write(&f.ws, "a.txt", "two\n");
    write(&f.ws, "evil.sh", "#!/bin/sh\n");
    chmod(&f.ws.join("evil.sh"), 0o000);
    write(&f.ws, "big.bin", &"x".repeat(4096));
    write(&f.ws, "ro/new.txt", "planted\n");
    chmod(&f.ws.join("ro"), 0o000);
    let done = rewind_noting(&f, &a, &limits);
    assert_eq!(
        std::fs::read_to_string(f.ws.join("a.txt")).unwrap(),
        "one\n"
    );
    assert!(!f.ws.join("evil.sh").exists());
    assert!(!f.ws.join("big.bin").exists());
    assert!(!f.ws.join("ro/new.txt").exists());
    assert_eq!(
        std::fs::read_to_string(f.ws.join("ro/kept.txt")).unwrap(),
        "kept\n"
    );
    let aside = done.moved_aside.expect("moved aside");
    assert_eq!(
        std::fs::metadata(aside_entry(&aside, "big.bin"))
            .unwrap()
            .len(),
        4096
    );
    aside_entry(&aside, "evil.sh");
    let ro = aside_entry(&aside, "ro");
    chmod(&ro, 0o700);
    assert_eq!(
        std::fs::read_to_string(ro.join("new.txt")).unwrap(),
        "planted\n"
    );
}

/// Fourth red-team: a read-only folder (with a file shut to the user inside) standing where
/// the checkpoint has a file stopped the rewind partway: moving a folder to another parent
/// needs to write its own `..`. The owner's write bit is added to get it aside.
#[test]
fn a_read_only_folder_in_the_way_goes_aside() {
    super::modes::as_an_ordinary_user();
    let f = fixture();
    write(&f.ws, "x", "a file\n");
    write(&f.ws, "a.txt", "one\n");
    let a = snap(&f);
    std::fs::remove_file(f.ws.join("x")).unwrap();
    write(&f.ws, "x/f", "inside\n");
    chmod(&f.ws.join("x/f"), 0o000);
    chmod(&f.ws.join("x"), 0o555);
    write(&f.ws, "a.txt", "two\n");
    let (done, tree) = rewind(&f, &a);
    assert_eq!(tree, a.tree);
    assert_eq!(std::fs::read_to_string(f.ws.join("x")).unwrap(), "a file\n");
    let moved = aside_entry(&done.moved_aside.expect("moved aside"), "x");
    assert!(moved.join("f").exists());
}

/// Fourth red-team: with the workspace on another file system than the data folder, moving
/// something aside failed (a rename cannot cross), after other files had changed. It is
/// copied aside, then removed.
#[test]
fn a_workspace_on_another_file_system_still_moves_things_aside() {
    use std::os::unix::fs::MetadataExt as _;
    let shm = tempfile::tempdir_in("/dev/shm").expect("a folder in /dev/shm");
    let f = fixture();
    assert_ne!(
        std::fs::metadata(shm.path()).unwrap().dev(),
        std::fs::metadata(f.store.dir()).unwrap().dev(),
        "the test needs two file systems"
    );
    let ws = shm.path().join("ws");
    write(&ws, "x", "a file\n");
    write(&ws, "a.txt", "one\n");
    let a = f.store.snapshot(&ws, &Limits::default()).unwrap();
    std::fs::remove_file(ws.join("x")).unwrap();
    write(&ws, "x/inner", "inner\n");
    write(&ws, "a.txt", "two\n");
    write(&ws, "new.txt", "new\n");
    let now = f.store.snapshot(&ws, &Limits::default()).unwrap();
    // Written since the undo checkpoint: they must go aside, not away.
    std::thread::sleep(std::time::Duration::from_millis(10));
    write(&ws, "new.txt", "newer\n");
    write(&ws, "x/late/deep.txt", "late\n");
    std::os::unix::fs::symlink("late/deep.txt", ws.join("x/late-link")).unwrap();
    let done = f.store.restore(&ws, &now.point(), &a.point(), &[]).unwrap();
    assert_eq!(std::fs::read_to_string(ws.join("x")).unwrap(), "a file\n");
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "one\n");
    assert!(!ws.join("new.txt").exists());
    let aside = done.moved_aside.expect("moved aside");
    // In the store's file system, copied whole, links as links.
    assert_eq!(
        std::fs::metadata(&aside).unwrap().dev(),
        std::fs::metadata(f.store.dir()).unwrap().dev()
    );
    let x = aside_entry(&aside, "x");
    assert_eq!(
        std::fs::read_to_string(x.join("late/deep.txt")).unwrap(),
        "late\n"
    );
    assert_eq!(
        std::fs::read_link(x.join("late-link")).unwrap(),
        Path::new("late/deep.txt")
    );
    assert_eq!(
        std::fs::read_to_string(aside_entry(&aside, "new.txt")).unwrap(),
        "newer\n"
    );
}

/// Fourth red-team: an object whose loose file was rewritten with other content (still a
/// valid object) was trusted when the same content was stored again, so every later
/// checkpoint named damaged content. A stored object is read back before it is trusted, and
/// a damaged one written again.
#[test]
fn a_damaged_object_is_written_again_when_its_content_comes_back() {
    let f = fixture();
    let id = f
        .store
        .write(gix_object::Kind::Blob, b"same-content\n")
        .unwrap();
    let other = f.store.write(gix_object::Kind::Blob, b"other\n").unwrap();
    let path = loose(&f, &id);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::copy(loose(&f, &other), &path).unwrap();
    assert!(f.store.read(&id, gix_object::Kind::Blob).is_err());
    f.store
        .write(gix_object::Kind::Blob, b"same-content\n")
        .unwrap();
    assert_eq!(
        f.store.read(&id, gix_object::Kind::Blob).unwrap(),
        b"same-content\n"
    );
}

/// Fourth red-team: the content of a file with another name (rewritten at the end as a file
/// of its own) was read from the store only after everything else had changed: a damaged
/// object stopped the rewind partway. It is read before anything changes.
#[test]
fn a_damaged_object_of_a_linked_file_changes_nothing() {
    let f = fixture();
    write(&f.ws, "f", "same-content\n");
    write(&f.ws, "a.txt", "one\n");
    let a = snap(&f);
    write(&f.ws, "a.txt", "two\n");
    std::fs::set_permissions(f.ws.join("f"), std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::hard_link(f.ws.join("f"), f.outside.join("link")).unwrap();
    let now = snap(&f);
    // Damaged after the undo checkpoint was taken.
    let id = a.point().tree;
    let blob = f.store.files(&id).unwrap()["f"].id;
    let other = f.store.write(gix_object::Kind::Blob, b"other\n").unwrap();
    let path = loose(&f, &blob);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::copy(loose(&f, &other), &path).unwrap();
    let e = f
        .store
        .restore(&f.ws, &now.point(), &a.point(), &[])
        .unwrap_err();
    assert!(
        e.to_string().contains("does not hold what its name says"),
        "{e}"
    );
    assert_eq!(
        std::fs::read_to_string(f.ws.join("a.txt")).unwrap(),
        "two\n"
    );
}

/// Fifth red-team: with the workspace on another file system than the store, a 4 GB sparse
/// file in the way was copied aside whole (a 1 TB one would fill the disk), and a folder
/// 30,000 deep crashed the rewind (the copy went one call deeper per folder). Both are
/// measured first, without going deep, and refused with a clear error naming them.
#[test]
fn what_cannot_be_copied_aside_is_refused_clearly() {
    use std::os::unix::fs::MetadataExt as _;
    let shm = tempfile::tempdir_in("/dev/shm").expect("a folder in /dev/shm");
    let f = &fixture();
    assert_ne!(
        std::fs::metadata(shm.path()).unwrap().dev(),
        std::fs::metadata(f.store.dir()).unwrap().dev(),
        "the test needs two file systems"
    );
    let ws = shm.path().join("ws");
    write(&ws, "a.txt", "one\n");
    let a = f.store.snapshot(&ws, &Limits::default()).unwrap();
    // Sparse: it takes no room in /dev/shm, and would take its whole size as a copy.
    let big = std::fs::File::create(ws.join("big.bin")).unwrap();
    big.set_len(crate::aside::COPY_MAX + 1).unwrap();
    drop(big);
    let e = rewind_err(f, &ws, &a);
    assert!(e.to_string().contains("big.bin"), "{e}");
    assert!(
        e.to_string().contains("move it out of the workspace"),
        "{e}"
    );
    assert!(ws.join("big.bin").exists(), "left where it was");
    std::fs::remove_file(ws.join("big.bin")).unwrap();
    // A folder deeper than a path can name (the checkpoint leaves its depths out), made
    // one folder at a time.
    let deep = ws.join("deep");
    std::fs::create_dir(&deep).unwrap();
    let mut at = rustix::fs::openat(
        rustix::fs::CWD,
        &deep,
        crate::access::DIR,
        rustix::fs::Mode::empty(),
    )
    .unwrap();
    for _ in 0..3_000 {
        rustix::fs::mkdirat(&at, "d", rustix::fs::Mode::from_raw_mode(0o755)).unwrap();
        at = rustix::fs::openat(&at, "d", crate::access::DIR, rustix::fs::Mode::empty()).unwrap();
    }
    drop(at);
    let e = rewind_err(f, &ws, &a);
    assert!(e.to_string().contains("folders deep"), "{e}");
    assert!(deep.exists());
}

/// [`rewind_in`] `ws`, which must fail.
fn rewind_err(f: &Fixture, ws: &Path, target: &Snapshot) -> CheckpointError {
    rewind_in(f, ws, target, &Limits::default()).unwrap_err()
}
