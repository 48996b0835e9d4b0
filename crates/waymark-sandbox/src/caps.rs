//! Capabilities of the sandbox helper: every one dropped before the command starts, so root
//! gets nothing from being root inside the sandbox (no `CAP_CHOWN`, `CAP_SYS_ADMIN`,
//! `CAP_DAC_OVERRIDE`, `CAP_SYS_PTRACE` …). The bounding set, the ambient set and the
//! effective, permitted and inheritable sets are all emptied, with `no_new_privs`, so no
//! later `execve` (a setuid program, a file with capabilities, root's own re-grant on exec)
//! can bring one back. Without `CAP_SETPCAP` (an ordinary user) the bounding set cannot be
//! emptied; `no_new_privs` then makes it unreachable, and the other sets are empty anyway.

/// `struct __user_cap_header_struct`.
#[repr(C)]
struct Header {
    version: u32,
    pid: libc::c_int,
}

/// `struct __user_cap_data_struct` (two of them for the 64 capabilities of version 3).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Data {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const VERSION_3: u32 = 0x2008_0522;
const CAP_SETPCAP: u32 = 8;
/// The highest capability number a kernel could know; the real last one ends the loop.
const MAX_CAP: libc::c_ulong = 63;

// securebits: root is not special on exec, setuid changes nothing, and none of it can be
// undone or ambient capabilities raised afterwards.
const SECBIT_NOROOT: libc::c_ulong = 1 << 0;
const SECBIT_NOROOT_LOCKED: libc::c_ulong = 1 << 1;
const SECBIT_NO_SETUID_FIXUP: libc::c_ulong = 1 << 2;
const SECBIT_NO_SETUID_FIXUP_LOCKED: libc::c_ulong = 1 << 3;
const SECBIT_KEEP_CAPS_LOCKED: libc::c_ulong = 1 << 5;
const SECBIT_NO_CAP_AMBIENT_RAISE: libc::c_ulong = 1 << 6;
const SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED: libc::c_ulong = 1 << 7;

/// Why the capabilities could not be dropped.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CapError(String);

fn os_error(what: &str) -> CapError {
    CapError(format!("{what}: {}", std::io::Error::last_os_error()))
}

#[allow(unsafe_code)]
fn get() -> Result<[Data; 2], CapError> {
    let mut h = Header {
        version: VERSION_3,
        pid: 0,
    };
    let mut d = [Data::default(); 2];
    // SAFETY: capget(2) writes two `Data` structs for version 3, which `d` holds; `h` is a
    // valid header for this process (pid 0).
    let rc = unsafe { libc::syscall(libc::SYS_capget, &mut h as *mut Header, d.as_mut_ptr()) };
    if rc == 0 {
        Ok(d)
    } else {
        Err(os_error("capget"))
    }
}

#[allow(unsafe_code)]
fn prctl(op: libc::c_int, a: libc::c_ulong, b: libc::c_ulong) -> libc::c_int {
    // SAFETY: the prctl(2) operations used here take integer arguments only and change
    // only this process's own credentials.
    unsafe { libc::prctl(op, a, b, 0 as libc::c_ulong, 0 as libc::c_ulong) }
}

/// Drops every capability of this process and sets `no_new_privs`; checks the result (the
/// bounding set must be empty whenever the process could empty it).
#[allow(unsafe_code)]
pub fn drop_all() -> Result<(), CapError> {
    if prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0) != 0 {
        return Err(os_error("prctl(PR_SET_NO_NEW_PRIVS)"));
    }
    let before = get()?;
    let setpcap = before[0].effective & (1 << CAP_SETPCAP) != 0;
    if setpcap {
        // Best effort: a container may have locked other securebits already; the emptied
        // bounding set below is what keeps root from regaining capabilities on exec.
        let _ = prctl(
            libc::PR_SET_SECUREBITS,
            SECBIT_NOROOT
                | SECBIT_NOROOT_LOCKED
                | SECBIT_NO_SETUID_FIXUP
                | SECBIT_NO_SETUID_FIXUP_LOCKED
                | SECBIT_KEEP_CAPS_LOCKED
                | SECBIT_NO_CAP_AMBIENT_RAISE
                | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED,
            0,
        );
        for cap in 0..=MAX_CAP {
            if prctl(libc::PR_CAPBSET_DROP, cap, 0) != 0 {
                match std::io::Error::last_os_error().raw_os_error() {
                    // Past the last capability this kernel knows.
                    Some(libc::EINVAL) => break,
                    _ => return Err(os_error("prctl(PR_CAPBSET_DROP)")),
                }
            }
        }
    }
    // Kernels before 4.3 have no ambient set (EINVAL): nothing to clear there.
    if prctl(
        libc::PR_CAP_AMBIENT,
        libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
        0,
    ) != 0
        && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL)
    {
        return Err(os_error("prctl(PR_CAP_AMBIENT_CLEAR_ALL)"));
    }
    let mut h = Header {
        version: VERSION_3,
        pid: 0,
    };
    let none = [Data::default(); 2];
    // SAFETY: capset(2) reads two `Data` structs for version 3 from `none`; lowering every
    // set to empty is always permitted.
    let rc = unsafe { libc::syscall(libc::SYS_capset, &mut h as *mut Header, none.as_ptr()) };
    if rc != 0 {
        return Err(os_error("capset"));
    }
    let after = get()?;
    if after
        .iter()
        .any(|d| d.effective != 0 || d.permitted != 0 || d.inheritable != 0)
    {
        return Err(CapError("capabilities remain after capset".into()));
    }
    let mut bounding_empty = true;
    for cap in 0..=MAX_CAP {
        match prctl(libc::PR_CAPBSET_READ, cap, 0) {
            0 => {}
            1 => bounding_empty = false,
            _ => break,
        }
        if prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_IS_SET as libc::c_ulong,
            cap,
        ) == 1
        {
            return Err(CapError(format!("ambient capability {cap} remains")));
        }
    }
    if setpcap && !bounding_empty {
        return Err(CapError("the bounding set could not be emptied".into()));
    }
    Ok(())
}
