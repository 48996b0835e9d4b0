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

/// Sets entry `name` of `dir` to `bits` when it is still a `folder` (or a regular file) the
/// user owns; a link, a missing entry or another kind is left alone. Its bits now: `None` when
/// it was left alone.
pub(crate) fn set_bits(
    dir: &OwnedFd,
    name: &str,
    folder: bool,
    bits: u32,
) -> Result<Option<u32>, Errno> {
    let (fd, st) = match handle(dir, name) {
        Ok(h) => h,
        Err(Errno::NOENT | Errno::LOOP) => return Ok(None),
        Err(e) => return Err(e),
    };
    let kind = FileType::from_raw_mode(st.st_mode);
    let fits = if folder {
        kind == FileType::Directory
    } else {
        kind == FileType::RegularFile
    };
    if !fits || !owned(&st) {
        return Ok(None);
    }
    if st.st_mode & 0o7777 != bits {
        chmod_handle(&fd, bits)?;
    }
    Ok(Some(bits))
}

/// What entry `name` of `dir` is (a link is a link), with its bits and link count.
pub(crate) fn stat_at(dir: &OwnedFd, name: &str) -> Result<Option<rustix::fs::Stat>, Errno> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some(st)),
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(e),
    }
}
