//! A rewind against a process of the agent's that is still changing the workspace (one that
//! outlived its turn): names swapped for hard links, the workspace folder swapped for
//! another, a file written as the rewind runs, names taken where the restore writes.

use super::*;
use crate::access::{Set, set_bits};
use std::os::unix::fs::MetadataExt as _;

/// A process of the agent's exchanging two names of folder `ws` again and again
/// (`renameat2` with `RENAME_EXCHANGE`) until stopped.
struct Exchanger {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl Exchanger {
    fn start(ws: &Path, a: &'static str, b: &'static str) -> Exchanger {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (flag, ws) = (stop.clone(), ws.to_path_buf());
        let thread = std::thread::spawn(move || {
            let dir = rustix::fs::openat(
                rustix::fs::CWD,
                &ws,
                crate::access::DIR,
                rustix::fs::Mode::empty(),
            )
            .unwrap();
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                let _ =
                    rustix::fs::renameat_with(&dir, a, &dir, b, rustix::fs::RenameFlags::EXCHANGE);
            }
        });
        Exchanger { stop, thread }
    }

    fn stop(self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().unwrap();
    }
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

/// Fourth red-team: a name swapped, between the look and the change, for a hard link to a
/// private file outside the workspace had the rewind open that file up. The bits are set
/// through a handle on what was looked at, and a file with another name is never changed:
/// the caller writes it again as its own.
#[test]
fn bits_are_never_set_on_a_file_with_another_name() {
    let f = fixture();
    let secret = f.outside.join("secret");
    std::fs::write(&secret, "PRIVATE KEY\n").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::hard_link(&secret, f.ws.join("f")).unwrap();
    let ws = rustix::fs::openat(
        rustix::fs::CWD,
        &f.ws,
        crate::access::DIR,
        rustix::fs::Mode::empty(),
    )
    .unwrap();
    assert_eq!(
        set_bits(&ws, "f", false, 0o644, |_| true).unwrap(),
        Set::Linked
    );
    assert_eq!(mode(&secret), 0o600);
}

/// The same through a whole rewind, with the swap racing it: a process exchanges a file the
/// checkpoint holds (same content, other bits) with a hard link to a private file outside.
/// Whatever the timing, the outside file keeps its bits.
#[test]
fn a_hard_link_swapped_in_during_the_rewind_never_opens_up_the_file_outside() {
    let f = fixture();
    let secret = f.outside.join("secret");
    for i in 0..20 {
        write(&f.ws, "f", "content\n");
        std::fs::set_permissions(f.ws.join("f"), std::fs::Permissions::from_mode(0o644)).unwrap();
        let a = snap(&f);
        std::fs::remove_file(f.ws.join("f")).unwrap();
        write(&f.ws, "f", "content\n");
        std::fs::set_permissions(f.ws.join("f"), std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::write(&secret, "content\n").unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
        let _ = std::fs::remove_file(f.ws.join("g"));
        std::fs::hard_link(&secret, f.ws.join("g")).unwrap();
        let swapper = Exchanger::start(&f.ws, "f", "g");
        let now = snap(&f);
        let _ = f.store.restore(&f.ws, &now.point(), &a.point(), &[]);
        swapper.stop();
        assert_eq!(mode(&secret), 0o600, "try {i}");
        std::fs::remove_file(&secret).unwrap();
    }
}

/// Fourth red-team: the workspace folder exchanged with another while the rewind ran had the
/// restore write into, and delete from, the other folder. A rewind works on the folder it
/// opened and checked, whatever is at the path afterwards.
#[test]
fn the_workspace_swapped_for_another_folder_is_never_written() {
    let f = fixture();
    write(&f.ws, "a.txt", "v1\n");
    let a = snap(&f);
    write(&f.ws, "a.txt", "v2\n");
    write(&f.ws, "came_since.txt", "agent\n");
    let root = crate::Root::open(&f.ws).unwrap();
    let now = f.store.snapshot_of(&root, &Limits::default()).unwrap();
    // The swap, after the check and the undo checkpoint.
    let other = f.outside.join("other");
    write(&other, "a.txt", "precious\n");
    write(&other, "came_since.txt", "precious too\n");
    let moved = f.ws.with_extension("held");
    std::fs::rename(&f.ws, &moved).unwrap();
    std::fs::rename(&other, &f.ws).unwrap();
    f.store
        .restore_at(&root, &now.point(), &a.point(), &RestoreOptions::default())
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(f.ws.join("a.txt")).unwrap(),
        "precious\n"
    );
    assert_eq!(
        std::fs::read_to_string(f.ws.join("came_since.txt")).unwrap(),
        "precious too\n"
    );
    // The folder the rewind opened is the one restored.
    assert_eq!(
        std::fs::read_to_string(moved.join("a.txt")).unwrap(),
        "v1\n"
    );
    assert!(!moved.join("came_since.txt").exists());
}

/// Fourth red-team: a file a process kept writing was deleted by the rewind holding content
/// no checkpoint had (the undo checkpoint caught it midway). A file that changed since the
/// undo checkpoint listed it goes aside instead, as it is.
#[test]
fn a_file_written_during_the_rewind_is_moved_aside_not_lost() {
    let f = fixture();
    write(&f.ws, "a.txt", "one\n");
    let a = snap(&f);
    write(&f.ws, "work.txt", "v1\n");
    write(&f.ws, "a.txt", "two\n");
    let now = snap(&f);
    // Written again after the undo checkpoint, before the restore reaches it.
    std::thread::sleep(std::time::Duration::from_millis(10));
    write(&f.ws, "work.txt", "v452, the latest\n");
    write(&f.ws, "a.txt", "three\n");
    let done = f
        .store
        .restore(&f.ws, &now.point(), &a.point(), &[])
        .unwrap();
    assert!(!f.ws.join("work.txt").exists());
    assert_eq!(
        std::fs::read_to_string(f.ws.join("a.txt")).unwrap(),
        "one\n"
    );
    let aside = done.moved_aside.expect("moved aside");
    assert_eq!(
        std::fs::read_to_string(aside_entry(&aside, "work.txt")).unwrap(),
        "v452, the latest\n"
    );
    assert_eq!(
        std::fs::read_to_string(aside_entry(&aside, "a.txt")).unwrap(),
        "three\n"
    );
}

/// Fourth red-team: the restore wrote each file through a temporary name anyone could
/// foresee (`.waymark-restore-<pid>-<n>`); pipes planted at those names stopped the rewind
/// partway. The names are random, and a name taken is passed over.
#[test]
fn names_planted_where_the_restore_writes_do_not_stop_it() {
    let f = fixture();
    write(&f.ws, "a.txt", "one\n");
    let a = snap(&f);
    write(&f.ws, "a.txt", "two\n");
    write(&f.ws, ".gitignore", ".waymark-restore-*\n");
    for n in 0..64 {
        let name = format!(".waymark-restore-{}-{n}", std::process::id());
        let path = std::ffi::CString::new(f.ws.join(name).as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo on a NUL-terminated path.
        #[allow(unsafe_code)]
        unsafe {
            libc::mkfifo(path.as_ptr(), 0o600);
        }
    }
    let (_, tree) = rewind(&f, &a);
    assert_eq!(
        std::fs::read_to_string(f.ws.join("a.txt")).unwrap(),
        "one\n"
    );
    assert_eq!(tree, a.tree);
    assert_eq!(std::fs::metadata(f.ws.join("a.txt")).unwrap().nlink(), 1);
}

/// Fifth red-team: a folder holding a link, swapped again and again with a link to
/// `/proc/self`, had a checkpoint read the target of Waymark's own `/proc/self/exe` into the
/// store. Link targets are read through folders opened without following a link, from the
/// entry listed.
#[test]
fn a_link_read_through_a_folder_swapped_for_proc_self_reads_nothing_of_waymarks() {
    let f = fixture();
    write(&f.ws, "d/keep.txt", "k\n");
    std::os::unix::fs::symlink("target", f.ws.join("d/exe")).unwrap();
    std::os::unix::fs::symlink("/proc/self", f.ws.join("e")).unwrap();
    let exe = std::env::current_exe().unwrap();
    let leaked = gix_object::compute_hash(
        gix_hash::Kind::Sha1,
        gix_object::Kind::Blob,
        exe.as_os_str().as_encoded_bytes(),
    )
    .unwrap();
    let swapper = Exchanger::start(&f.ws, "d", "e");
    for _ in 0..200 {
        // The stat cache would vouch for the link after the first read: start afresh.
        let _ = std::fs::remove_file(f.store.dir().join("stat-cache"));
        *f.store.cache.lock().unwrap() = None;
        let _ = f.store.snapshot(&f.ws, &Limits::default());
    }
    swapper.stop();
    assert!(
        f.store.check_blob(&leaked).is_err(),
        "the target of Waymark's /proc/self/exe was stored"
    );
}
