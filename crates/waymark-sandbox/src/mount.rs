//! The scratch shell's mounts, made by the sandbox helper before it confines itself (Landlock
//! and seccomp forbid all of this afterwards). In its own user, mount and PID namespaces the
//! helper
//! 1. makes every mount it inherited read-only (so nothing outside can change, its metadata
//!    included, whatever the command's rights),
//! 2. mounts an overlay over the workspace's own path: the workspace read-only underneath,
//!    the scratch layer ([`crate::scratch`]) on top, so builds, caches and test output land
//!    in the layer and the workspace stays byte-identical,
//! 3. binds the workspace's real `.git` read-only over the overlay's, so git's objects, refs
//!    and hooks cannot change even in the layer,
//! 4. binds the temp folder and the writable files onto themselves, writable again,
//! 5. forks: the child is the namespace's first process, mounts a fresh `/proc` (its own
//!    processes only) and goes on to confine itself and run the command; when it exits the
//!    kernel kills whatever it left running in the namespace. The parent waits, stops the
//!    child if the layer passes its cap, and exits with the child's status.

use crate::scratch::Scratch;
use std::ffi::{CString, OsStr};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

/// Exit code of the helper when the command was stopped because the scratch layer passed
/// its cap.
pub const SCRATCH_FULL_EXIT: i32 = 122;

/// Why the mounts could not be made.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct MountError(String);

/// Which side of the fork this process is on.
pub enum Side {
    /// The namespace's first process: confine and run the command.
    Child,
    /// The parent, after the child ended: exit with this code.
    Parent(i32),
}

fn c_path(p: &Path) -> Result<CString, MountError> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| MountError(format!("{} holds a NUL byte", p.display())))
}

fn last_error(what: &str) -> MountError {
    MountError(format!("{what}: {}", std::io::Error::last_os_error()))
}

#[allow(unsafe_code)]
fn mount(
    source: Option<&CString>,
    target: &CString,
    fstype: Option<&CString>,
    flags: libc::c_ulong,
    data: Option<&CString>,
) -> Result<(), MountError> {
    let ptr = |c: Option<&CString>| c.map_or(std::ptr::null(), |c| c.as_ptr());
    // SAFETY: mount(2) reads NUL-terminated strings (or null pointers where allowed) and
    // writes no memory of ours.
    let rc = unsafe {
        libc::mount(
            ptr(source),
            target.as_ptr(),
            ptr(fstype),
            flags,
            ptr(data).cast(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(last_error(&format!("mount {target:?}")))
    }
}

/// `struct mount_attr` of mount_setattr(2).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const MOUNT_ATTR_RDONLY: u64 = 0x1;

/// Sets (`read_only`) or clears the read-only flag of the mount at `target`, and of every
/// mount under it when `recursive`.
#[allow(unsafe_code)]
fn set_read_only(target: &CString, read_only: bool, recursive: bool) -> Result<(), MountError> {
    let attr = MountAttr {
        attr_set: if read_only { MOUNT_ATTR_RDONLY } else { 0 },
        attr_clr: if read_only { 0 } else { MOUNT_ATTR_RDONLY },
        propagation: 0,
        userns_fd: 0,
    };
    let flags = if recursive { libc::AT_RECURSIVE } else { 0 } | libc::AT_SYMLINK_NOFOLLOW;
    // SAFETY: mount_setattr(2) reads a NUL-terminated path and `size` bytes of `attr`.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            target.as_ptr(),
            flags as libc::c_uint,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(last_error(&format!("mount_setattr {target:?}")))
    }
}

/// Enters new user, mount and PID namespaces, mapping this process's user and group to
/// themselves (so files keep their owner, and git sees the workspace as the user's).
#[allow(unsafe_code)]
fn unshare() -> Result<(), MountError> {
    // SAFETY: getuid(2)/getgid(2) cannot fail and touch no memory.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    // SAFETY: unshare(2) with namespace flags changes only this process's namespaces.
    let rc = unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID) };
    if rc != 0 {
        return Err(last_error(
            "a user namespace could not be made (the kernel or a security policy forbids it)",
        ));
    }
    let write = |file: &str, text: String| {
        std::fs::write(file, text).map_err(|e| MountError(format!("{file}: {e}")))
    };
    write("/proc/self/setgroups", "deny".into())?;
    write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
    write("/proc/self/gid_map", format!("{gid} {gid} 1"))
}

/// Binds `path` onto itself, writable again under the read-only mounts.
fn bind_writable(path: &Path) -> Result<(), MountError> {
    let c = c_path(path)?;
    mount(Some(&c), &c, None, libc::MS_BIND, None)?;
    set_read_only(&c, false, false)
}

/// Steps 1–4 of the module's list, then the fork (step 5).
pub fn enter(
    scratch: &Scratch,
    rw_dirs: &[PathBuf],
    rw_files: &[PathBuf],
) -> Result<Side, MountError> {
    let setup = |e: crate::scratch::ScratchError| MountError(e.to_string());
    scratch.prepare().map_err(setup)?;
    // Held by this process until it exits, after the child: one command per layer.
    let lock = scratch.lock().map_err(setup)?;
    // Again under the lock: a discard that held it before may have removed the folders.
    scratch.prepare().map_err(setup)?;
    scratch
        .refresh()
        .map_err(|e| MountError(format!("the scratch layer could not be refreshed: {e}")))?;
    let cwd = std::env::current_dir().map_err(|e| MountError(format!("current folder: {e}")))?;
    unshare()?;
    let root = c_path(Path::new("/"))?;
    mount(None, &root, None, libc::MS_REC | libc::MS_PRIVATE, None)?;
    set_read_only(&root, true, true)?;
    // The layer's own mount, writable (overlayfs refuses an upper layer on a read-only one);
    // the command never reaches it by this path (Landlock grants it nothing).
    bind_writable(&scratch.layer)?;
    // The workspace's own `.git`, held before the overlay covers it (opened in
    // this namespace: a bind takes only a mount of its own namespace).
    let git = {
        use std::os::unix::fs::OpenOptionsExt as _;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(scratch.workspace.join(".git"))
            .ok()
            .filter(|f| f.metadata().is_ok_and(|m| m.is_dir() || m.is_file()))
    };
    let ws = c_path(&scratch.workspace)?;
    // The layer's frozen base (a goal's baseline build), if it has one, lies between the
    // workspace and the changes: overlayfs takes the leftmost lower layer as the top one.
    let base = scratch.base();
    let lower = if base.is_dir() {
        format!("{}:{}", base.display(), scratch.workspace.display())
    } else {
        scratch.workspace.display().to_string()
    };
    let options = format!(
        "lowerdir={lower},upperdir={},workdir={},userxattr,index=off,xino=off,volatile",
        scratch.upper().display(),
        scratch.work().display()
    );
    let overlay = CString::from(c"overlay");
    mount(
        Some(&overlay),
        &ws,
        Some(&overlay),
        libc::MS_NOSUID | libc::MS_NODEV,
        Some(&CString::new(options).map_err(|_| MountError("a path holds a NUL byte".into()))?),
    )
    .map_err(|e| MountError(format!("the scratch overlay could not be mounted ({e})")))?;
    if let Some(git) = &git {
        use std::os::fd::AsRawFd as _;
        let from = c_path(Path::new(&format!("/proc/self/fd/{}", git.as_raw_fd())))?;
        let to = c_path(&scratch.workspace.join(".git"))?;
        mount(Some(&from), &to, None, libc::MS_BIND, None)?;
        set_read_only(&to, true, false)?;
    }
    // The layer's writable mount goes now that the overlay holds its own: by its path the
    // command reaches only the read-only mount under it (no chmod of the layer's folders).
    // SAFETY: umount2(2) reads a NUL-terminated path.
    #[allow(unsafe_code)]
    let detached =
        unsafe { libc::umount2(c_path(&scratch.layer)?.as_ptr(), libc::MNT_DETACH) } == 0;
    if !detached {
        return Err(last_error("detaching the layer's mount"));
    }
    for p in rw_dirs.iter().chain(rw_files) {
        if p.exists() {
            bind_writable(p)?;
        }
    }
    // Into the overlay (the old current folder is the workspace underneath).
    std::env::set_current_dir(&cwd).map_err(|e| MountError(format!("{}: {e}", cwd.display())))?;
    fork(scratch, lock)
}

/// Step 5: the child mounts its `/proc` and returns; the parent waits for it.
#[allow(unsafe_code)]
fn fork(scratch: &Scratch, lock: std::fs::File) -> Result<Side, MountError> {
    // Stopped from outside (the runtime's timeout, Stop), this process kills the command and
    // waits for it before the lock goes: the command, the first process of its namespace,
    // takes no signal from here but SIGKILL. Caught from before the fork, so no stop is
    // missed while the parent waits to be scheduled; the child goes back to the default.
    catch_stops(true);
    // SAFETY: the helper is single-threaded here (no thread is started before this point),
    // so the child may run any code.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(last_error("fork"));
    }
    if pid == 0 {
        catch_stops(false);
        drop(lock);
        // SAFETY: prctl(PR_SET_PDEATHSIG) only sets a flag of this process.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
        }
        let proc = c_path(Path::new("/proc"))?;
        let name = CString::from(c"proc");
        mount(
            Some(&name),
            &proc,
            Some(&name),
            // Read-only: a generic /proc entry's mode is one for the whole machine, and the
            // command owns them when it runs as root.
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC | libc::MS_RDONLY,
            None,
        )?;
        return Ok(Side::Child);
    }
    // No thread can start here (this process's new children live in another PID namespace,
    // which threads may not): the layer is measured between waits on the child's pidfd.
    let watched = watch(scratch, pid);
    let mut status = 0;
    loop {
        // SAFETY: waitpid(2) writes the status into `status`, which outlives the call.
        let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
        if rc == pid {
            break;
        }
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return Err(last_error("waitpid"));
        }
    }
    // Unmounted before the lock goes, so the next command never mounts the layer while this
    // overlay still holds it (a process of the command that is still dying keeps it busy:
    // then it goes once that process is gone).
    let _ = std::env::set_current_dir("/");
    for target in [scratch.workspace.join(".git"), scratch.workspace.clone()] {
        if let Ok(c) = c_path(&target) {
            // SAFETY: umount2(2) reads a NUL-terminated path.
            unsafe {
                if libc::umount2(c.as_ptr(), 0) != 0 {
                    libc::umount2(c.as_ptr(), libc::MNT_DETACH);
                }
            }
        }
    }
    drop(lock);
    if let Watched::Stopped(signal) = watched {
        return Ok(Side::Parent(128 + signal));
    }
    if watched == Watched::Full {
        eprintln!(
            "waymark sandbox: the scratch layer passed its cap of {} MB (or {} entries); the command was stopped, and the layer is emptied before the next one",
            scratch.max_bytes / (1024 * 1024),
            crate::temp::MAX_ENTRIES
        );
        return Ok(Side::Parent(SCRATCH_FULL_EXIT));
    }
    Ok(Side::Parent(if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    }))
}

/// The signal that asked this process to stop, if one did (set by [`on_stop`]).
static STOPPED_BY: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

extern "C" fn on_stop(signal: libc::c_int) {
    STOPPED_BY.store(signal, std::sync::atomic::Ordering::SeqCst);
}

/// Makes SIGTERM, SIGINT and SIGHUP interrupt the wait instead of ending this process
/// (`catch`), or end it again (the default).
#[allow(unsafe_code)]
fn catch_stops(catch: bool) {
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        // SAFETY: an all-zero sigaction is valid; the handler only stores to an atomic,
        // which is async-signal-safe. No SA_RESTART: poll(2) returns EINTR.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = if catch {
                on_stop as extern "C" fn(libc::c_int) as libc::sighandler_t
            } else {
                libc::SIG_DFL
            };
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// How the wait for the command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Watched {
    Ended,
    /// The layer passed its cap: the command was killed.
    Full,
    /// This process was asked to stop by this signal: the command was killed.
    Stopped(i32),
}

/// Waits until the child `pid` ends, the layer passes its cap, or this process is asked to
/// stop (in both of the last the child is killed).
#[allow(unsafe_code)]
fn watch(scratch: &Scratch, pid: libc::pid_t) -> Watched {
    // SAFETY: pidfd_open(2) returns a new descriptor (owned below) or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as libc::c_int;
    let every = crate::temp::WATCH_EVERY.as_millis() as libc::c_int;
    if fd < 0 {
        // Only kernels before 5.3 lack pidfds, and they lack Landlock too: never here.
        return Watched::Ended;
    }
    let kill = |why: Watched| {
        // SAFETY: kill(2) on the child this process forked, then closing the pidfd this
        // function opened; no memory access.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::close(fd);
        }
        why
    };
    loop {
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll(2) on one pollfd that lives across the call.
        let ended = unsafe { libc::poll(&mut p, 1, every) } > 0;
        let signal = STOPPED_BY.load(std::sync::atomic::Ordering::SeqCst);
        if signal != 0 {
            return kill(Watched::Stopped(signal));
        }
        if ended {
            break;
        }
        let (bytes, entries) = scratch.usage();
        if bytes > scratch.max_bytes || entries > crate::temp::MAX_ENTRIES {
            return kill(Watched::Full);
        }
    }
    // SAFETY: closing the pidfd this function opened.
    unsafe { libc::close(fd) };
    Watched::Ended
}

/// The arguments that ask the helper for a scratch shell (see [`crate::SandboxSpec`]).
pub fn args(scratch: &Scratch) -> Vec<std::ffi::OsString> {
    let mut a = vec![
        "--scratch".into(),
        scratch.workspace.clone().into_os_string(),
        scratch.layer.clone().into_os_string(),
        OsStr::new(&scratch.max_bytes.to_string()).to_os_string(),
    ];
    match scratch.keep {
        crate::scratch::Keep::All => {}
        crate::scratch::Keep::BuildOutput => a.push("--scratch-build-only".into()),
        crate::scratch::Keep::Nothing => a.push("--scratch-fresh".into()),
    }
    a
}
