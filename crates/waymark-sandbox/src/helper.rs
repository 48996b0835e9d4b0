//! The sandbox helper: the process a sandboxed command starts as (a re-exec of a Waymark
//! binary, `<binary> __waymark-sandbox …`). It confines itself — file-size limit, Landlock
//! (reads only of the folders it is given, writes only to its temp folder, TCP, device
//! ioctls, signal and abstract-socket scoping, as far as the kernel goes), every capability
//! dropped, seccomp — checks what it got, and only then execs the command. Its parent has
//! already started it in a new session (no controlling terminal) with stdin from
//! /dev/null and a scrubbed environment.

use super::{Layers, NOT_ENFORCED_EXIT, caps, mount, scratch::Scratch, seccomp};
use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
};
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Largest file a sandboxed command may write (its temp folder is the only writable place).
pub const FILE_SIZE_LIMIT: u64 = 128 * 1024 * 1024;

/// Why a layer could not be applied.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct NotEnforced(String);

/// The Landlock parts applied, from the most the kernel could take.
#[derive(Debug, Clone, Copy, Default)]
struct Landlocked {
    net: bool,
    ioctl: bool,
    scope: bool,
}

/// Applies Landlock at the highest level the kernel supports: ABI 6 (filesystem, TCP,
/// device ioctls, scoping), else 5, 4, and at least 3 (the filesystem rights, truncation
/// included). Each level is a hard requirement for its parts, so a level either applies
/// fully or not at all; a kernel below ABI 3 is refused.
fn landlock(
    read: &[PathBuf],
    rw_dirs: &[PathBuf],
    write_dirs: &[PathBuf],
    rw_files: &[PathBuf],
    deny_net: bool,
) -> Result<Landlocked, NotEnforced> {
    let mut last = String::new();
    for abi in [ABI::V6, ABI::V5, ABI::V4, ABI::V3] {
        let got = Landlocked {
            net: deny_net && abi >= ABI::V4,
            ioctl: abi >= ABI::V5,
            scope: abi >= ABI::V6,
        };
        match try_landlock(abi, got, read, rw_dirs, write_dirs, rw_files) {
            Ok(()) => return Ok(got),
            Err(e) => last = e.0,
        }
    }
    Err(NotEnforced(format!(
        "Landlock with ABI 3 or later is not available ({last})"
    )))
}

/// Landlock rules for `paths` with `access` (file rights only, for a file). Each path is
/// opened without following a final symbolic link — a link put in a listed place gets a rule
/// of its own, which grants nothing — and one that is gone is left out (less to read).
fn rules(
    paths: &[PathBuf],
    access: BitFlags<AccessFs>,
    abi: ABI,
) -> Vec<PathBeneath<std::fs::File>> {
    use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
    paths
        .iter()
        .filter_map(|p| {
            let f = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(p)
                .ok()?;
            let t = f.metadata().ok()?.file_type();
            let rights = if t.is_dir() {
                access
            } else if t.is_file() || t.is_char_device() {
                access & AccessFs::from_file(abi)
            } else {
                return None;
            };
            Some(PathBeneath::new(f, rights))
        })
        .collect()
}

fn try_landlock(
    abi: ABI,
    parts: Landlocked,
    read: &[PathBuf],
    rw_dirs: &[PathBuf],
    write_dirs: &[PathBuf],
    rw_files: &[PathBuf],
) -> Result<(), NotEnforced> {
    let e = |e: landlock::RulesetError| NotEnforced(e.to_string());
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))
        .map_err(e)?;
    if parts.net {
        // Handled and never granted: no TCP bind or connect at all.
        ruleset = ruleset.handle_access(AccessNet::from_all(abi)).map_err(e)?;
    }
    if parts.scope {
        ruleset = ruleset
            .scope(Scope::AbstractUnixSocket | Scope::Signal)
            .map_err(e)?;
    }
    // The command's own `/proc/<pid>` (it keeps this process's pid across exec); other
    // processes' folders, with their environment and memory, are not listed.
    let own_proc = PathBuf::from(format!("/proc/{}", std::process::id()));
    let read_rules = rules(read, AccessFs::from_read(abi), abi)
        .into_iter()
        .chain(rules(&[own_proc], AccessFs::from_read(abi), abi));
    let status = ruleset
        .create()
        .map_err(e)?
        .add_rules(read_rules.map(Ok::<_, landlock::RulesetError>))
        .map_err(e)?
        .add_rules(
            rules(rw_dirs, AccessFs::from_all(abi), abi)
                .into_iter()
                .map(Ok::<_, landlock::RulesetError>),
        )
        .map_err(e)?
        .add_rules(
            rules(write_dirs, AccessFs::from_write(abi), abi)
                .into_iter()
                .map(Ok::<_, landlock::RulesetError>),
        )
        .map_err(e)?
        .add_rules(
            rules(rw_files, AccessFs::from_file(abi), abi)
                .into_iter()
                .map(Ok::<_, landlock::RulesetError>),
        )
        .map_err(e)?
        .add_rules(
            rules(&[PathBuf::from("/dev/null")], AccessFs::from_file(abi), abi)
                .into_iter()
                .map(Ok::<_, landlock::RulesetError>),
        )
        .map_err(e)?
        .restrict_self()
        .map_err(e)?;
    match status.ruleset {
        RulesetStatus::FullyEnforced => Ok(()),
        RulesetStatus::PartiallyEnforced | RulesetStatus::NotEnforced => Err(NotEnforced(format!(
            "the kernel enforces the ruleset only as {:?}",
            status.ruleset
        ))),
    }
}

#[allow(unsafe_code)]
fn limit_file_size(bytes: u64) -> Result<(), NotEnforced> {
    let lim = libc::rlimit {
        rlim_cur: bytes,
        rlim_max: bytes,
    };
    // SAFETY: setrlimit(2) reads the struct we pass by reference; it only changes this
    // process's own limit.
    let rc = unsafe { libc::setrlimit(libc::RLIMIT_FSIZE, &lim) };
    if rc == 0 {
        Ok(())
    } else {
        Err(NotEnforced(format!(
            "setrlimit(RLIMIT_FSIZE): {}",
            std::io::Error::last_os_error()
        )))
    }
}

/// Whether this process can still signal its parent (outside the sandbox).
#[allow(unsafe_code)]
fn can_signal_parent() -> bool {
    // SAFETY: kill(2) with signal 0 sends nothing; it only checks permission.
    unsafe { libc::kill(libc::getppid(), 0) == 0 }
}

/// The parsed command line of the helper.
struct Args {
    read: Vec<PathBuf>,
    rw_dirs: Vec<PathBuf>,
    rw_files: Vec<PathBuf>,
    /// Folders written but read only as far as the read set goes (the scratch overlay:
    /// write rights alone, so a private place inside the workspace stays unreadable).
    write_dirs: Vec<PathBuf>,
    network: seccomp::Network,
    probe: Option<PathBuf>,
    probe_read: Option<PathBuf>,
    /// A scratch shell: the workspace under a writable throwaway layer ([`mount`]).
    scratch: Option<Scratch>,
    program: Vec<OsString>,
}

fn parse(args: &[OsString]) -> Result<Args, UsageError> {
    let mut a = Args {
        read: Vec::new(),
        rw_dirs: Vec::new(),
        rw_files: Vec::new(),
        write_dirs: Vec::new(),
        network: seccomp::Network::Deny,
        probe: None,
        probe_read: None,
        scratch: None,
        program: Vec::new(),
    };
    let mut keep = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.to_str() {
            Some("--ro") => a.read.extend(it.next().map(PathBuf::from)),
            Some("--rw") => a.rw_dirs.extend(it.next().map(PathBuf::from)),
            Some("--rw-file") => a.rw_files.extend(it.next().map(PathBuf::from)),
            Some("--probe") => a.probe = it.next().map(PathBuf::from),
            Some("--probe-read") => a.probe_read = it.next().map(PathBuf::from),
            Some("--scratch") => {
                let (Some(workspace), Some(layer), Some(max)) = (it.next(), it.next(), it.next())
                else {
                    return Err(UsageError(
                        "--scratch takes a workspace, a layer folder and a size in bytes".into(),
                    ));
                };
                let max_bytes = max.to_str().and_then(|m| m.parse().ok()).ok_or_else(|| {
                    UsageError(format!(
                        "--scratch's size is not a number of bytes: {max:?}"
                    ))
                })?;
                a.scratch = Some(Scratch {
                    workspace: workspace.into(),
                    layer: layer.into(),
                    max_bytes,
                    keep: crate::scratch::Keep::All,
                });
            }
            Some("--scratch-build-only") => keep = Some(crate::scratch::Keep::BuildOutput),
            Some("--scratch-fresh") => keep = Some(crate::scratch::Keep::Nothing),
            Some("--net") => {
                a.network = match it.next().and_then(|v| v.to_str()) {
                    Some("deny") => seccomp::Network::Deny,
                    Some("allow") => seccomp::Network::Allow,
                    other => {
                        return Err(UsageError(format!(
                            "--net takes deny or allow, not {other:?}"
                        )));
                    }
                }
            }
            Some("--") => {
                a.program = it.by_ref().cloned().collect();
            }
            _ => return Err(UsageError(format!("unexpected argument {arg:?}"))),
        }
    }
    if let Some(keep) = keep {
        match a.scratch.as_mut() {
            Some(s) => s.keep = keep,
            None => {
                return Err(UsageError(
                    "--scratch-build-only and --scratch-fresh go with --scratch".into(),
                ));
            }
        }
    }
    Ok(a)
}

/// A wrong helper command line.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct UsageError(String);

/// Entry point of the helper: `[--ro PATH]… [--rw DIR]… [--rw-file FILE]… [--net
/// deny|allow] (--probe PATH [--probe-read FILE] | -- PROGRAM ARGS…)`. Returns the exit code when it does not exec. The
/// probe's report goes to `out`, refusals to `err` (the binaries pass their stdout and
/// stderr, which become the command's output).
pub fn main(args: &[OsString], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let mut a = match parse(args) {
        Ok(a) => a,
        Err(e) => {
            let _ = writeln!(err, "waymark sandbox: {e}");
            return 2;
        }
    };
    // Checked before Landlock, which would refuse the open for its own reasons.
    let no_tty = std::fs::File::open("/dev/tty").is_err();
    let (mut file_limit, mut metadata) = (FILE_SIZE_LIMIT, seccomp::Metadata::Refused);
    if let Some(s) = a.scratch.clone() {
        match mount::enter(&s, &a.rw_dirs, &a.rw_files) {
            Err(e) => {
                let _ = writeln!(
                    err,
                    "waymark sandbox: the scratch shell could not be set up ({e}); the command did not run"
                );
                return NOT_ENFORCED_EXIT;
            }
            Ok(mount::Side::Parent(code)) => return code,
            Ok(mount::Side::Child) => {
                // Writable now: the overlay over the workspace (every other mount is
                // read-only, so mode and time changes can land only in the layer).
                a.write_dirs.push(s.workspace.clone());
                file_limit = s.max_bytes.max(1);
                metadata = seccomp::Metadata::ModeAndTimes;
            }
        }
    }
    let confined = limit_file_size(file_limit).and_then(|()| {
        landlock(
            &a.read,
            &a.rw_dirs,
            &a.write_dirs,
            &a.rw_files,
            a.network == seccomp::Network::Deny,
        )
    });
    let landlocked = match confined {
        Ok(l) => l,
        Err(e) => {
            let _ = writeln!(
                err,
                "waymark sandbox: the read-only sandbox could not be enforced ({e}); the command did not run"
            );
            return NOT_ENFORCED_EXIT;
        }
    };
    // After Landlock, which needed to open the listed paths with them.
    if let Err(e) = caps::drop_all() {
        let _ = writeln!(
            err,
            "waymark sandbox: the capabilities could not be dropped ({e}); the command did not run"
        );
        return NOT_ENFORCED_EXIT;
    }
    if let Err(e) = seccomp::apply(a.network, metadata) {
        let _ = writeln!(
            err,
            "waymark sandbox: the seccomp filter could not be installed ({e}); the command did not run"
        );
        return NOT_ENFORCED_EXIT;
    }
    if let Some(outside) = a.probe {
        let found = probe(
            &outside,
            a.probe_read.as_deref(),
            &a.rw_dirs,
            landlocked,
            no_tty,
        );
        let _ = writeln!(out, "{}", found.encode());
        return 0;
    }
    if !no_tty {
        let _ = writeln!(
            err,
            "waymark sandbox: the command would have a controlling terminal; it did not run"
        );
        return NOT_ENFORCED_EXIT;
    }
    let Some((prog, rest)) = a.program.split_first() else {
        let _ = writeln!(err, "waymark sandbox: no command given");
        return 2;
    };
    // Landlock checks a file when it is opened; one opened before (a descriptor the runtime
    // was started with and did not mark close-on-exec) would let the command write there.
    if let Err(e) = close_inherited() {
        let _ = writeln!(
            err,
            "waymark sandbox: inherited descriptors could not be closed ({e}); the command did not run"
        );
        return NOT_ENFORCED_EXIT;
    }
    use std::os::unix::process::CommandExt as _;
    let failed = std::process::Command::new(prog).args(rest).exec();
    let _ = writeln!(err, "waymark sandbox: could not run {prog:?}: {failed}");
    127
}

/// Marks every descriptor above stderr close-on-exec, so the command starts with stdin,
/// stdout and stderr only.
#[allow(unsafe_code)]
fn close_inherited() -> std::io::Result<()> {
    const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
    // SAFETY: close_range(2) with CLOSE_RANGE_CLOEXEC only sets a flag on this process's
    // own descriptors; it touches no memory.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3 as libc::c_uint,
            libc::c_uint::MAX,
            CLOSE_RANGE_CLOEXEC,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    // Kernels before 5.11: one descriptor at a time, from /proc/self/fd.
    let fds: Vec<i32> = std::fs::read_dir("/proc/self/fd")?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .filter(|fd| *fd > 2)
        .collect();
    for fd in fds {
        // SAFETY: fcntl(F_SETFD) only sets the close-on-exec flag of a descriptor (one that
        // the directory listing itself used and closed gives EBADF, which is fine).
        unsafe {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
    }
    Ok(())
}

/// Whether this process can read another's environment (its parent's: the runtime).
fn can_read_parent_environ() -> bool {
    #[allow(unsafe_code)]
    // SAFETY: getppid(2) has no arguments and cannot fail.
    let parent = unsafe { libc::getppid() };
    std::fs::read(format!("/proc/{parent}/environ")).is_ok()
}

/// Whether a metadata change goes through: the mode the temp folder already has, set again
/// (a success changes nothing).
fn can_chmod(dirs: &[PathBuf]) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    dirs.first().is_some_and(|d| {
        std::fs::metadata(d).is_ok_and(|m| {
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(m.permissions().mode()))
                .is_ok()
        })
    })
}

/// Whether any capability is left in the effective, permitted, inheritable or ambient sets,
/// read the way a command would: from `/proc/self/status` (a set not listed counts as held,
/// except the ambient set, which kernels before 4.3 lack).
fn holds_capabilities() -> bool {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return true;
    };
    let value = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(str::trim)
    };
    let held = |v: Option<&str>| v.is_none_or(|v| v.chars().any(|c| c != '0'));
    held(value("CapInh:"))
        || held(value("CapPrm:"))
        || held(value("CapEff:"))
        || value("CapAmb:").is_some_and(|v| held(Some(v)))
}

/// What the confined helper can still do, tested: each layer counts only when it is both
/// applied and observed to hold.
fn probe(
    outside: &Path,
    outside_read: Option<&Path>,
    rw_dirs: &[PathBuf],
    l: Landlocked,
    no_tty: bool,
) -> Layers {
    let write_refused = match std::fs::write(outside, b"probe") {
        Ok(()) => {
            let _ = std::fs::remove_file(outside);
            false
        }
        Err(_) => true,
    };
    // A file outside the read set, which the parent made: reading it must fail.
    let read_refused = outside_read.is_some_and(|p| std::fs::read(p).is_err());
    let inet_refused = std::net::UdpSocket::bind("127.0.0.1:0").is_err()
        && std::net::TcpStream::connect("127.0.0.1:9")
            .is_err_and(|e| e.kind() == std::io::ErrorKind::PermissionDenied);
    let unix_refused = std::os::unix::net::UnixDatagram::unbound().is_err();
    Layers {
        filesystem: write_refused && read_refused && !can_read_parent_environ(),
        metadata: !can_chmod(rw_dirs),
        capabilities: !holds_capabilities(),
        landlock_net: l.net,
        device_ioctl: l.ioctl,
        scoping: l.scope && !can_signal_parent(),
        seccomp: inet_refused && unix_refused,
        terminal: no_tty,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_parsed_or_refused() {
        let a = parse(&[
            "--rw".into(),
            "/t".into(),
            "--net".into(),
            "allow".into(),
            "--".into(),
            "ls".into(),
            "-l".into(),
        ])
        .unwrap();
        assert_eq!(a.rw_dirs, [PathBuf::from("/t")]);
        assert_eq!(a.network, seccomp::Network::Allow);
        assert_eq!(a.program, [OsString::from("ls"), OsString::from("-l")]);
        assert!(parse(&["--net".into(), "sometimes".into()]).is_err());
        assert!(parse(&["--bogus".into()]).is_err());
    }
}
