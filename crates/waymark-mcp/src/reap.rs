//! No stdio server outlives the app. Each one leads its own process group, killed whole when
//! its connection goes; the kernel kills the leader if the app dies without dropping it
//! (`kill -9`), and what the server started is found by the owner mark every server's
//! process carries (`WAYMARK_MCP_OWNER`, the app's pid and start time, inherited by its
//! children) and killed at the next start, once that owner is gone.
#![allow(unsafe_code)] // prctl and kill: plain system calls on values checked here.

pub use waymark_config::mcp::OWNER_VAR;

/// The pid namespace of process `pid` (a pid means something only inside it).
fn pid_namespace(pid: &str) -> Option<String> {
    std::fs::read_link(format!("/proc/{pid}/ns/pid"))
        .ok()
        .map(|p| p.display().to_string())
}

/// When process `pid` started (clock ticks since boot), from `/proc/<pid>/stat`.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// This process's mark: `<pid>:<start time>:<pid namespace>`, which no later process
/// shares.
pub fn owner_mark() -> String {
    let pid = std::process::id();
    format!(
        "{pid}:{}:{}",
        start_time(pid).unwrap_or(0),
        pid_namespace("self").unwrap_or_default()
    )
}

/// Whether the owner a mark names may still be running: the same process (not a later one
/// that got its pid), or one of another pid namespace, which this process cannot judge.
fn owner_alive(mark: &str) -> bool {
    let mut parts = mark.splitn(3, ':');
    let (Some(pid), Some(start), ns) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    if ns.is_some_and(|ns| Some(ns.to_string()) != pid_namespace("self")) {
        return true;
    }
    match (pid.parse::<u32>(), start.parse::<u64>()) {
        (Ok(pid), Ok(start)) => start_time(pid) == Some(start),
        _ => false,
    }
}

/// This process and the processes it descends from: never killed, whatever mark an
/// ancestor's shell passed down.
fn ancestors() -> Vec<u32> {
    let mut out = vec![std::process::id()];
    let mut pid = std::process::id();
    for _ in 0..64 {
        let Some(parent) = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| {
                let rest = &s[s.rfind(')')? + 1..];
                rest.split_whitespace().nth(1)?.parse::<u32>().ok()
            })
        else {
            break;
        };
        if parent <= 1 {
            break;
        }
        out.push(parent);
        pid = parent;
    }
    out
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
    let mine = ancestors();
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
        if mine.contains(&pid) {
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
/// app killed outright): set in the child between fork and exec. The signal follows the
/// thread, not the process, so stdio servers are started by [`spawn`]'s one thread, which
/// lives as long as the app. A child whose parent is already gone exits at once.
pub fn die_with_parent(cmd: &mut tokio::process::Command) {
    let parent = std::process::id();
    // SAFETY: prctl(2) and getppid(2) are async-signal-safe and touch only the child.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // No allocation between fork and exec: a raw OS error only.
            if u32::try_from(libc::getppid()).ok() != Some(parent) {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

type Spawned = std::io::Result<Box<dyn process_wrap::tokio::ChildWrapper>>;

struct Job {
    cmd: process_wrap::tokio::CommandWrap,
    rt: tokio::runtime::Handle,
    reply: tokio::sync::oneshot::Sender<Spawned>,
}

/// The thread stdio servers are started from (see [`die_with_parent`]); `None` when it
/// could not be started, and then the calling thread starts them.
fn spawner() -> Option<&'static std::sync::Mutex<std::sync::mpsc::Sender<Job>>> {
    static SPAWNER: std::sync::OnceLock<Option<std::sync::Mutex<std::sync::mpsc::Sender<Job>>>> =
        std::sync::OnceLock::new();
    SPAWNER
        .get_or_init(|| {
            let (tx, rx) = std::sync::mpsc::channel::<Job>();
            std::thread::Builder::new()
                .name("waymark-mcp-spawn".into())
                .spawn(move || {
                    for mut job in rx {
                        // A panic in one start (a runtime without I/O) must not end the
                        // thread: the kernel would then kill every server it started.
                        let spawned =
                            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                                let _in = job.rt.enter();
                                job.cmd.spawn()
                            }))
                            .unwrap_or_else(|_| Err(std::io::Error::other("starting it panicked")));
                        let _ = job.reply.send(spawned);
                    }
                })
                .ok()
                .map(|_| std::sync::Mutex::new(tx))
        })
        .as_ref()
}

/// Starts `cmd` from the spawner thread (within the current tokio runtime).
pub async fn spawn(mut cmd: process_wrap::tokio::CommandWrap) -> Spawned {
    let rt = tokio::runtime::Handle::current();
    let Some(spawner) = spawner() else {
        return cmd.spawn();
    };
    let (reply, answer) = tokio::sync::oneshot::channel();
    let sent = spawner
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .send(Job { cmd, rt, reply });
    match sent {
        Ok(()) => answer
            .await
            .unwrap_or_else(|_| Err(std::io::Error::other("the spawner thread stopped"))),
        Err(std::sync::mpsc::SendError(mut job)) => job.cmd.spawn(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server started from a thread that then ends keeps running: the death signal is
    /// tied to the spawner thread, which outlives every caller.
    #[test]
    fn a_server_outlives_the_thread_that_asked_for_it() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap();
        let handle = rt.handle().clone();
        let child = std::thread::spawn(move || {
            handle.block_on(async {
                let mut cmd = tokio::process::Command::new("sleep");
                cmd.arg("30");
                die_with_parent(&mut cmd);
                spawn(process_wrap::tokio::CommandWrap::from(cmd))
                    .await
                    .unwrap()
            })
        })
        .join()
        .unwrap();
        let pid = child.id().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        assert!(
            !state[state.rfind(')').unwrap() + 1..]
                .trim_start()
                .starts_with('Z'),
            "{state}"
        );
        let mut child = child;
        let _ = child.start_kill();
        drop(rt);
    }

    #[test]
    fn this_process_is_its_own_live_owner_and_a_made_up_one_is_not() {
        let mark = owner_mark();
        assert!(owner_alive(&mark), "{mark}");
        let parts: Vec<&str> = mark.splitn(3, ':').collect();
        // Same pid, another start time: a later process that got the pid.
        let later = format!(
            "{}:{}:{}",
            parts[0],
            parts[1].parse::<u64>().unwrap() + 1,
            parts[2]
        );
        assert!(!owner_alive(&later));
        assert!(!owner_alive("garbage"));
        assert!(!owner_alive(&format!("4294967295:1:{}", parts[2])));
        // Another pid namespace's owner is not this process's to judge.
        assert!(owner_alive("4294967295:1:pid:[1]"));
        assert!(ancestors().contains(&std::process::id()));
    }
}
