//! The limits on what one checkpoint takes (`checkpoints.max_files`, `checkpoints.max_total_mb`),
//! attacked as a workspace a hostile model controls would attack them.

use super::*;

/// A workspace over the limits (entries, or bytes to keep) is refused before anything is
/// read or stored, on one thread (a first checkpoint) or on every core (a big one after).
#[test]
fn a_workspace_over_the_limits_is_refused_and_nothing_is_stored() {
    let f = fixture();
    for i in 0..150 {
        write(&f.ws, &format!("d{}/f{i:03}.txt", i % 7), "x");
    }
    let few = Limits {
        max_entries: 100,
        ..Limits::default()
    };
    let e = f.store.snapshot(&f.ws, &few).unwrap_err();
    assert!(matches!(e, CheckpointError::TooBig(_)), "{e}");
    assert!(e.to_string().contains("checkpoints.max_files"), "{e}");
    assert_eq!(tally(&f.store.dir().join("objects")).0, 0, "objects stored");
    // Bytes: three files of 600 KB over a 1 MB cap; a file over max_file_mb does not count.
    let g = fixture();
    for i in 0..3 {
        std::fs::write(g.ws.join(format!("big{i}.bin")), vec![1u8; 600 * 1024]).unwrap();
    }
    let small = Limits {
        max_total_bytes: 1024 * 1024,
        ..Limits::default()
    };
    let e = g.store.snapshot(&g.ws, &small).unwrap_err();
    assert!(e.to_string().contains("checkpoints.max_total_mb"), "{e}");
    assert!(e.to_string().contains("2 MB"), "{e}");
    assert_eq!(tally(&g.store.dir().join("objects")).0, 0, "objects stored");
    let left_out = Limits {
        max_file_bytes: 500 * 1024,
        ..small
    };
    let s = g.store.snapshot(&g.ws, &left_out).unwrap();
    assert_eq!(s.skipped.len(), 3);
    // A workspace listed on every core (the cache knows over 2000 paths) stops there too.
    let h = fixture();
    for i in 0..2100 {
        write(&h.ws, &format!("d{}/f{i:04}.txt", i % 13), "y");
    }
    h.store.snapshot(&h.ws, &Limits::default()).unwrap();
    for i in 0..200 {
        write(&h.ws, &format!("e{}/g{i:04}.txt", i % 5), "z");
    }
    let e = h
        .store
        .snapshot(
            &h.ws,
            &Limits {
                max_entries: 2150,
                ..Limits::default()
            },
        )
        .unwrap_err();
    assert!(e.to_string().contains("more than 2150"), "{e}");
    h.store.snapshot(&h.ws, &Limits::default()).unwrap();
}

/// Files that grow after the listing (a background job racing the checkpoint, sparse growth
/// included) are read no further than the size listed, and left out, noted; and the threads
/// reading together never read past the limit on what one checkpoint reads.
#[test]
fn files_that_grow_after_the_listing_are_held_to_the_total() {
    let f = fixture();
    let mut files = Vec::new();
    for i in 0..8 {
        let rel = format!("g{i}.bin");
        write(&f.ws, &rel, "small");
        let st = rustix::fs::stat(f.ws.join(&rel)).unwrap();
        files.push((rel, st, EntryKind::Blob));
    }
    for (rel, _, _) in &files {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(f.ws.join(rel))
            .unwrap();
        file.set_len(1 << 30).unwrap();
    }
    let limits = Limits {
        max_total_bytes: 1024 * 1024,
        ..Limits::default()
    };
    let root = f.ws.canonicalize().unwrap();
    let reads = crate::snapshot::Reads::new(limits.max_total_bytes);
    let got = f.store.read_all(&root, &files, &limits, &reads).unwrap();
    assert!(
        got.iter()
            .all(|(_, r)| r.as_ref().is_err_and(|e| e.to_string().contains("grew"))),
        "every grown file left out"
    );
    assert_eq!(reads.done(), 8 * 6, "read past the sizes listed");
    assert_eq!(tally(&f.store.dir().join("objects")).0, 0);
    // Many files read on every core: what they read together stays within the limit.
    let g = fixture();
    let mut files = Vec::new();
    for i in 0..300 {
        let rel = format!("h{i:03}.bin");
        std::fs::write(g.ws.join(&rel), vec![i as u8; 4096]).unwrap();
        let st = rustix::fs::stat(g.ws.join(&rel)).unwrap();
        files.push((rel, st, EntryKind::Blob));
    }
    let root = g.ws.canonicalize().unwrap();
    let reads = crate::snapshot::Reads::new(limits.max_total_bytes);
    let e = g
        .store
        .read_all(&root, &files, &limits, &reads)
        .unwrap_err();
    assert!(e.to_string().contains("checkpoints.max_total_mb"), "{e}");
    assert!(
        reads.done() <= limits.max_total_bytes,
        "{} bytes read past the limit",
        reads.done()
    );
}

/// Entries a checkpoint does not keep but notes (names that are not UTF-8), link targets and
/// the entries of one huge folder all count: none of them gets a workspace past the limits.
#[test]
fn what_the_limits_count_cannot_be_dodged() {
    use std::os::unix::ffi::OsStrExt as _;
    let few = Limits {
        max_entries: 100,
        ..Limits::default()
    };
    // Names that are not UTF-8 (each noted in the checkpoint).
    let f = fixture();
    for i in 0..200u8 {
        let name = [
            b'f',
            0xff,
            b'0' + i / 100,
            b'0' + i / 10 % 10,
            b'0' + i % 10,
        ];
        std::fs::write(f.ws.join(std::ffi::OsStr::from_bytes(&name)), "x").unwrap();
    }
    let e = f.store.snapshot(&f.ws, &few).unwrap_err();
    assert!(e.to_string().contains("checkpoints.max_files"), "{e}");
    // Link targets count as bytes to keep.
    let g = fixture();
    for i in 0..300 {
        std::os::unix::fs::symlink("t".repeat(4000), g.ws.join(format!("l{i:03}"))).unwrap();
    }
    let small = Limits {
        max_total_bytes: 1024 * 1024,
        ..Limits::default()
    };
    let e = g.store.snapshot(&g.ws, &small).unwrap_err();
    assert!(e.to_string().contains("checkpoints.max_total_mb"), "{e}");
    assert_eq!(tally(&g.store.dir().join("objects")).0, 0, "objects stored");
    // One folder of many entries: the walk stops inside it, not after it.
    let h = fixture();
    for i in 0..1000 {
        write(&h.ws, &format!("f{i:04}.txt"), "y");
    }
    let at = crate::Root::open(&h.ws).unwrap();
    let (root, fd) = (at.path.clone(), at.handle().unwrap());
    let listing = crate::walk::list(&root, fd, 1, &[], 100);
    assert_eq!(listing.over, Some(crate::walk::Over::Kept));
    assert!(listing.found.len() <= 101, "{}", listing.found.len());
    // Ignored entries are looked at, and bounded too (ten times the limit).
    write(&h.ws, ".gitignore", "*.txt\n");
    let at = crate::Root::open(&h.ws).unwrap();
    let (root, fd) = (at.path.clone(), at.handle().unwrap());
    let listing = crate::walk::list(&root, fd, 1, &[], 1000);
    assert_eq!(listing.over, None, "{} ignored files", 1000);
    let at = crate::Root::open(&h.ws).unwrap();
    let (root, fd) = (at.path.clone(), at.handle().unwrap());
    let listing = crate::walk::list(&root, fd, 1, &[], 50);
    assert_eq!(listing.over, Some(crate::walk::Over::LookedAt));
}

/// A folder whose path is longer than any the system can name is left out, noted (a rewind
/// then leaves it alone), so paths stay bounded.
#[test]
fn a_folder_with_a_path_too_long_is_left_out_noted() {
    let f = fixture();
    let mut rel = String::new();
    for i in 0..20 {
        if !rel.is_empty() {
            rel.push('/');
        }
        rel.push_str(&format!("{i:02}{}", "d".repeat(240)));
    }
    // Made one level at a time, relative to the last (the whole path is too long to name).
    let mut dir = std::fs::File::open(&f.ws).unwrap();
    for part in rel.split('/') {
        rustix::fs::mkdirat(&dir, part, rustix::fs::Mode::from_raw_mode(0o755)).unwrap();
        let fd = rustix::fs::openat(
            &dir,
            part,
            rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::RDONLY,
            rustix::fs::Mode::empty(),
        )
        .unwrap();
        dir = std::fs::File::from(fd);
    }
    let s = f.store.snapshot(&f.ws, &Limits::default()).unwrap();
    assert!(
        s.skipped
            .iter()
            .any(|k| k.reason.contains("longer than 4096 bytes")),
        "{:?}",
        s.skipped.iter().map(|k| &k.reason).collect::<Vec<_>>()
    );
    let deepest = f
        .store
        .files(&s.tree)
        .unwrap()
        .keys()
        .map(|k| k.len())
        .max();
    assert!(deepest.unwrap_or(0) <= 4096 + 256, "{deepest:?}");
}

/// What a checkpoint records about what it left out counts as bytes to keep, and ignore files
/// past 16 MiB in all stop the walk (rather than leave out whichever folder came last).
#[test]
fn notes_and_ignore_files_count_too() {
    // A chain of folders close to 4096 bytes, then many folders past it: each is noted with
    // its long path.
    let f = fixture();
    let mut dir = std::fs::File::open(&f.ws).unwrap();
    let open = |at: &std::fs::File, name: &str| {
        std::fs::File::from(
            rustix::fs::openat(
                at,
                name,
                rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::RDONLY,
                rustix::fs::Mode::empty(),
            )
            .unwrap(),
        )
    };
    for i in 0..16 {
        let name = format!("{i:02}{}", "c".repeat(240));
        rustix::fs::mkdirat(&dir, name.as_str(), rustix::fs::Mode::from_raw_mode(0o755)).unwrap();
        dir = open(&dir, &name);
    }
    for i in 0..300 {
        let name = format!("{i:03}{}", "e".repeat(240));
        rustix::fs::mkdirat(&dir, name.as_str(), rustix::fs::Mode::from_raw_mode(0o755)).unwrap();
    }
    let small = Limits {
        max_total_bytes: 1024 * 1024,
        ..Limits::default()
    };
    let e = f.store.snapshot(&f.ws, &small).unwrap_err();
    assert!(e.to_string().contains("checkpoints.max_total_mb"), "{e}");
    // Seventeen folders with an ignore file of 1 MiB each (one file, linked).
    let g = fixture();
    let big = g._dir.path().join("ignore");
    std::fs::write(&big, format!("#{}\n", "x".repeat(1024 * 1024 - 3))).unwrap();
    for i in 0..17 {
        let d = g.ws.join(format!("d{i:02}"));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::hard_link(&big, d.join(".gitignore")).unwrap();
    }
    let e = g.store.snapshot(&g.ws, &Limits::default()).unwrap_err();
    assert!(
        e.to_string().contains("ignore files of more than 16 MiB"),
        "{e}"
    );
}

/// A folder whose listing fails outright on one of the walk's threads is left out, noted,
/// and the walk still ends (the other threads are not left waiting on it).
#[test]
fn a_folder_whose_listing_fails_is_noted_and_the_walk_ends() {
    let f = fixture();
    for i in 0..40 {
        write(&f.ws, &format!("d{}/f{i:02}.txt", i % 4), "x");
    }
    write(&f.ws, "zz-fails-here/kept.txt", "y");
    *crate::walk::FAIL_LISTING.lock().unwrap() = Some("zz-fails-here".into());
    let at = crate::Root::open(&f.ws).unwrap();
    let (root, fd) = (at.path.clone(), at.handle().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(crate::walk::list(&root, fd, 2, &[], 1000));
    });
    let listing = rx
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("the walk ended");
    *crate::walk::FAIL_LISTING.lock().unwrap() = None;
    assert!(
        listing
            .notes
            .iter()
            .any(|(rel, why)| rel == "zz-fails-here" && why.contains("could not be listed")),
        "{:?}",
        listing.notes
    );
    assert_eq!(
        listing
            .found
            .iter()
            .filter(|e| e.rel.starts_with("d"))
            .count(),
        44
    );
}
