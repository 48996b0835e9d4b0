//! Reaching the workspace's entries during a restore: each one opened relative to its folder,
//! never through a link, and reached all the same when the user owns it but its bits shut the
//! user out. An agent's `chmod 000 src`, or a read-only folder it made, must not stop the
//! user's rewind: the owner's bits are added to get through (never anyone else's), and the
//! checkpoint's own bits are set at the end.

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use std::os::fd::{AsRawFd as _, OwnedFd};

/// A folder opened for the changes below it: never through a link.
pub(crate) const DIR: OFlags = OFlags::DIRECTORY
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC)
    .union(OFlags::RDONLY);

/// A handle on entry `name` of `dir` that opens nothing (`O_PATH`), never through a link, and
/// what it is: it is had whatever the entry's bits are.
fn handle(dir: &OwnedFd, name: &str) -> Result<(OwnedFd, rustix::fs::Stat), Errno> {
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let st = rustix::fs::fstat(&fd)?;
    Ok((fd, st))
}

/// Sets the bits of what handle `fd` names (through `/proc/self/fd`, which follows the
/// handle, not a path).
fn chmod_handle(fd: &OwnedFd, bits: u32) -> Result<(), Errno> {
    rustix::fs::chmodat(
        rustix::fs::CWD,
        format!("/proc/self/fd/{}", fd.as_raw_fd()),
        Mode::from_raw_mode(bits),
        AtFlags::empty(),
    )
}

/// Whether the user owns what `st` describes.
fn owned(st: &rustix::fs::Stat) -> bool {
    st.st_uid == rustix::process::geteuid().as_raw()
}

/// Runs `change` (of the bits or attributes of an entry the user may not own): one the user
/// may not make (`EPERM`: another's entry, and no privilege over it) is `false`. Root's
/// rewind, which may, must not leave an entry the agent gave away to another user with the
/// set-id or wide bits it gave it.
fn if_allowed(change: impl FnOnce() -> Result<(), Errno>) -> Result<bool, Errno> {
    match change() {
        Ok(()) => Ok(true),
        Err(Errno::PERM) => Ok(false),
        Err(e) => Err(e),
    }
}

/// The workspace folder at `path` (its last step not followed if a link), opened; when the
/// user owns it but its bits shut them out (`chmod 000` on the workspace), the owner's bits
/// are added first, as for any folder inside.
pub(crate) fn open_root(path: &std::path::Path) -> Result<OwnedFd, Errno> {
    match rustix::fs::openat(rustix::fs::CWD, path, DIR, Mode::empty()) {
        Err(Errno::ACCESS) => {
            let fd = rustix::fs::openat(
                rustix::fs::CWD,
                path,
                OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            let st = rustix::fs::fstat(&fd)?;
            if FileType::from_raw_mode(st.st_mode) != FileType::Directory || !owned(&st) {
                return Err(Errno::ACCESS);
            }
            chmod_handle(&fd, (st.st_mode & 0o7777) | 0o700)?;
            rustix::fs::openat(rustix::fs::CWD, path, DIR, Mode::empty())
        }
        r => r,
    }
}

/// Runs `rename` (moving entry `name` of `dir` elsewhere) again after adding the owner's write
/// bit to the entry, when it is a folder the user owns and may not write: moving a folder to
/// another parent rewrites its `..`.
pub(crate) fn movable<T>(
    dir: &OwnedFd,
    name: &str,
    rename: impl Fn() -> Result<T, Errno>,
) -> Result<T, Errno> {
    match in_folder(dir, &rename) {
        Err(Errno::ACCESS) => {
            let (fd, st) = handle(dir, name)?;
            if FileType::from_raw_mode(st.st_mode) != FileType::Directory || !owned(&st) {
                return Err(Errno::ACCESS);
            }
            chmod_handle(&fd, (st.st_mode & 0o7777) | 0o700)?;
            rename()
        }
        r => r,
    }
}

/// Folder `name` of `dir`, opened without following a link; when the user owns it but may not
/// enter it, the owner's read, write and search bits are added first.
pub(crate) fn open_dir(dir: &OwnedFd, name: &str) -> Result<OwnedFd, Errno> {
    match rustix::fs::openat(dir, name, DIR, Mode::empty()) {
        Err(Errno::ACCESS) => {
            let (fd, st) = handle(dir, name)?;
            if FileType::from_raw_mode(st.st_mode) != FileType::Directory || !owned(&st) {
                return Err(Errno::ACCESS);
            }
            chmod_handle(&fd, (st.st_mode & 0o7777) | 0o700)?;
            rustix::fs::openat(dir, name, DIR, Mode::empty())
        }
        r => r,
    }
}

/// Runs `change` (a change to what folder `dir` holds) again after adding the owner's bits to
/// `dir`, when it failed because the user, who owns `dir`, may not write it.
pub(crate) fn in_folder<T>(
    dir: &OwnedFd,
    change: impl Fn() -> Result<T, Errno>,
) -> Result<T, Errno> {
    match change() {
        Err(Errno::ACCESS) => {
            let st = rustix::fs::fstat(dir)?;
            if !owned(&st) {
                return Err(Errno::ACCESS);
            }
            rustix::fs::fchmod(dir, Mode::from_raw_mode((st.st_mode & 0o7777) | 0o700))?;
            change()
        }
        r => r,
    }
}

/// What [`set_bits`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Set {
    /// The entry has the bits now.
    Done,
    /// A link, a missing entry, another kind, or one the user may not change: left alone.
    Skipped,
    /// A file with another name somewhere (a hard link): its bits are that other name's
    /// too, so they are not changed; the caller writes the file again as one of its own.
    Linked,
}

/// Sets entry `name` of `dir` to `bits` when it is still a `folder` (or a regular file with no
/// other name) the user may change, and takes off what widens access beyond the bits (access
/// control lists, file capabilities) when `fresh` (the entry changed since the checkpoint).
/// The entry is held by a handle from the first look: what is checked is what is changed,
/// whatever takes its name meanwhile.
pub(crate) fn set_bits(
    dir: &OwnedFd,
    name: &str,
    folder: bool,
    bits: u32,
    fresh: impl Fn(&rustix::fs::Stat) -> bool,
) -> Result<Set, Errno> {
    let (fd, st) = match handle(dir, name) {
        Ok(h) => h,
        Err(Errno::NOENT | Errno::LOOP) => return Ok(Set::Skipped),
        Err(e) => return Err(e),
    };
    let kind = FileType::from_raw_mode(st.st_mode);
    let fits = if folder {
        kind == FileType::Directory
    } else {
        kind == FileType::RegularFile
    };
    if !fits {
        return Ok(Set::Skipped);
    }
    if !folder && st.st_nlink > 1 {
        return Ok(Set::Linked);
    }
    let done = if_allowed(|| {
        if fresh(&st) {
            strip_extras(&fd)?;
        }
        if st.st_mode & 0o7777 != bits {
            chmod_handle(&fd, bits)?;
        }
        Ok(())
    })?;
    Ok(if done { Set::Done } else { Set::Skipped })
}

/// Gives the workspace folder `root` (its stat `st`) the `bits` recorded, taking off what
/// widens it when `fresh`; left as it is when the user may not change it (a folder of
/// another user's that the user works in).
pub(crate) fn set_root_bits(
    root: &OwnedFd,
    st: &rustix::fs::Stat,
    bits: u32,
    fresh: bool,
) -> Result<(), Errno> {
    if_allowed(|| {
        if fresh {
            strip_extras(root)?;
        }
        if st.st_mode & 0o7777 != bits {
            rustix::fs::fchmod(root, Mode::from_raw_mode(bits))?;
        }
        Ok(())
    })
    .map(|_| ())
}

/// Extended attributes that give access or power beyond the permission bits: a checkpoint
/// records none of them, so one set since the checkpoint is taken off.
const EXTRAS: [&str; 3] = [
    "system.posix_acl_access",
    "system.posix_acl_default",
    "security.capability",
];

/// Takes [`EXTRAS`] off what handle `fd` names (through `/proc/self/fd`, which follows the
/// handle). One that is not there, a file system without them, or one the user may not take
/// off (a file capability, which only a privileged process can have set) is nothing to do.
pub(crate) fn strip_extras(fd: &OwnedFd) -> Result<(), Errno> {
    let path = format!("/proc/self/fd/{}", fd.as_raw_fd());
    for name in EXTRAS {
        match rustix::fs::removexattr(path.as_str(), name) {
            Ok(()) | Err(Errno::NODATA | Errno::NOTSUP | Errno::PERM) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// What entry `name` of `dir` is (a link is a link), with its bits and link count.
pub(crate) fn stat_at(dir: &OwnedFd, name: &str) -> Result<Option<rustix::fs::Stat>, Errno> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some(st)),
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(e),
    }
}
