//! What widens access besides the permission bits, and bits a rewind must not lose or cannot
//! set: access control lists, file capabilities, sticky folders, entries given to another
//! user, a workspace folder shut to the user or owned by another, and checkpoints from before
//! bits were recorded.

use super::*;
use std::os::unix::fs::MetadataExt as _;

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

fn chmod(p: &Path, bits: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(bits)).unwrap();
}

/// A POSIX access control list as the kernel stores it (`system.posix_acl_*`): the owner,
/// `nobody` (65534) with `named`, the group, the mask and others.
fn acl_for_nobody(named: u16, mask: u16) -> Vec<u8> {
    let mut b = 2u32.to_le_bytes().to_vec();
    let mut entry = |tag: u16, perm: u16, id: u32| {
        b.extend(tag.to_le_bytes());
        b.extend(perm.to_le_bytes());
        b.extend(id.to_le_bytes());
    };
    entry(0x01, 7, u32::MAX);
    entry(0x02, named, 65_534);
    entry(0x04, 7, u32::MAX);
    entry(0x10, mask, u32::MAX);
    entry(0x20, 7, u32::MAX);
    b
}

fn has_xattr(p: &Path, name: &str) -> bool {
    rustix::fs::lgetxattr(p, name, &mut [0u8; 256]).is_ok()
}

/// Fourth red-team: access lists the agent added (a named user let into a private file and a
/// private folder, and a default list the folder hands down) survived a rewind that reported
/// the bits restored. A checkpoint records none, so one set since is taken off, and a file
/// the restore writes carries none from its folder.
#[test]
fn access_lists_added_since_are_taken_off() {
    let f = fixture();
    write(&f.ws, "secret.env", "TOKEN\n");
    chmod(&f.ws.join("secret.env"), 0o640);
    write(&f.ws, "priv/k", "KEY1\n");
    chmod(&f.ws.join("priv/k"), 0o640);
    chmod(&f.ws.join("priv"), 0o750);
    let a = snap(&f);
    let since = crate::tests::now_ms();
    std::thread::sleep(std::time::Duration::from_millis(20));
    rustix::fs::setxattr(
        f.ws.join("secret.env"),
        "system.posix_acl_access",
        &acl_for_nobody(6, 6),
        rustix::fs::XattrFlags::empty(),
    )
    .expect("the file system takes access lists");
    for name in ["system.posix_acl_access", "system.posix_acl_default"] {
        rustix::fs::setxattr(
            f.ws.join("priv"),
            name,
            &acl_for_nobody(7, 7),
            rustix::fs::XattrFlags::empty(),
        )
        .unwrap();
    }
    write(&f.ws, "priv/k", "KEY2\n");
    let root = crate::Root::open(&f.ws).unwrap();
    let now = f.store.snapshot_of(&root, &Limits::default()).unwrap();
    let opts = RestoreOptions {
        since_ms: since,
        ..RestoreOptions::default()
    };
    f.store
        .restore_at(&root, &now.point(), &a.point(), &opts)
        .unwrap();
    assert_eq!(mode(&f.ws.join("secret.env")), 0o640);
    assert_eq!(mode(&f.ws.join("priv")), 0o750);
    assert_eq!(
        std::fs::read_to_string(f.ws.join("priv/k")).unwrap(),
        "KEY1\n"
    );
    for p in ["secret.env", "priv", "priv/k"] {
        for name in ["system.posix_acl_access", "system.posix_acl_default"] {
            assert!(!has_xattr(&f.ws.join(p), name), "{p} keeps {name}");
        }
    }
}

/// An access list the user had before the checkpoint (the entry not changed since) stays.
#[test]
fn access_lists_from_before_the_checkpoint_stay() {
    let f = fixture();
    write(&f.ws, "shared.txt", "team\n");
    rustix::fs::setxattr(
        f.ws.join("shared.txt"),
        "system.posix_acl_access",
        &acl_for_nobody(4, 4),
        rustix::fs::XattrFlags::empty(),
    )
    .unwrap();
    write(&f.ws, "a.txt", "one\n");
    let a = snap(&f);
    std::thread::sleep(std::time::Duration::from_millis(2_100));
    let since = crate::tests::now_ms();
    write(&f.ws, "a.txt", "two\n");
    let root = crate::Root::open(&f.ws).unwrap();
    let now = f.store.snapshot_of(&root, &Limits::default()).unwrap();
    let opts = RestoreOptions {
        since_ms: since,
        ..RestoreOptions::default()
    };
    f.store
        .restore_at(&root, &now.point(), &a.point(), &opts)
        .unwrap();
    assert!(has_xattr(
        &f.ws.join("shared.txt"),
        "system.posix_acl_access"
    ));
}

/// Fourth red-team (as root): a file capability the agent gave a program survived the rewind,
/// which said no file changed. It is taken off.
#[test]
fn file_capabilities_added_since_are_taken_off() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("needs root to set a file capability");
        return;
    }
    let f = fixture();
    write(&f.ws, "tool", "#!/bin/sh\n");
    chmod(&f.ws.join("tool"), 0o755);
    let a = snap(&f);
    // vfs_cap_data, revision 2: cap_setuid and cap_dac_override, effective.
    let mut cap = 0x0200_0001u32.to_le_bytes().to_vec();
    let permitted: u32 = (1 << 7) | (1 << 1);
    for word in [permitted, 0, 0, 0] {
        cap.extend(word.to_le_bytes());
    }
    rustix::fs::setxattr(
        f.ws.join("tool"),
        "security.capability",
        &cap,
        rustix::fs::XattrFlags::empty(),
    )
    .unwrap();
    rewind(&f, &a);
    assert!(!has_xattr(&f.ws.join("tool"), "security.capability"));
    assert_eq!(mode(&f.ws.join("tool")), 0o755);
}

/// Fourth red-team (as root): an entry given to another user since the checkpoint, with
/// set-id or wide bits, was skipped by the rewind as not the user's. Root's rewind sets its
/// recorded bits all the same.
#[test]
fn entries_given_to_another_user_get_their_bits_back_as_root() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("needs root to give entries away");
        return;
    }
    let f = fixture();
    write(&f.ws, "tool", "#!/bin/sh\n");
    chmod(&f.ws.join("tool"), 0o755);
    std::fs::create_dir_all(f.ws.join("pub")).unwrap();
    chmod(&f.ws.join("pub"), 0o700);
    let a = snap(&f);
    let nobody = Some(rustix::process::Uid::from_raw(65_534));
    rustix::fs::chown(f.ws.join("tool"), nobody, None).unwrap();
    chmod(&f.ws.join("tool"), 0o4755);
    rustix::fs::chown(f.ws.join("pub"), nobody, None).unwrap();
    chmod(&f.ws.join("pub"), 0o777);
    rewind(&f, &a);
    assert_eq!(mode(&f.ws.join("tool")), 0o755);
    assert_eq!(mode(&f.ws.join("pub")), 0o700);
}

/// Fourth red-team: a shared folder (`1777`) and a workspace that is one came back `0777`,
/// where anyone may delete anyone's files. A folder keeps its sticky and set-group-id bits.
#[test]
fn sticky_and_set_group_folders_keep_their_bits() {
    let f = fixture();
    write(&f.ws, "shared/a", "a\n");
    chmod(&f.ws.join("shared"), 0o1777);
    write(&f.ws, "grp/b", "b\n");
    chmod(&f.ws.join("grp"), 0o2775);
    chmod(&f.ws, 0o1777);
    write(&f.ws, "a.txt", "one\n");
    let a = snap(&f);
    write(&f.ws, "a.txt", "two\n");
    chmod(&f.ws.join("shared"), 0o777);
    rewind(&f, &a);
    assert_eq!(mode(&f.ws.join("shared")), 0o1777);
    assert_eq!(mode(&f.ws.join("grp")), 0o2775);
    assert_eq!(mode(&f.ws), 0o1777);
}

/// Fourth red-team: the workspace folder shut to the user (`chmod 000`) stopped the rewind
/// before it began. Like any folder inside, the owner's bits are added to get in.
#[test]
fn a_workspace_shut_to_the_user_is_rewound() {
    super::modes::as_an_ordinary_user();
    let f = fixture();
    write(&f.ws, "a.txt", "one\n");
    chmod(&f.ws, 0o750);
    let a = snap(&f);
    write(&f.ws, "a.txt", "two\n");
    chmod(&f.ws, 0o000);
    let (_, tree) = rewind(&f, &a);
    assert_eq!(tree, a.tree);
    assert_eq!(
        std::fs::read_to_string(f.ws.join("a.txt")).unwrap(),
        "one\n"
    );
    assert_eq!(mode(&f.ws), 0o750);
}

/// Fourth red-team: a workspace folder owned by another user (a shared folder the user
/// works in) whose bits changed since made a finished rewind end "stopped partway" on the
/// bits the user may not set. They are left as they are.
#[test]
fn a_workspace_owned_by_another_user_is_rewound() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("needs root to give the workspace away");
        return;
    }
    let f = fixture();
    write(&f.ws, "a.txt", "one\n");
    rustix::fs::chown(&f.ws, Some(rustix::process::Uid::from_raw(65_534)), None).unwrap();
    chmod(&f.ws, 0o777);
    let a = snap(&f);
    chmod(&f.ws, 0o1777);
    super::modes::as_an_ordinary_user();
    write(&f.ws, "a.txt", "two\n");
    let (_, tree) = rewind(&f, &a);
    assert_eq!(tree, a.tree);
    assert_eq!(mode(&f.ws), 0o1777);
}

/// Fourth red-team: a file hard-linked to one outside with the same content and the same bits
/// was left linked (nothing seemed to differ). A file with another name is written again as
/// its own.
#[test]
fn a_same_content_hard_link_is_made_a_file_of_its_own() {
    let f = fixture();
    write(&f.ws, "f", "shared\n");
    chmod(&f.ws.join("f"), 0o644);
    let a = snap(&f);
    let outside = f.outside.join("shared");
    std::fs::write(&outside, "shared\n").unwrap();
    chmod(&outside, 0o644);
    std::fs::remove_file(f.ws.join("f")).unwrap();
    std::fs::hard_link(&outside, f.ws.join("f")).unwrap();
    rewind(&f, &a);
    assert_eq!(std::fs::metadata(f.ws.join("f")).unwrap().nlink(), 1);
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "shared\n");
}

/// Fifth red-team: every unchanged file with another name was held in memory for the whole
/// rewind (150 files of 10 MiB linked outside: 1.6 GB). Past what a restore reads up front,
/// each is read again when its turn comes; all of them still come back files of their own.
#[test]
fn many_hard_linked_files_come_back_their_own_past_what_is_read_up_front() {
    let f = fixture();
    // Twice what a restore holds up front in tests (64 KiB).
    let body = "x".repeat(8 * 1024);
    for i in 0..16 {
        write(&f.ws, &format!("f{i}"), &format!("{i}{body}"));
    }
    let a = snap(&f);
    for i in 0..16 {
        std::fs::hard_link(f.ws.join(format!("f{i}")), f.outside.join(format!("l{i}"))).unwrap();
    }
    rewind(&f, &a);
    for i in 0..16 {
        let p = f.ws.join(format!("f{i}"));
        assert_eq!(std::fs::metadata(&p).unwrap().nlink(), 1, "f{i}");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), format!("{i}{body}"));
    }
}

/// A checkpoint from before bits were recorded.
fn legacy(s: &Snapshot) -> Point {
    Point {
        tree: s.tree,
        modes: None,
    }
}

/// Fourth red-team: with a checkpoint from before bits were recorded, a file the restore
/// wrote into a folder with a default access list (all allowed) came back `0666`: the kernel
/// skips the umask there. The umask is applied all the same, and no list is handed down.
#[test]
fn without_a_record_the_umask_holds_under_a_default_access_list() {
    let f = fixture();
    write(&f.ws, "d/secret", "s\n");
    let a = snap(&f);
    std::fs::remove_file(f.ws.join("d/secret")).unwrap();
    rustix::fs::setxattr(
        f.ws.join("d"),
        "system.posix_acl_default",
        &acl_for_nobody(7, 7),
        rustix::fs::XattrFlags::empty(),
    )
    .unwrap();
    let now = snap(&f);
    f.store
        .restore(&f.ws, &now.point(), &legacy(&a), &[])
        .unwrap();
    let umask = super::modes::umask();
    assert_eq!(mode(&f.ws.join("d/secret")), 0o666 & !umask);
    assert!(!has_xattr(
        &f.ws.join("d/secret"),
        "system.posix_acl_access"
    ));
}

/// Fourth red-team: a folder the target needs, left empty by a deletion, was removed and made
/// again (new bits, the inode and all it carried lost). It stays.
#[test]
fn a_folder_the_checkpoint_needs_is_never_made_again() {
    let f = fixture();
    write(&f.ws, "d/secret", "s\n");
    chmod(&f.ws.join("d"), 0o700);
    let a = snap(&f);
    let ino = std::fs::metadata(f.ws.join("d")).unwrap().ino();
    std::fs::remove_file(f.ws.join("d/secret")).unwrap();
    let now = snap(&f);
    f.store
        .restore(&f.ws, &now.point(), &legacy(&a), &[])
        .unwrap();
    assert_eq!(std::fs::metadata(f.ws.join("d")).unwrap().ino(), ino);
    assert_eq!(mode(&f.ws.join("d")), 0o700);
    assert_eq!(
        std::fs::read_to_string(f.ws.join("d/secret")).unwrap(),
        "s\n"
    );
}
