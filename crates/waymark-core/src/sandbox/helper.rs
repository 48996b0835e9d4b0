//! The sandbox helper: the process a sandboxed command starts as (a re-exec of a Waymark
//! binary, `<binary> __waymark-sandbox …`). It confines itself — file-size limit, Landlock
//! (filesystem, TCP, device ioctls, signal and abstract-socket scoping, as far as the kernel
//! goes), seccomp — checks what it got, and only then execs the command. Its parent has
//! already started it in a new session (no controlling terminal) with stdin from
//! /dev/null and a scrubbed environment.

use super::seccomp;
use super::{Layers, NOT_ENFORCED_EXIT};
use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
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
    rw_dirs: &[PathBuf],
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
        match try_landlock(abi, got, rw_dirs, rw_files) {
            Ok(()) => return Ok(got),
            Err(e) => last = e.0,
        }
    }
    Err(NotEnforced(format!(
        "Landlock with ABI 3 or later is not available ({last})"
    )))
}

fn try_landlock(
    abi: ABI,
    parts: Landlocked,
    rw_dirs: &[PathBuf],
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
    let status = ruleset
        .create()
        .map_err(e)?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi)))
        .map_err(e)?
        .add_rules(path_beneath_rules(rw_dirs, AccessFs::from_all(abi)))
        .map_err(e)?
        .add_rules(path_beneath_rules(rw_files, AccessFs::from_file(abi)))
        .map_err(e)?
        .add_rules(path_beneath_rules(["/dev/null"], AccessFs::from_file(abi)))
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
    rw_dirs: Vec<PathBuf>,
    rw_files: Vec<PathBuf>,
    network: seccomp::Network,
    probe: Option<PathBuf>,
    program: Vec<OsString>,
}

fn parse(args: &[OsString]) -> Result<Args, UsageError> {
    let mut a = Args {
        rw_dirs: Vec::new(),
        rw_files: Vec::new(),
        network: seccomp::Network::Deny,
        probe: None,
        program: Vec::new(),
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.to_str() {
            Some("--rw") => a.rw_dirs.extend(it.next().map(PathBuf::from)),
            Some("--rw-file") => a.rw_files.extend(it.next().map(PathBuf::from)),
            Some("--probe") => a.probe = it.next().map(PathBuf::from),
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
    Ok(a)
}

/// A wrong helper command line.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct UsageError(String);

/// Entry point of the helper: `[--rw DIR]… [--rw-file FILE]… [--net deny|allow]
/// (--probe PATH | -- PROGRAM ARGS…)`. Returns the exit code when it does not exec. The
/// probe's report goes to `out`, refusals to `err` (the binaries pass their stdout and
/// stderr, which become the command's output).
pub fn main(args: &[OsString], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let a = match parse(args) {
        Ok(a) => a,
        Err(e) => {
            let _ = writeln!(err, "waymark sandbox: {e}");
            return 2;
        }
    };
    // Checked before Landlock, which would refuse the open for its own reasons.
    let no_tty = std::fs::File::open("/dev/tty").is_err();
    let confined = limit_file_size(FILE_SIZE_LIMIT)
        .and_then(|()| landlock(&a.rw_dirs, &a.rw_files, a.network == seccomp::Network::Deny));
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
    if let Err(e) = seccomp::apply(a.network) {
        let _ = writeln!(
            err,
            "waymark sandbox: the seccomp filter could not be installed ({e}); the command did not run"
        );
        return NOT_ENFORCED_EXIT;
    }
    if let Some(outside) = a.probe {
        let _ = writeln!(out, "{}", probe(&outside, landlocked, no_tty).encode());
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
    use std::os::unix::process::CommandExt as _;
    let failed = std::process::Command::new(prog).args(rest).exec();
    let _ = writeln!(err, "waymark sandbox: could not run {prog:?}: {failed}");
    127
}

/// What the confined helper can still do, tested: each layer counts only when it is both
/// applied and observed to hold.
fn probe(outside: &Path, l: Landlocked, no_tty: bool) -> Layers {
    let write_refused = match std::fs::write(outside, b"probe") {
        Ok(()) => {
            let _ = std::fs::remove_file(outside);
            false
        }
        Err(_) => true,
    };
    let inet_refused = std::net::UdpSocket::bind("127.0.0.1:0").is_err()
        && std::net::TcpStream::connect("127.0.0.1:9")
            .is_err_and(|e| e.kind() == std::io::ErrorKind::PermissionDenied);
    let unix_refused = std::os::unix::net::UnixDatagram::unbound().is_err();
    Layers {
        filesystem: write_refused,
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
