//! No stdio server outlives the app. Each one leads its own process group, killed whole when
//! its connection goes; the kernel kills the leader if the app dies without dropping it
//! (`kill -9`), and what the server started is found by the owner mark every server's
//! process carries (`WAYMARK_MCP_OWNER`, the app's pid and start time, inherited by its
//! children) and killed at the next start, once that owner is gone.
#![allow(unsafe_code)] // prctl and kill: plain system calls on values checked here.

/// The variable every stdio server's process is started with.
pub const OWNER_VAR: &str = "WAYMARK_MCP_OWNER";

/// When process `pid` started (clock ticks since boot), from `/proc/<pid>/stat`.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// This process's mark: `<pid>:<start time>`, which no later process shares.
pub fn owner_mark() -> String {
    let pid = std::process::id();
    format!("{pid}:{}", start_time(pid).unwrap_or(0))
}

/// Whether the owner a mark names is still running (the same process, not a later one
/// that got its pid).
fn owner_alive(mark: &str) -> bool {
    let Some((pid, start)) = mark.split_once(':') else {
        return false;
    };
    match (pid.parse::<u32>(), start.parse::<u64>()) {
        (Ok(pid), Ok(start)) => start_time(pid) == Some(start),
        _ => false,
    }
}

/// The owner mark in process `pid`'s environment, if it has one.
fn mark_of(pid: u32) -> Option<String> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let prefix = format!("{OWNER_VAR}=");
    env.split(|&b| b == 0).find_map(|entry| {
        entry
            .strip_prefix(prefix.as_bytes())
            .map(|v| String::from_utf8_lossy(v).into_owned())
    })
}

/// Kills every process left by a stdio server whose app is gone; returns how many. Only
/// processes carrying a mark are touched, and never one whose owner still runs (another
/// Waymark process on the same machine keeps its servers).
pub fn reap_orphans() -> usize {
    let me = std::process::id();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut killed = 0;
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Some(mark) = mark_of(pid) else { continue };
        if owner_alive(&mark) {
            continue;
        }
        let Ok(raw) = libc::pid_t::try_from(pid) else {
            continue;
        };
        // SAFETY: kill(2) on a positive pid read from /proc; it cannot touch memory.
        if unsafe { libc::kill(raw, libc::SIGKILL) } == 0 {
            killed += 1;
        }
    }
    if killed > 0 {
        tracing::warn!(
            killed,
            "killed processes of MCP servers an earlier run left behind"
        );
    }
    killed
}

/// Makes the kernel kill the child being started when the thread that starts it dies (the
/// app killed outright): set in the child between fork and exec.
pub fn die_with_parent(cmd: &mut tokio::process::Command) {
    // SAFETY: prctl(2) is async-signal-safe and only sets a flag of the child process.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_its_own_live_owner_and_a_made_up_one_is_not() {
        let mark = owner_mark();
        assert!(owner_alive(&mark), "{mark}");
        let (pid, start) = mark.split_once(':').unwrap();
        // Same pid, another start time: a later process that got the pid.
        let later = format!("{pid}:{}", start.parse::<u64>().unwrap() + 1);
        assert!(!owner_alive(&later));
        assert!(!owner_alive("garbage"));
        assert!(!owner_alive("4294967295:1"));
    }
}
