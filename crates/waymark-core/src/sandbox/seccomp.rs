//! The seccomp layer of the sandboxed shell: a BPF filter (compiled by `seccompiler`)
//! that answers `EPERM` to
//! - `socket()` — every family when the network is denied (no TCP/UDP, and no unix socket,
//!   so D-Bus, the SSH agent, docker.sock and X11 are out of reach); with the network
//!   allowed, every family but IPv4/IPv6 (unix sockets stay closed);
//! - `ioctl(TIOCSTI)` and `ioctl(TIOCLINUX)` — typing into a terminal;
//! - io_uring, which could issue socket calls past the filter;
//! - the kernel keyring calls (`keyctl`, `add_key`, `request_key`), which hold user secrets;
//! - changing another process's limits, priority or CPU placement (`prlimit64`,
//!   `setpriority`, `ioprio_set`, `sched_set*` with a pid other than 0);
//! - System V IPC (shared memory, message queues, semaphores), shared by all the user's
//!   processes;
//! - `setsid` and `setpgid`, so nothing leaves the process group the tool kills when the
//!   command ends.
//!
//! Other architectures' system calls (32-bit `int 0x80` on x86_64) kill the process: the
//! filter checks the architecture first. x32 numbers of the blocked calls are blocked too.

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};
use std::collections::BTreeMap;

/// Whether the filter lets internet sockets through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Network {
    Deny,
    Allow,
}

/// TIOCSTI: push a byte into a terminal's input (the same number on x86_64 and aarch64).
const TIOCSTI: u64 = 0x5412;
/// TIOCLINUX (not in every libc): console ioctls, which can also inject input.
const TIOCLINUX: u64 = 0x541C;

/// x32 system calls are the x86_64 numbers with this bit set.
#[cfg(target_arch = "x86_64")]
const X32_BIT: i64 = 0x4000_0000;

/// Why the filter could not be built or installed.
#[derive(Debug, thiserror::Error)]
pub enum FilterError {
    #[error("building the filter: {0}")]
    Build(#[from] seccompiler::BackendError),
    #[error("installing the filter: {0}")]
    Install(#[from] seccompiler::Error),
}

fn cond(arg: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompCondition, FilterError> {
    Ok(SeccompCondition::new(
        arg,
        SeccompCmpArgLen::Dword,
        op,
        value,
    )?)
}

/// The compiled filter for this machine's architecture.
pub fn program(network: Network) -> Result<BpfProgram, FilterError> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    let socket_rules = match network {
        Network::Deny => Vec::new(),
        Network::Allow => vec![SeccompRule::new(vec![
            cond(0, SeccompCmpOp::Ne, libc::AF_INET as u64)?,
            cond(0, SeccompCmpOp::Ne, libc::AF_INET6 as u64)?,
        ])?],
    };
    rules.insert(libc::SYS_socket, socket_rules);
    rules.insert(
        libc::SYS_ioctl,
        vec![
            SeccompRule::new(vec![cond(1, SeccompCmpOp::Eq, TIOCSTI)?])?,
            SeccompRule::new(vec![cond(1, SeccompCmpOp::Eq, TIOCLINUX)?])?,
        ],
    );
    // Limits, priorities and CPU placement of other processes (`prlimit --pid`, `renice`,
    // `taskset -p`): a limit set on the user's editor can kill it. Only the shell's own
    // (pid or `who` 0) may change.
    let other = |arg: u8| -> Result<Vec<SeccompRule>, FilterError> {
        Ok(vec![SeccompRule::new(vec![cond(
            arg,
            SeccompCmpOp::Ne,
            0,
        )?])?])
    };
    rules.insert(libc::SYS_prlimit64, other(0)?);
    rules.insert(libc::SYS_setpriority, other(1)?);
    rules.insert(libc::SYS_ioprio_set, other(1)?);
    for nr in [
        libc::SYS_sched_setaffinity,
        libc::SYS_sched_setscheduler,
        libc::SYS_sched_setparam,
        libc::SYS_sched_setattr,
    ] {
        rules.insert(nr, other(0)?);
    }
    for nr in [
        // A new session or process group would let a background job outlive the command
        // (the tool kills the command's group when it ends).
        libc::SYS_setsid,
        libc::SYS_setpgid,
        // System V IPC objects are shared by every process of the user.
        libc::SYS_shmget,
        libc::SYS_shmat,
        libc::SYS_shmctl,
        libc::SYS_msgget,
        libc::SYS_msgsnd,
        libc::SYS_msgrcv,
        libc::SYS_msgctl,
        libc::SYS_semget,
        libc::SYS_semop,
        libc::SYS_semtimedop,
        libc::SYS_semctl,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
    ] {
        rules.insert(nr, Vec::new());
    }
    #[cfg(target_arch = "x86_64")]
    {
        let x32: Vec<(i64, Vec<SeccompRule>)> = rules
            .iter()
            .map(|(nr, r)| (nr | X32_BIT, r.clone()))
            .collect();
        rules.extend(x32);
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )?;
    Ok(filter.try_into()?)
}

/// Installs the filter on the calling thread (it is inherited by everything it starts).
pub fn apply(network: Network) -> Result<(), FilterError> {
    let prog = program(network)?;
    Ok(seccompiler::apply_filter(&prog)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_compile_for_this_machine() {
        assert!(!program(Network::Deny).unwrap().is_empty());
        assert!(!program(Network::Allow).unwrap().is_empty());
    }
}
