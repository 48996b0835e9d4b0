use super::*;
use std::os::unix::fs::PermissionsExt as _;

struct Fixture {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    outside: PathBuf,
    store: Store,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    let store = Store::open(&dir.path().join("store")).unwrap();
    Fixture {
        _dir: dir,
        ws,
        outside,
        store,
    }
}

fn write(ws: &Path, rel: &str, text: &str) {
    let p = ws.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// What was moved aside for path `rel` (the folder's manifest names it by number).
fn aside_entry(aside: &Path, rel: &str) -> PathBuf {
    let manifest = std::fs::read_to_string(aside.join("manifest")).unwrap_or_default();
    let n = manifest
        .lines()
        .find_map(|l| {
            l.split_once('\t')
                .filter(|(_, p)| *p == rel)
                .map(|(n, _)| n.to_string())
        })
        .unwrap_or_else(|| panic!("{rel} not moved aside into {}: {manifest}", aside.display()));
    aside.join(n)
}

fn snap(f: &Fixture) -> Snapshot {
    f.store.snapshot(&f.ws, &Limits::default()).unwrap()
}

/// Where the store keeps object `id` as a loose file.
fn loose(f: &Fixture, id: &ObjectId) -> PathBuf {
    let hex = id.to_hex().to_string();
    f.store
        .dir()
        .join("objects")
        .join(&hex[..2])
        .join(&hex[2..])
}

/// Now, in ms since the epoch.
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Restores `target` from the workspace's state now; the tree it then has.
fn rewind(f: &Fixture, target: &Snapshot) -> (Restored, ObjectId) {
    let now = snap(f);
    let done = f
        .store
        .restore(&f.ws, &now.point(), &target.point(), &[])
        .unwrap();
    (done, snap(f).tree)
}

#[test]
fn every_kind_of_change_rewinds_exactly_and_the_rewind_undoes() {
    let f = fixture();
    write(&f.ws, "keep.txt", "same");
    write(&f.ws, "edit.txt", "before");
    write(&f.ws, "gone.txt", "deleted later");
    write(&f.ws, "src/lib.rs", "fn a() {}");
    write(&f.ws, "script.sh", "#!/bin/sh\n");
    std::os::unix::fs::symlink("keep.txt", f.ws.join("link")).unwrap();
    let a = snap(&f);

    write(&f.ws, "edit.txt", "after");
    std::fs::remove_file(f.ws.join("gone.txt")).unwrap();
    write(&f.ws, "new/deep/file.txt", "created");
    std::fs::create_dir_all(f.ws.join("empty/dir")).unwrap();
    std::fs::set_permissions(
        f.ws.join("script.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::fs::remove_file(f.ws.join("link")).unwrap();
    std::os::unix::fs::symlink("edit.txt", f.ws.join("link")).unwrap();
    std::fs::remove_file(f.ws.join("src/lib.rs")).unwrap();
    std::fs::remove_dir(f.ws.join("src")).unwrap();
    write(&f.ws, "src", "a file where a folder was");
    let b = snap(&f);
    assert_ne!(a.tree, b.tree);
    let changed: Vec<String> = f
        .store
        .changes(Some(&a.tree), &b.tree)
        .unwrap()
        .iter()
        .map(|c| c.path().to_string())
        .collect();
    for p in [
        "edit.txt",
        "gone.txt",
        "new/deep/file.txt",
        "empty/dir",
        "script.sh",
        "link",
        "src",
        "src/lib.rs",
    ] {
        assert!(changed.contains(&p.to_string()), "{p} in {changed:?}");
    }
    assert!(!changed.contains(&"keep.txt".to_string()));

    let (_, back) = rewind(&f, &a);
    assert_eq!(back, a.tree);
    assert_eq!(
        std::fs::read_to_string(f.ws.join("edit.txt")).unwrap(),
        "before"
    );
    assert!(!f.ws.join("new").exists() && !f.ws.join("empty").exists());
    assert_eq!(
        std::fs::read_link(f.ws.join("link")).unwrap(),
        Path::new("keep.txt")
    );
    assert_eq!(
        std::fs::metadata(f.ws.join("script.sh"))
            .unwrap()
            .permissions()
            .mode()
            & 0o111,
        0
    );
    // Undo: forward again to the later state.
    let (_, forward) = rewind(&f, &b);
    assert_eq!(forward, b.tree);
    assert!(f.ws.join("empty/dir").is_dir());
}

/// A folder emptied (or filled) between two checkpoints is no change of its own: only the
/// files in it are (the preview once listed the folder itself as going).
#[test]
fn a_folder_emptied_lists_only_its_files() {
    let f = fixture();
    write(&f.ws, "src/greet.sh", "echo hi");
    let a = snap(&f);
    std::fs::remove_file(f.ws.join("src/greet.sh")).unwrap();
    let b = snap(&f);
    let paths = |from: &ObjectId, to: &ObjectId| -> Vec<(String, &'static str)> {
        f.store
            .changes(Some(from), to)
            .unwrap()
            .iter()
            .map(|c| {
                let kind = match c {
                    Change::Added(_) => "added",
                    Change::Modified(_) => "modified",
                    Change::Deleted(_) => "deleted",
                };
                (c.path().to_string(), kind)
            })
            .collect()
    };
    assert_eq!(
        paths(&a.tree, &b.tree),
        [("src/greet.sh".to_string(), "deleted")]
    );
    assert_eq!(
        paths(&b.tree, &a.tree),
        [("src/greet.sh".to_string(), "added")]
    );
    // The empty folder itself still rewinds: gone when the target has none.
    std::fs::remove_dir(f.ws.join("src")).unwrap();
    let c = snap(&f);
    assert_eq!(paths(&b.tree, &c.tree), [("src".to_string(), "deleted")]);
}

#[test]
fn identical_content_is_stored_once_and_git_is_left_out() {
    let f = fixture();
    std::fs::create_dir_all(f.ws.join(".git/objects")).unwrap();
    write(&f.ws, ".git/HEAD", "ref: refs/heads/main\n");
    write(&f.ws, "a.txt", "same bytes");
    write(&f.ws, "b.txt", "same bytes");
    let s = snap(&f);
    let files = f.store.files(&s.tree).unwrap();
    assert_eq!(files["a.txt"].id, files["b.txt"].id);
    assert!(!files.keys().any(|p| p.starts_with(".git")), "{files:?}");
    // Taking it again writes nothing new.
    let count = || tally(&f.store.dir().join("objects")).0;
    let before = count();
    assert_eq!(snap(&f).tree, s.tree);
    assert_eq!(count(), before);
}

/// The files under `dir`: how many, and their bytes.
fn tally(dir: &Path) -> (usize, u64) {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| {
            let m = e.metadata().unwrap();
            if m.is_dir() {
                tally(&e.path())
            } else {
                (1, m.len())
            }
        })
        .fold((0, 0), |(n, b), (m, c)| (n + m, b + c))
}

#[test]
fn ignored_files_are_neither_taken_nor_touched() {
    let f = fixture();
    write(&f.ws, ".gitignore", "target/\n*.log\n");
    std::fs::create_dir_all(f.ws.join(".git/info")).unwrap();
    write(&f.ws, ".git/info/exclude", "secret.env\n");
    write(&f.ws, "target/big.bin", "build output");
    write(&f.ws, "run.log", "log");
    write(&f.ws, "secret.env", "X=1");
    write(&f.ws, "main.rs", "v1");
    let a = snap(&f);
    let files = f.store.files(&a.tree).unwrap();
    assert_eq!(
        files.keys().cloned().collect::<Vec<_>>(),
        vec![".gitignore".to_string(), "main.rs".to_string()]
    );
    write(&f.ws, "main.rs", "v2");
    write(&f.ws, "run.log", "more log");
    rewind(&f, &a);
    assert_eq!(std::fs::read_to_string(f.ws.join("main.rs")).unwrap(), "v1");
    assert_eq!(
        std::fs::read_to_string(f.ws.join("run.log")).unwrap(),
        "more log"
    );
    assert!(f.ws.join("target/big.bin").exists() && f.ws.join("secret.env").exists());
}

/// A folder swapped for a link that points outside the workspace is put back as a folder:
/// nothing is written through the link, and the link is kept aside, not lost.
#[test]
fn a_folder_swapped_for_a_link_out_is_not_written_through() {
    let f = fixture();
    write(&f.ws, "conf/settings.toml", "mine");
    let a = snap(&f);
    std::fs::remove_dir_all(f.ws.join("conf")).unwrap();
    std::os::unix::fs::symlink(&f.outside, f.ws.join("conf")).unwrap();
    write(&f.outside, "settings.toml", "outside, untouched");
    let now = snap(&f);
    let done = f
        .store
        .restore(&f.ws, &now.point(), &a.point(), &[])
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(f.outside.join("settings.toml")).unwrap(),
        "outside, untouched"
    );
    assert!(
        std::fs::symlink_metadata(f.ws.join("conf"))
            .unwrap()
            .is_dir()
    );
    assert_eq!(
        std::fs::read_to_string(f.ws.join("conf/settings.toml")).unwrap(),
        "mine"
    );
    assert_eq!(snap(&f).tree, a.tree);
    // The link stood where the checkpoint needs a folder: it went aside, never followed.
    let aside = done.moved_aside.expect("the link went aside");
    assert!(
        std::fs::read_to_string(aside.join("manifest"))
            .unwrap()
            .contains("\tconf\n")
    );
    assert!(
        std::fs::symlink_metadata(aside.join("000001"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

/// The same, when the link appears after the checkpoint taken before the restore: the
/// folders are checked as they are written.
#[test]
fn a_link_that_appears_during_the_restore_is_moved_aside() {
    let f = fixture();
    write(&f.ws, "conf/settings.toml", "mine");
    let a = snap(&f);
    std::fs::remove_dir_all(f.ws.join("conf")).unwrap();
    let now = snap(&f);
    std::os::unix::fs::symlink(&f.outside, f.ws.join("conf")).unwrap();
    let done = f
        .store
        .restore(&f.ws, &now.point(), &a.point(), &[])
        .unwrap();
    assert!(
        !f.outside.join("settings.toml").exists(),
        "written through the link"
    );
    assert!(
        std::fs::symlink_metadata(f.ws.join("conf"))
            .unwrap()
            .is_dir()
    );
    let aside = done.moved_aside.expect("the link was moved aside");
    assert!(
        std::fs::symlink_metadata(aside_entry(&aside, "conf"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

/// A 2 GB sparse file is left out with a note, without being read.
#[test]
fn a_huge_sparse_file_is_skipped_with_a_note() {
    let f = fixture();
    let big = std::fs::File::create(f.ws.join("disk.img")).unwrap();
    big.set_len(2 * 1024 * 1024 * 1024).unwrap();
    write(&f.ws, "small.txt", "x");
    let s = snap(&f);
    // Not read into the store either.
    assert!(tally(&f.store.dir().join("objects")).1 < 64 * 1024);
    assert_eq!(s.skipped.len(), 1, "{:?}", s.skipped);
    assert_eq!(s.skipped[0].path, "disk.img");
    assert!(s.skipped[0].reason.contains("10 MB"), "{:?}", s.skipped);
    assert!(f.store.files(&s.tree).unwrap().contains_key("small.txt"));
    // A rewind leaves what it could not keep alone.
    write(&f.ws, "small.txt", "y");
    rewind(&f, &s);
    assert_eq!(
        std::fs::metadata(f.ws.join("disk.img")).unwrap().len(),
        2 * 1024 * 1024 * 1024
    );
}

/// A store whose objects were deleted or damaged gives a clear error and changes nothing.
#[test]
fn a_damaged_store_is_a_clear_error_and_changes_nothing() {
    let f = fixture();
    write(&f.ws, "a.txt", "one");
    let a = snap(&f);
    write(&f.ws, "a.txt", "two");
    let now = snap(&f);
    let blob = f.store.files(&a.tree).unwrap()["a.txt"].id;
    std::fs::remove_file(loose(&f, &blob)).unwrap();
    let e = f
        .store
        .restore(&f.ws, &now.point(), &a.point(), &[])
        .unwrap_err();
    assert!(matches!(e, CheckpointError::Corrupt { .. }), "{e}");
    assert!(e.to_string().contains("missing"), "{e}");
    assert_eq!(std::fs::read_to_string(f.ws.join("a.txt")).unwrap(), "two");
    // Garbage in place of an object.
    std::fs::write(loose(&f, &a.tree), b"junk").unwrap();
    let e = f.store.files(&a.tree).unwrap_err();
    assert!(e.to_string().contains("damaged"), "{e}");
    // A store folder that is not one.
    let bad = f.store.dir().parent().unwrap().join("bad");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(bad.join("objects"), b"").unwrap();
    assert!(Store::open(&bad).is_err());
}

fn set_mtime(path: &Path, when: std::time::SystemTime) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(when)
        .unwrap();
}

/// The stat cache never hides a change: a file rewritten with the same size and its old
/// modification time put back is still taken anew; a cache file that is garbage is rebuilt.
#[test]
fn the_stat_cache_misses_no_change_and_survives_garbage() {
    let f = fixture();
    write(&f.ws, "a.txt", "aaaa");
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    set_mtime(&f.ws.join("a.txt"), old);
    let a = snap(&f);
    std::fs::write(f.ws.join("a.txt"), "bbbb").unwrap();
    set_mtime(&f.ws.join("a.txt"), old);
    let b = snap(&f);
    assert_ne!(a.tree, b.tree, "the rewrite was missed");
    std::fs::write(
        f.store.dir().join("stat-cache"),
        "waymark-stat-cache 1 x\n\0garbage",
    )
    .unwrap();
    let reopened = Store::open(f.store.dir()).unwrap();
    assert_eq!(
        reopened.snapshot(&f.ws, &Limits::default()).unwrap().tree,
        b.tree
    );
}

/// A file the checkpoint just taken could not hold (now over the size limit) is moved aside
/// by a rewind, not overwritten: nothing that no checkpoint holds is lost.
#[test]
fn a_file_no_checkpoint_holds_is_moved_aside_not_overwritten() {
    let f = fixture();
    let small = Limits {
        max_file_bytes: 4096,
        ..Limits::default()
    };
    write(&f.ws, "model.bin", "small");
    let a = f.store.snapshot(&f.ws, &small).unwrap();
    std::fs::write(f.ws.join("model.bin"), vec![7u8; 8192]).unwrap();
    let now = f.store.snapshot(&f.ws, &small).unwrap();
    assert_eq!(now.skipped.len(), 1, "{:?}", now.skipped);
    let done = f
        .store
        .restore(&f.ws, &now.point(), &a.point(), &[])
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(f.ws.join("model.bin")).unwrap(),
        "small"
    );
    let aside = done.moved_aside.expect("the big file was moved aside");
    assert_eq!(
        std::fs::read(aside_entry(&aside, "model.bin")).unwrap(),
        vec![7u8; 8192]
    );
}

/// `.GIT` (another case of `.git`, the same folder on a case-blind disk) is left out too,
/// and a link whose target is not UTF-8 comes back as it was.
#[test]
fn git_in_any_case_is_left_out_and_odd_link_targets_round_trip() {
    use std::os::unix::ffi::OsStrExt as _;
    let f = fixture();
    write(&f.ws, ".GIT/config", "[core]");
    let odd = std::ffi::OsStr::from_bytes(b"target-\xff");
    std::os::unix::fs::symlink(odd, f.ws.join("odd")).unwrap();
    let a = snap(&f);
    assert!(
        !f.store
            .files(&a.tree)
            .unwrap()
            .keys()
            .any(|p| p.to_ascii_lowercase().starts_with(".git"))
    );
    std::fs::remove_file(f.ws.join("odd")).unwrap();
    rewind(&f, &a);
    assert_eq!(
        std::fs::read_link(f.ws.join("odd")).unwrap().as_os_str(),
        odd
    );
}

/// A pipe in the workspace is not a file to keep: the checkpoint neither waits on it nor
/// holds it.
#[test]
fn a_pipe_is_left_out_without_waiting() {
    let f = fixture();
    let fifo = f.ws.join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    write(&f.ws, "a.txt", "x");
    let s = snap(&f);
    let files = f.store.files(&s.tree).unwrap();
    assert!(
        files.contains_key("a.txt") && !files.contains_key("pipe"),
        "{files:?}"
    );
}

/// An ignore file that is a pipe (the walker would wait on it forever) or a link leaves its
/// folder out, noted; at the top, the ignore files are then not used; either way the
/// checkpoint ends.
#[test]
fn an_ignore_file_that_is_a_pipe_or_a_link_hangs_nothing() {
    let f = fixture();
    write(&f.ws, "sub/a.txt", "a");
    write(&f.ws, "ok/b.txt", "b");
    let made = std::process::Command::new("mkfifo")
        .arg(f.ws.join("sub/.gitignore"))
        .status()
        .unwrap();
    assert!(made.success());
    let s = snap(&f);
    let files = f.store.files(&s.tree).unwrap();
    assert!(
        files.contains_key("ok/b.txt") && !files.contains_key("sub/a.txt"),
        "{files:?}"
    );
    assert!(
        s.skipped
            .iter()
            .any(|k| k.reason.contains("not a plain file")),
        "{:?}",
        s.skipped
    );
    // At the top: a link to a device.
    std::os::unix::fs::symlink("/dev/zero", f.ws.join(".gitignore")).unwrap();
    let s = snap(&f);
    assert!(f.store.files(&s.tree).unwrap().contains_key("ok/b.txt"));
    assert!(
        s.skipped
            .iter()
            .any(|k| k.reason.contains("ignore files are not used")),
        "{:?}",
        s.skipped
    );
}

/// The rules git applies: a folder's own `.gitignore` wins over its parents', `!` takes a
/// file back, an ignored folder is not entered, and a worktree (`.git` a file) uses the
/// exclude file of the repository it belongs to.
#[test]
fn nested_ignore_files_apply_as_git_applies_them() {
    let f = fixture();
    write(&f.ws, ".gitignore", "*.log\n!keep.log\nbuild/\n");
    write(&f.ws, "a.log", "x");
    write(&f.ws, "keep.log", "x");
    write(&f.ws, "build/out.o", "x");
    write(&f.ws, "sub/.gitignore", "!*.log\nlocal.txt\n");
    write(&f.ws, "sub/b.log", "x");
    write(&f.ws, "sub/local.txt", "x");
    write(&f.ws, "sub/deeper/c.log", "x");
    write(&f.ws, "sub/deeper/local.txt", "x");
    // A worktree: `.git` names its folder in the main repository, whose exclude applies.
    let main = f.outside.join("main");
    write(&main, ".git/info/exclude", "private.txt\n");
    write(&main, ".git/worktrees/wt/commondir", "../..\n");
    write(
        &f.ws,
        ".git",
        &format!("gitdir: {}\n", main.join(".git/worktrees/wt").display()),
    );
    write(&f.ws, "private.txt", "x");
    let files = f.store.files(&snap(&f).tree).unwrap();
    assert_eq!(
        files.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            ".gitignore",
            "keep.log",
            "sub/.gitignore",
            "sub/b.log",
            "sub/deeper/c.log"
        ]
    );
}

/// A worktree's `.git` file may name a folder whose `commondir` is a pipe or a link to an
/// endless device: it is read as every ignore file is, so no checkpoint waits on it.
#[test]
fn a_commondir_that_is_a_pipe_or_dev_zero_hangs_nothing() {
    for planted in ["fifo", "zero"] {
        let f = fixture();
        write(&f.ws, "a.txt", "a");
        std::fs::create_dir_all(f.ws.join("evil")).unwrap();
        match planted {
            "fifo" => {
                let made = std::process::Command::new("mkfifo")
                    .arg(f.ws.join("evil/commondir"))
                    .status()
                    .unwrap();
                assert!(made.success());
            }
            _ => std::os::unix::fs::symlink("/dev/zero", f.ws.join("evil/commondir")).unwrap(),
        }
        write(&f.ws, ".git", "gitdir: evil\n");
        let (tx, rx) = std::sync::mpsc::channel();
        let (store, ws) = (f.store, f.ws.clone());
        std::thread::spawn(move || {
            let _ = tx.send(store.snapshot(&ws, &Limits::default()).map(|s| s.tree));
        });
        let got = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("the checkpoint waits on a {planted} commondir"));
        assert!(got.is_ok(), "{got:?}");
    }
}

/// What the target left out (ignored by its own rules then, too big then) is not taken for
/// something that came since: a rewind leaves it where it is.
#[test]
fn what_the_target_left_out_is_kept_by_a_rewind() {
    let f = fixture();
    let small = Limits {
        max_file_bytes: 4096,
        ..Limits::default()
    };
    write(&f.ws, ".gitignore", "secret.env\nsrc/\n");
    write(&f.ws, "secret.env", "TOKEN=mine\n");
    write(&f.ws, "src/lib.rs", "fn a() {}\n");
    std::fs::write(f.ws.join("big.bin"), vec![1u8; 8192]).unwrap();
    write(&f.ws, "keep.txt", "v1");
    let t = f.store.snapshot(&f.ws, &small).unwrap();
    let left_out: Vec<String> = t.skipped.iter().map(|s| s.path.clone()).collect();
    assert_eq!(left_out, ["big.bin"]);
    // Since then: the ignore rules were dropped, the big file got small, a file came.
    write(&f.ws, ".gitignore", "");
    std::fs::write(f.ws.join("big.bin"), b"small now").unwrap();
    write(&f.ws, "new.txt", "came since");
    write(&f.ws, "keep.txt", "v2");
    let u = f.store.snapshot(&f.ws, &small).unwrap();
    let done = f
        .store
        .restore(&f.ws, &u.point(), &t.point(), &left_out)
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(f.ws.join("secret.env")).unwrap(),
        "TOKEN=mine\n"
    );
    assert_eq!(
        std::fs::read_to_string(f.ws.join("src/lib.rs")).unwrap(),
        "fn a() {}\n"
    );
    assert_eq!(
        std::fs::read_to_string(f.ws.join("big.bin")).unwrap(),
        "small now"
    );
    assert!(!f.ws.join("new.txt").exists(), "what came since goes");
    assert_eq!(
        std::fs::read_to_string(f.ws.join("keep.txt")).unwrap(),
        "v1"
    );
    assert_eq!(done.kept, ["big.bin", "secret.env", "src/lib.rs"]);
}

/// A workspace that holds Waymark's data folder: the folder is never taken, so a rewind
/// cannot delete the store's own objects or roll its database back.
#[test]
fn the_data_folder_inside_a_workspace_is_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("home");
    let data = ws.join(".local/share/waymark");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("waymark.db"), b"the live database").unwrap();
    let store = Store::open(&data.join("sessions/s/checkpoints")).unwrap();
    let limits = Limits {
        skip: vec![data.clone()],
        ..Limits::default()
    };
    write(&ws, "notes.txt", "one");
    let t = store.snapshot(&ws, &limits).unwrap();
    assert!(
        store
            .files(&t.tree)
            .unwrap()
            .keys()
            .all(|p| !p.starts_with(".local/share/waymark")),
        "the data folder was taken"
    );
    std::fs::write(data.join("waymark.db"), b"the database, later").unwrap();
    write(&ws, "notes.txt", "two");
    let u = store.snapshot(&ws, &limits).unwrap();
    store.restore(&ws, &u.point(), &t.point(), &[]).unwrap();
    assert_eq!(
        std::fs::read_to_string(ws.join("notes.txt")).unwrap(),
        "one"
    );
    assert_eq!(
        std::fs::read(data.join("waymark.db")).unwrap(),
        b"the database, later"
    );
    store
        .files(&u.tree)
        .expect("the undo checkpoint still reads");
}

/// A path too long to keep in a name is moved aside under a number all the same.
#[test]
fn a_long_path_in_the_way_is_moved_aside_under_a_number() {
    let f = fixture();
    let small = Limits {
        max_file_bytes: 4096,
        ..Limits::default()
    };
    let long = format!("deep/{}", "n".repeat(240));
    write(&f.ws, &long, "small");
    let t = f.store.snapshot(&f.ws, &small).unwrap();
    std::fs::write(f.ws.join(&long), vec![7u8; 8192]).unwrap();
    let u = f.store.snapshot(&f.ws, &small).unwrap();
    let done = f.store.restore(&f.ws, &u.point(), &t.point(), &[]).unwrap();
    assert_eq!(std::fs::read_to_string(f.ws.join(&long)).unwrap(), "small");
    let aside = done.moved_aside.expect("moved aside");
    assert_eq!(
        std::fs::read(aside_entry(&aside, &long)).unwrap().len(),
        8192
    );
}

/// A workspace of many folders does not hold a descriptor for each at once: with the
/// process allowed 64, every file of 300 folders is still taken (run in a child process,
/// so the limit is its own).
#[test]
fn many_folders_do_not_run_out_of_descriptors() {
    const CHILD: &str = "WAYMARK_CHECKPOINT_FD_CHILD";
    if let Some(ws) = std::env::var_os(CHILD) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("store")).unwrap();
        let s = store.snapshot(Path::new(&ws), &Limits::default()).unwrap();
        let files = store.files(&s.tree).unwrap();
        assert_eq!((files.len(), s.skipped.len()), (300, 0), "{:?}", s.skipped);
        return;
    }
    let f = fixture();
    for i in 0..300 {
        write(&f.ws, &format!("d{i:03}/f.txt"), "x");
    }
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -n 64 && exec \"$0\" --exact tests::many_folders_do_not_run_out_of_descriptors --nocapture")
        .arg(&exe)
        .env(CHILD, &f.ws)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

mod aside;
mod extras;
mod limits;
mod mapped;
mod modes;
mod pack;
mod races;

/// A restore bringing back more than it reads up front (`PRELOAD_MAX`, 64 KiB in tests)
/// reads the rest one file at a time and comes out exact; one of those missing from the
/// store is still found before anything changes.
#[test]
fn a_large_restore_reads_in_turn_and_still_checks_first() {
    let f = fixture();
    for i in 0..40 {
        write(
            &f.ws,
            &format!("f{i:02}.txt"),
            &format!("{i:04} ").repeat(800),
        );
    }
    let a = snap(&f);
    for i in 0..40 {
        write(&f.ws, &format!("f{i:02}.txt"), "changed");
    }
    let (_, back) = rewind(&f, &a);
    assert_eq!(back, a.tree);
    assert_eq!(
        std::fs::read_to_string(f.ws.join("f39.txt")).unwrap(),
        "0039 ".repeat(800)
    );
    // The last file's object gone: refused with everything as it was.
    for i in 0..40 {
        write(&f.ws, &format!("f{i:02}.txt"), "again");
    }
    let now = snap(&f);
    let blob = f.store.files(&a.tree).unwrap()["f39.txt"].id;
    std::fs::remove_file(loose(&f, &blob)).unwrap();
    let e = f
        .store
        .restore(&f.ws, &now.point(), &a.point(), &[])
        .unwrap_err();
    assert!(e.to_string().contains("missing"), "{e}");
    for i in 0..40 {
        assert_eq!(
            std::fs::read_to_string(f.ws.join(format!("f{i:02}.txt"))).unwrap(),
            "again"
        );
    }
}
