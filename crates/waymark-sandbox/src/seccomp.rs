//! The seccomp layer of the sandboxed shell: a BPF filter (compiled by `seccompiler`)
//! that answers `EPERM` to
//! - `socket()` — every family when the network is denied (no TCP/UDP, and no unix socket,
//!   so D-Bus, the SSH agent, docker.sock and X11 are out of reach); with the network
//!   allowed, every family but IPv4/IPv6 (unix sockets stay closed);
//! - `ioctl(TIOCSTI)` and `ioctl(TIOCLINUX)` — typing into a terminal;
//! - io_uring, which could issue socket calls past the filter;
//! - the kernel keyring calls (`keyctl`, `add_key`, `request_key`), which hold user secrets;
//! - changing another process's limits, priority or CPU placement (`prlimit64`,
//!   `setpriority`, `ioprio_set`, `sched_set*` with a pid other than 0, or for a whole
//!   process group or user);
//! - file leases and write-life hints (`fcntl` `F_SETLEASE`, `F_SET_RW_HINT`,
//!   `F_SET_FILE_RW_HINT`), which act on files the command may only read;
//! - System V IPC (shared memory, message queues, semaphores), shared by all the user's
//!   processes;
//! - `setsid` and `setpgid`, so nothing leaves the process group the tool kills when the
//!   command ends;
//! - every call that changes file metadata, which Landlock does not cover: the chmod, chown,
//!   utime and xattr families (`*at` and fd variants included, `file_setattr` too) and the ioctls that set
//!   inode flags (`chattr`) or the inode generation;
//! - as defence in depth behind the dropped capabilities: host names, mounts (old and new
//!   API), `pivot_root`, `chroot`, swap, `reboot`, `kexec_*`, kernel modules, `bpf`,
//!   accounting and quotas, and new namespaces (`unshare`, `setns`, `clone` with a
//!   namespace flag), whose private capabilities would otherwise apply inside them.
//!   `clone3`, whose flags a filter cannot read, answers `ENOSYS`, so libc falls back to
//!   `clone`;
//! - watching files (`inotify_*`, `fanotify_*`), which Landlock does not cover either: a
//!   watch on a private folder would report when anyone touches what the command cannot
//!   read. Tools that watch (`tail -f`) fall back to polling.
//!
//! Other architectures' system calls (32-bit `int 0x80` on x86_64) kill the process: the
//! filter checks the architecture first. x32 numbers of the blocked calls are blocked too.
//! Calls newer than the filter (numbers past `file_setattr`, native or x32) answer `ENOSYS`,
//! so a new kernel's new calls open no hole.

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

/// Whether mode and time changes go through: refused in the read-only shell; allowed in the
/// scratch shell, where every mount but the scratch layer, the temp folder and the plan file
/// is read-only (so a change can land only there), and where linkers mark their output
/// executable and build tools stamp times. Ownership and xattrs stay refused in both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metadata {
    Refused,
    ModeAndTimes,
}

/// The mode and time calls [`Metadata::ModeAndTimes`] lets through.
fn mode_and_time_calls() -> Vec<i64> {
    let mut v = vec![
        libc::SYS_fchmod,
        libc::SYS_fchmodat,
        nr::FCHMODAT2,
        libc::SYS_utimensat,
    ];
    #[cfg(target_arch = "x86_64")]
    v.extend([
        libc::SYS_chmod,
        libc::SYS_utime,
        libc::SYS_utimes,
        libc::SYS_futimesat,
    ]);
    v
}

/// TIOCSTI: push a byte into a terminal's input (the same number on x86_64 and aarch64).
const TIOCSTI: u64 = 0x5412;
/// TIOCLINUX (not in every libc): console ioctls, which can also inject input.
const TIOCLINUX: u64 = 0x541C;

/// `FS_IOC_SETFLAGS` and its 32-bit twin, and `FS_IOC_FSSETXATTR`: inode flags (`chattr`).
const FS_IOC_SETFLAGS: u64 = 0x4008_6602;
const FS_IOC32_SETFLAGS: u64 = 0x4004_6602;
const FS_IOC_FSSETXATTR: u64 = 0x401c_5820;
/// `FS_IOC_SETVERSION` and its 32-bit twin: the inode generation number.
const FS_IOC_SETVERSION: u64 = 0x4008_7602;
const FS_IOC32_SETVERSION: u64 = 0x4004_7602;

/// ext4's own inode-generation ioctls, its extent migration and boot-loader swap; fs-verity
/// (which freezes a file for good), fscrypt keys and policies, and dedupe (which may name a
/// file opened read-only as its target).
const FS_SPECIFIC: &[u64] = &[
    0x4008_6604, // EXT4_IOC_SETVERSION
    0x4004_6604, // EXT4_IOC32_SETVERSION
    0x0000_6609, // EXT4_IOC_MIGRATE
    0x0000_6611, // EXT4_IOC_SWAP_BOOT
    0x4080_6685, // FS_IOC_ENABLE_VERITY
    0xc050_6617, // FS_IOC_ADD_ENCRYPTION_KEY
    0xc040_6618, // FS_IOC_REMOVE_ENCRYPTION_KEY
    0xc040_6619, // FS_IOC_REMOVE_ENCRYPTION_KEY_ALL_USERS
    0x800c_6613, // FS_IOC_SET_ENCRYPTION_POLICY
    0xc018_9436, // FIDEDUPERANGE
];

/// `fcntl` commands that act on a file beyond the open descriptor.
const F_SETLEASE: u64 = 1024;
const F_SET_RW_HINT: u64 = 1036;
const F_SET_FILE_RW_HINT: u64 = 1038;

/// `ioprio_set`'s selector for a single process.
const IOPRIO_WHO_PROCESS: u64 = 1;

/// System calls added since Linux 5.1 share one number on every architecture (older libc
/// releases lack some of them).
mod nr {
    pub const OPEN_TREE: i64 = 428;
    pub const MOVE_MOUNT: i64 = 429;
    pub const FSOPEN: i64 = 430;
    pub const FSCONFIG: i64 = 431;
    pub const FSMOUNT: i64 = 432;
    pub const FSPICK: i64 = 433;
    pub const CLONE3: i64 = 435;
    pub const MOUNT_SETATTR: i64 = 442;
    pub const FCHMODAT2: i64 = 452;
    pub const SETXATTRAT: i64 = 463;
    pub const REMOVEXATTRAT: i64 = 466;
    pub const OPEN_TREE_ATTR: i64 = 467;
    pub const FILE_SETATTR: i64 = 469;
}

/// Flags of `clone` that make a new namespace.
const NAMESPACE_FLAGS: [i32; 7] = [
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWNS,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWCGROUP,
];

/// The metadata and system-administration calls refused outright (this architecture's).
fn refused_calls() -> Vec<i64> {
    let mut v = vec![
        // File metadata.
        libc::SYS_fchmod,
        libc::SYS_fchmodat,
        nr::FCHMODAT2,
        libc::SYS_fchown,
        libc::SYS_fchownat,
        libc::SYS_utimensat,
        libc::SYS_setxattr,
        libc::SYS_lsetxattr,
        libc::SYS_fsetxattr,
        libc::SYS_removexattr,
        libc::SYS_lremovexattr,
        libc::SYS_fremovexattr,
        nr::SETXATTRAT,
        nr::REMOVEXATTRAT,
        // The machine and its filesystems.
        libc::SYS_sethostname,
        libc::SYS_setdomainname,
        libc::SYS_mount,
        libc::SYS_umount2,
        nr::OPEN_TREE,
        nr::MOVE_MOUNT,
        nr::FSOPEN,
        nr::FSCONFIG,
        nr::FSMOUNT,
        nr::FSPICK,
        nr::MOUNT_SETATTR,
        nr::OPEN_TREE_ATTR,
        nr::FILE_SETATTR,
        libc::SYS_pivot_root,
        libc::SYS_chroot,
        libc::SYS_swapon,
        libc::SYS_swapoff,
        libc::SYS_reboot,
        libc::SYS_kexec_load,
        libc::SYS_kexec_file_load,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_bpf,
        libc::SYS_acct,
        libc::SYS_quotactl,
        // New namespaces.
        libc::SYS_unshare,
        libc::SYS_setns,
        // Watching files: Landlock does not cover it, so a watch on a private folder would
        // tell the command when the user or the runtime touches what it cannot read.
        libc::SYS_inotify_init1,
        libc::SYS_inotify_add_watch,
        libc::SYS_fanotify_init,
        libc::SYS_fanotify_mark,
    ];
    // Calls only x86_64 still has (aarch64 has the `*at` forms alone).
    #[cfg(target_arch = "x86_64")]
    v.extend([
        libc::SYS_chmod,
        libc::SYS_chown,
        libc::SYS_lchown,
        libc::SYS_utime,
        libc::SYS_utimes,
        libc::SYS_futimesat,
        libc::SYS_inotify_init,
    ]);
    v
}

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
    #[error("no seccomp filter for the {0} architecture")]
    Arch(String),
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
pub fn program(network: Network, metadata: Metadata) -> Result<BpfProgram, FilterError> {
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
        [
            TIOCSTI,
            TIOCLINUX,
            FS_IOC_SETFLAGS,
            FS_IOC32_SETFLAGS,
            FS_IOC_FSSETXATTR,
            FS_IOC_SETVERSION,
            FS_IOC32_SETVERSION,
        ]
        .into_iter()
        .chain(FS_SPECIFIC.iter().copied())
        .map(|op| SeccompRule::new(vec![cond(1, SeccompCmpOp::Eq, op)?]).map_err(Into::into))
        .collect::<Result<_, FilterError>>()?,
    );
    // A new namespace through clone: one rule per flag (any of them set refuses).
    rules.insert(
        libc::SYS_clone,
        NAMESPACE_FLAGS
            .into_iter()
            .map(|f| {
                let f = f as u64;
                SeccompRule::new(vec![SeccompCondition::new(
                    0,
                    SeccompCmpArgLen::Qword,
                    SeccompCmpOp::MaskedEq(f),
                    f,
                )?])
                .map_err(Into::into)
            })
            .collect::<Result<_, FilterError>>()?,
    );
    let allowed = match metadata {
        Metadata::Refused => Vec::new(),
        Metadata::ModeAndTimes => mode_and_time_calls(),
    };
    for nr in refused_calls() {
        if !allowed.contains(&nr) {
            rules.insert(nr, Vec::new());
        }
    }
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
    // `who` 0 means "this process" only for PRIO_PROCESS / IOPRIO_WHO_PROCESS; with a
    // group or user selector it means every process of the caller's group or user.
    let mut own_only = other(1)?;
    own_only.push(SeccompRule::new(vec![cond(
        0,
        SeccompCmpOp::Ne,
        libc::PRIO_PROCESS as u64,
    )?])?);
    rules.insert(libc::SYS_setpriority, own_only);
    let mut own_io = other(1)?;
    own_io.push(SeccompRule::new(vec![cond(
        0,
        SeccompCmpOp::Ne,
        IOPRIO_WHO_PROCESS,
    )?])?);
    rules.insert(libc::SYS_ioprio_set, own_io);
    // Leases (an open elsewhere then waits for the holder) and write-life hints (kept on
    // the inode): both act on files the command may only read.
    rules.insert(
        libc::SYS_fcntl,
        [F_SETLEASE, F_SET_RW_HINT, F_SET_FILE_RW_HINT]
            .into_iter()
            .map(|op| SeccompRule::new(vec![cond(1, SeccompCmpOp::Eq, op)?]).map_err(Into::into))
            .collect::<Result<_, FilterError>>()?,
    );
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

/// The newest system call the filters know (`file_setattr`, Linux 6.17; the numbers from
/// 424 on are the same on every architecture). Every number above it answers `ENOSYS`, so a
/// kernel that adds a call (one that changes metadata, say) opens no hole the filter has
/// not seen; programs treat `ENOSYS` as "this kernel is too old" and fall back.
const NEWEST_KNOWN: u32 = 469;

/// The second filter, written as BPF by hand (seccompiler matches numbers one by one, not
/// ranges): `clone3` answers `ENOSYS` (its flags sit in memory a filter cannot read), so libc
/// retries with `clone`, whose namespace flags the main filter checks; so does every call
/// newer than [`NEWEST_KNOWN`], native or x32.
pub fn enosys_program() -> Result<BpfProgram, FilterError> {
    use seccompiler::sock_filter;
    const LOAD: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
    const JEQ: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
    const JGE: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
    const RET: u16 = 0x06; // BPF_RET | BPF_K
    // Offsets in `struct seccomp_data`.
    const NR: u32 = 0;
    const ARCH: u32 = 4;
    let arch: u32 = match std::env::consts::ARCH {
        "x86_64" => 0xC000_003E,
        "aarch64" => 0xC000_00B7,
        other => return Err(FilterError::Arch(other.to_string())),
    };
    let x32 = 0x4000_0000u32;
    let clone3 = nr::CLONE3 as u32;
    let newer = NEWEST_KNOWN + 1;
    let op = |code, k, jt, jf| sock_filter { code, jt, jf, k };
    let allow = libc::SECCOMP_RET_ALLOW;
    let enosys = libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32;
    Ok(vec![
        /* 0 */ op(LOAD, ARCH, 0, 0),
        // Another architecture: the main filter kills the process.
        /* 1 */
        op(JEQ, arch, 1, 0),
        /* 2 */ op(RET, allow, 0, 0),
        /* 3 */ op(LOAD, NR, 0, 0),
        /* 4 */ op(JEQ, clone3, 5, 0),
        /* 5 */ op(JEQ, clone3 | x32, 4, 0),
        /* 6 */ op(JGE, x32 | newer, 3, 0),
        /* 7 */ op(JGE, x32, 1, 0),
        /* 8 */ op(JGE, newer, 1, 0),
        /* 9 */ op(RET, allow, 0, 0),
        /* 10 */ op(RET, enosys, 0, 0),
    ])
}

/// Installs the filters on the calling thread (they are inherited by everything it starts).
pub fn apply(network: Network, metadata: Metadata) -> Result<(), FilterError> {
    let prog = program(network, metadata)?;
    seccompiler::apply_filter(&prog)?;
    Ok(seccompiler::apply_filter(&enosys_program()?)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the hand-written filter on one call, as the kernel would.
    fn decide(prog: &[seccompiler::sock_filter], arch: u32, nr: u32) -> u32 {
        let (mut pc, mut acc) = (0usize, 0u32);
        loop {
            let i = &prog[pc];
            pc += 1;
            match i.code {
                0x20 => acc = if i.k == 0 { nr } else { arch },
                0x15 => pc += usize::from(if acc == i.k { i.jt } else { i.jf }),
                0x35 => pc += usize::from(if acc >= i.k { i.jt } else { i.jf }),
                0x06 => return i.k,
                other => panic!("unexpected instruction {other:#x}"),
            }
        }
    }

    #[test]
    fn calls_newer_than_the_filter_and_clone3_answer_enosys() {
        let prog = enosys_program().unwrap();
        let arch = if cfg!(target_arch = "x86_64") {
            0xC000_003E
        } else {
            0xC000_00B7
        };
        let enosys = libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32;
        let allow = libc::SECCOMP_RET_ALLOW;
        let x32 = 0x4000_0000;
        for (nr, want) in [
            (0, allow),
            (libc::SYS_openat as u32, allow),
            (nr::CLONE3 as u32, enosys),
            (nr::CLONE3 as u32 | x32, enosys),
            (NEWEST_KNOWN, allow),
            (NEWEST_KNOWN + 1, enosys),
            (NEWEST_KNOWN + 60, enosys),
            (x32 | 1, allow),
            (x32 | NEWEST_KNOWN, allow),
            (x32 | (NEWEST_KNOWN + 1), enosys),
            (u32::MAX, enosys),
        ] {
            assert_eq!(decide(&prog, arch, nr), want, "call {nr:#x}");
        }
        // Another architecture is left to the main filter, which kills it.
        assert_eq!(decide(&prog, 0x4000_0003, NEWEST_KNOWN + 1), allow);
    }

    #[test]
    fn filters_compile_for_this_machine() {
        assert!(
            !program(Network::Deny, Metadata::Refused)
                .unwrap()
                .is_empty()
        );
        assert!(
            !program(Network::Allow, Metadata::Refused)
                .unwrap()
                .is_empty()
        );
        let scratch = program(Network::Deny, Metadata::ModeAndTimes).unwrap();
        assert!(
            scratch.len() < program(Network::Deny, Metadata::Refused).unwrap().len(),
            "the scratch shell's filter refuses fewer calls"
        );
        assert!(!enosys_program().unwrap().is_empty());
    }
}
