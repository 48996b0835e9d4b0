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
pub(super) fn umask() -> u32 {
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

/// Runs the rest of this test thread without the capabilities that let root past file
/// permissions, as an ordinary user is (a no-op for one): the permission checks a user's
/// rewind meets are the ones tested.
#[allow(unsafe_code)]
pub(super) fn as_an_ordinary_user() {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    let mut header = Header {
        version: 0x2008_0522,
        pid: 0,
    };
    let mut data = [Data {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: capget/capset with a version-3 header and two data slots, as the kernel
    // expects; only this thread's capabilities change.
    unsafe {
        assert_eq!(
            libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()),
            0
        );
        // CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER.
        data[0].effective &= !0b1110;
        assert_eq!(
            libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()),
            0
        );
    }
}

/// Second red-team: a folder whose bits changed while it also changed (filled, or holding
/// only a FIFO now), and the workspace folder itself, get their recorded bits back.
#[test]
fn folders_get_their_recorded_bits_back_whatever_else_changed() {
    let f = fixture();
    std::fs::create_dir_all(f.ws.join("keys")).unwrap();
    chmod(&f, "keys", 0o700);
    write(&f.ws, "priv/key", "k\n");
    chmod(&f, "priv/key", 0o600);
    chmod(&f, "priv", 0o700);
    chmod(&f, ".", 0o750);
    let a = snap(&f);
    write(&f.ws, "keys/planted", "p\n");
    chmod(&f, "keys", 0o777);
    std::fs::remove_file(f.ws.join("priv/key")).unwrap();
    let fifo = std::ffi::CString::new(f.ws.join("priv/p").as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mkfifo on a NUL-terminated path.
    #[allow(unsafe_code)]
    unsafe {
        libc::mkfifo(fifo.as_ptr(), 0o600);
    }
    chmod(&f, "priv", 0o777);
    chmod(&f, ".", 0o777);
    rewind(&f, &a);
    assert_eq!(mode(&f, "keys"), 0o700);
    assert_eq!(mode(&f, "priv"), 0o700);
    assert_eq!(mode(&f, "priv/key"), 0o600);
    assert_eq!(mode(&f, "."), 0o750);
}

/// Second red-team: set-id bits the agent added to a file whose content is the same are
/// taken away (as root, a set-user-id root program would be left behind).
#[test]
fn set_id_bits_added_since_are_taken_away() {
    let f = fixture();
    write(&f.ws, "tool", "#!/bin/sh\n");
    chmod(&f, "tool", 0o755);
    let a = snap(&f);
    std::fs::set_permissions(f.ws.join("tool"), std::fs::Permissions::from_mode(0o6755)).unwrap();
    rewind(&f, &a);
    let m = std::fs::metadata(f.ws.join("tool"))
        .unwrap()
        .permissions()
        .mode()
        & 0o7777;
    assert_eq!(m, 0o755);
}

/// Second red-team: a workspace file made a hard link to a file outside the workspace (the
/// same content, other bits). Changing its bits would change the outside file's: it is
/// written again as a file of its own instead.
#[test]
fn bits_are_never_changed_through_a_hard_link() {
    let f = fixture();
    let outside = f.outside.join("secret");
    std::fs::write(&outside, "PRIVATE KEY\n").unwrap();
    std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o600)).unwrap();
    write(&f.ws, "x", "PRIVATE KEY\n");
    chmod(&f, "x", 0o644);
    let a = snap(&f);
    std::fs::remove_file(f.ws.join("x")).unwrap();
    std::fs::hard_link(&outside, f.ws.join("x")).unwrap();
    rewind(&f, &a);
    let outside_mode = std::fs::metadata(&outside).unwrap().permissions().mode() & 0o777;
    assert_eq!(outside_mode, 0o600, "the file outside is untouched");
    assert_eq!(mode(&f, "x"), 0o644);
    use std::os::unix::fs::MetadataExt as _;
    assert_ne!(
        std::fs::metadata(f.ws.join("x")).unwrap().ino(),
        std::fs::metadata(&outside).unwrap().ino()
    );
}

/// Second red-team: folders an agent locked (`chmod 000 src`, a read-only folder of its own
/// with files in it) or a read-only folder the checkpoint holds must not stop the user's
/// rewind; each folder ends with its recorded bits.
#[test]
fn folders_the_agent_locked_do_not_stop_the_rewind() {
    as_an_ordinary_user();
    let f = fixture();
    write(&f.ws, "a", "good\n");
    write(&f.ws, "ro/f", "1\n");
    chmod(&f, "ro", 0o555);
    write(&f.ws, "src/main.rs", "fn main() {}\n");
    let a = snap(&f);
    chmod(&f, "ro", 0o755);
    std::fs::remove_file(f.ws.join("ro/f")).unwrap();
    chmod(&f, "ro", 0o555);
    write(&f.ws, "trap/x", "x\n");
    chmod(&f, "trap", 0o555);
    write(&f.ws, "a", "evil\n");
    write(&f.ws, "src/main.rs", "fn main() { evil() }\n");
    chmod(&f, "src", 0o000);
    rewind(&f, &a);
    assert_eq!(std::fs::read_to_string(f.ws.join("a")).unwrap(), "good\n");
    assert_eq!(std::fs::read_to_string(f.ws.join("ro/f")).unwrap(), "1\n");
    assert_eq!(mode(&f, "ro"), 0o555);
    assert!(!f.ws.join("trap").exists());
    assert_eq!(
        std::fs::read_to_string(f.ws.join("src/main.rs")).unwrap(),
        "fn main() {}\n"
    );
    // The fixture's clean-up needs to get in.
    chmod(&f, "ro", 0o755);
}

/// Second red-team: a store object rewritten in place (a mode record opened up) is damage:
/// the rewind stops before changing anything.
#[test]
fn an_object_rewritten_in_the_store_is_damage() {
    let f = fixture();
    write(&f.ws, "a.txt", "one\n");
    chmod(&f, "a.txt", 0o600);
    let a = snap(&f);
    write(&f.ws, "a.txt", "two\n");
    let now = snap(&f);
    // Another object's file put in the mode record's place: it decodes, but it is not it.
    let other = f
        .store
        .write(
            gix_object::Kind::Blob,
            b"waymark-modes 1\0f 777\0x 777\0d 777\0",
        )
        .unwrap();
    let record = loose(&f, &a.modes);
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&record, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::copy(loose(&f, &other), &record).unwrap();
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
