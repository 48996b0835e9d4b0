//! The pack a first checkpoint writes, read by the real git; and what a rewind preview shows
//! of odd file names.

use super::*;

/// Many new files at once (a first checkpoint) go into one pack in git's own format: the
/// real git reads every object of it, rewinds read it, a later checkpoint of a few changes
/// writes single objects beside it, and pruning drops a pack no checkpoint needs.
#[test]
fn a_first_checkpoint_of_many_files_is_one_pack_git_can_read() {
    let f = fixture();
    for i in 0..600 {
        write(
            &f.ws,
            &format!("d{}/f{i}.txt", i % 7),
            &format!("file {i}\n").repeat(i % 50 + 1),
        );
    }
    // One big one, over the entry header's first size bytes, and a link.
    write(&f.ws, "big.bin", &"x".repeat(300_000));
    std::os::unix::fs::symlink("d0/f0.txt", f.ws.join("link")).unwrap();
    let a = snap(&f);
    let objects = f.store.dir().join("objects");
    let packs: Vec<_> = std::fs::read_dir(objects.join("pack"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(packs.len(), 2, "one pack and its index: {packs:?}");
    // Beside it at most the link's target, stored as the walk meets it.
    let loose: usize = std::fs::read_dir(&objects)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().len() == 2)
        .map(|e| std::fs::read_dir(e.path()).unwrap().count())
        .sum();
    assert!(loose <= 1, "{loose} single objects beside the pack");
    // The real git checks the pack and reads the tree through it.
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .arg(format!("--git-dir={}", f.store.dir().display()))
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    std::fs::create_dir_all(f.store.dir().join("refs")).unwrap();
    std::fs::write(f.store.dir().join("HEAD"), "ref: refs/heads/none\n").unwrap();
    let idx = packs.iter().find(|p| p.ends_with(".idx")).unwrap();
    git(&[
        "verify-pack",
        &objects.join("pack").join(idx).display().to_string(),
    ]);
    let listed = git(&["ls-tree", "-r", "--name-only", &a.tree.to_string()]);
    assert_eq!(listed.lines().count(), 602, "{listed}");
    assert_eq!(
        git(&["cat-file", "-p", &format!("{}:d3/f10.txt", a.tree)]),
        "file 10\n".repeat(11)
    );
    // A few changes later: single objects, and the rewind reads the pack.
    write(&f.ws, "d1/f1.txt", "changed");
    std::fs::remove_file(f.ws.join("big.bin")).unwrap();
    let b = snap(&f);
    assert!(
        std::fs::read_dir(&objects)
            .unwrap()
            .flatten()
            .any(|e| e.file_name().len() == 2),
        "a few new objects are written singly"
    );
    let (_, back) = rewind(&f, &a);
    assert_eq!(back, a.tree);
    assert_eq!(
        std::fs::read_to_string(f.ws.join("big.bin")).unwrap().len(),
        300_000
    );
    // Kept: the pack stays while a kept checkpoint needs it; with none, it goes.
    f.store.prune(&[b.tree], &[b.modes]).unwrap();
    assert!(objects.join("pack").join(idx).exists());
    for e in std::fs::read_dir(&f.ws).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() && !p.is_symlink() {
            std::fs::remove_dir_all(p).unwrap();
        } else {
            std::fs::remove_file(p).unwrap();
        }
    }
    write(&f.ws, "only.txt", "alone");
    // Bits of its own, so its mode record is not the one the pack holds for `a`.
    std::fs::set_permissions(
        f.ws.join("only.txt"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let c = snap(&f);
    f.store.prune(&[c.tree], &[c.modes]).unwrap();
    assert!(!objects.join("pack").join(idx).exists());
    let (_, now) = rewind(&f, &c);
    assert_eq!(now, c.tree);
}

/// A file name with line breaks in it cannot forge lines in a rewind preview's diff: the
/// header names it on one line.
#[test]
fn a_file_name_with_newlines_forges_no_diff_lines() {
    let f = fixture();
    let id = f.store.write(gix_object::Kind::Blob, b"ok\n").unwrap();
    let name = "n\n@@ -1 +1 @@\n-rm -rf /\n+ok";
    let entry = Entry {
        kind: EntryKind::Blob,
        id,
    };
    let (diff, _) = crate::preview::diff_of(&f.store, name, None, Some(&entry)).unwrap();
    let diff = diff.unwrap();
    assert!(
        !diff.lines().any(|l| l == "-rm -rf /"),
        "a forged line: {diff}"
    );
    assert_eq!(
        diff.lines().filter(|l| l.starts_with("@@")).count(),
        1,
        "{diff}"
    );
}
