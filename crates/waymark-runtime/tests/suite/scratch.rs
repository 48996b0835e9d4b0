//! The scratch shell (issue 39), attacked at the helper: a command may write anything over
//! the workspace, and the workspace, its `.git` and everything outside stay byte-identical.
//! Each case is what a check (or a hostile model in plan mode) would try.

use std::ffi::OsString;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use waymark_config::ShellNetwork;
use waymark_sandbox::mount::SCRATCH_FULL_EXIT;
use waymark_sandbox::private::Owner;
use waymark_sandbox::reads::ReadScope;
use waymark_sandbox::scratch::Scratch;
use waymark_sandbox::{Sandbox, SandboxSpec};

struct Box_ {
    _dir: tempfile::TempDir,
    root: PathBuf,
    ws: PathBuf,
    sandbox: Sandbox,
    scratch: Scratch,
}

fn git(ws: &Path, args: &[&str]) {
    let ok = std::process::Command::new("git")
        .args(args)
        .current_dir(ws)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .unwrap();
    assert!(ok.status.success(), "{ok:?}");
}

/// A workspace with files and a git repository, a session's data folder beside it, and a
/// folder outside both that nothing may change.
fn setup(max_bytes: u64) -> Box_ {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let waymark_test_support::sandbox_layout::Layout {
        ws,
        data,
        tmp,
        scope,
        ..
    } = waymark_test_support::sandbox_layout::layout(&root);
    std::fs::create_dir_all(root.join("outside")).unwrap();
    std::fs::write(root.join("outside/keep.txt"), "outside\n").unwrap();
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(ws.join("a.txt"), "alpha\n").unwrap();
    std::fs::write(ws.join("b.txt"), "beta\n").unwrap();
    std::fs::write(ws.join("src/lib.rs"), "pub fn f() {}\n").unwrap();
    git(&ws, &["init", "-q"]);
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-qm", "first"]);
    let helper = vec![OsString::from(env!("CARGO_BIN_EXE_waymark-sandbox"))];
    let sandbox = Sandbox::new(Some(helper), None, tmp, scope);
    assert!(sandbox.probe().complete(), "{:?}", sandbox.probe());
    let scratch = Scratch {
        workspace: ws.clone(),
        layer: data.join("sessions/s1/goals/g1/layer"),
        max_bytes,
        keep: waymark_sandbox::scratch::Keep::All,
    };
    let b = Box_ {
        _dir: dir,
        root,
        ws,
        sandbox,
        scratch,
    };
    // Every attack below must fail for its own reason, not because nothing runs at all.
    let (code, out) = b.run("echo ok > made-by-the-command && cat made-by-the-command");
    assert_eq!((code, out.as_str()), (0, "ok\n"), "the scratch shell runs");
    b
}

impl Box_ {
    fn spec(&self) -> SandboxSpec {
        let mut spec = self
            .sandbox
            .spec(Vec::new(), ShellNetwork::Deny, &Default::default())
            .unwrap();
        spec.scratch = Some(self.scratch.clone());
        spec
    }

    fn command(&self, script: &str) -> std::process::Command {
        let spec = self.spec();
        let argv = spec.command_line("bash".as_ref(), &["-c".as_ref(), script.as_ref()]);
        let mut c = std::process::Command::new(&argv[0]);
        c.args(&argv[1..])
            .env_clear()
            .envs(std::env::vars_os().filter(|(k, _)| k == "PATH" || k == "HOME"))
            .env("TMPDIR", &spec.tmp)
            .current_dir(&self.ws)
            .stdin(std::process::Stdio::null());
        waymark_sandbox::new_session(&mut c);
        c
    }

    /// Runs `script` in the scratch shell: exit code and output (stdout then stderr).
    fn run(&self, script: &str) -> (i32, String) {
        let out = self.command(script).output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    }
}

/// Everything under `dir` as it is on disk: each entry's path, type, mode, owner, size,
/// modification time and content (a link's target), `.git` included.
fn tree(dir: &Path) -> Vec<String> {
    let mut v = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let m = p.symlink_metadata().unwrap();
            let body = if m.is_file() {
                format!("{:?}", std::fs::read(&p).unwrap())
            } else if m.is_symlink() {
                std::fs::read_link(&p).unwrap().display().to_string()
            } else {
                todo.push(p.clone());
                String::new()
            };
            v.push(format!(
                "{} {:o} {} {} {} {}.{} {body}",
                p.strip_prefix(dir).unwrap().display(),
                m.mode(),
                m.uid(),
                m.gid(),
                m.size(),
                m.mtime(),
                m.mtime_nsec()
            ));
        }
    }
    v.sort();
    v
}

/// A build writes, deletes and changes files; the command sees its own changes, the next
/// command of the same layer sees them too, and the workspace is byte-identical throughout.
#[test]
fn scratch_writes_land_in_the_layer_and_the_workspace_stays_byte_identical() {
    let b = setup(64 << 20);
    let before = tree(&b.ws);
    let (code, out) = b.run(
        "set -e; echo built >> a.txt; rm b.txt; mkdir -p target/debug; echo bin > target/debug/app; \
         chmod +x target/debug/app; touch -d 2001-01-01 src/lib.rs; cat a.txt; ls",
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("alpha\nbuilt"), "{out}");
    assert!(!out.contains("b.txt"), "{out}");
    assert_eq!(tree(&b.ws), before, "the workspace did not change");
    // Kept for the next command of the same owner: an incremental build finds its output.
    let (code, out) = b.run("cat target/debug/app && test -x target/debug/app && cat a.txt");
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("bin") && out.contains("built"), "{out}");
    // `rm -rf` of everything changes nothing underneath.
    let (code, out) = b.run("rm -rf ./* .[!.]* 2>/dev/null; ls -A | wc -l");
    assert_eq!(
        out.trim().lines().last(),
        Some("1"),
        "only .git is left: {out}"
    );
    assert_eq!(code, 0);
    assert_eq!(tree(&b.ws), before);
}

/// `.git` cannot change, even in the layer: commits, removal, mode changes, hooks.
#[test]
fn scratch_git_is_read_only_and_the_workspace_is_unchanged() {
    let b = setup(64 << 20);
    let before = tree(&b.ws);
    for attack in [
        "git commit -q --allow-empty -m evil",
        "echo '[core]' >> .git/config",
        "echo 'rm -rf ~' > .git/hooks/pre-commit",
        "chmod 777 .git/config",
        "rm -rf .git/objects",
        "mv .git .git-old",
        "git tag evil",
    ] {
        let (code, out) = b.run(attack);
        assert_ne!(code, 0, "{attack} went through: {out}");
    }
    let (_, out) = b.run("git log --oneline | wc -l; git status --porcelain --untracked-files=no");
    assert_eq!(out.trim(), "1", "git reads the repository as it was: {out}");
    assert_eq!(tree(&b.ws), before);
}

/// Links out of the workspace (absolute, relative, a folder, into the layer's own folder)
/// write nowhere; links the command makes itself neither.
#[test]
fn scratch_links_out_of_the_workspace_write_nowhere() {
    let b = setup(64 << 20);
    let outside = b.root.join("outside");
    b.scratch.prepare().unwrap();
    std::os::unix::fs::symlink(outside.join("keep.txt"), b.ws.join("abs-link")).unwrap();
    std::os::unix::fs::symlink("../outside/keep.txt", b.ws.join("rel-link")).unwrap();
    std::os::unix::fs::symlink(&outside, b.ws.join("dir-link")).unwrap();
    std::os::unix::fs::symlink(b.scratch.upper(), b.ws.join("layer-link")).unwrap();
    let before = tree(&b.ws);
    let outside_before = tree(&outside);
    for attack in [
        "echo evil > abs-link",
        "echo evil >> rel-link",
        "echo evil > dir-link/new.txt",
        "rm dir-link/keep.txt",
        "echo evil > layer-link/a.txt",
        "ln -s ../outside made && echo evil > made/keep.txt",
        &format!("echo evil > {}/keep.txt", outside.display()),
        &format!("touch -d 2001-01-01 {}/keep.txt", outside.display()),
        &format!("chmod 777 {}/keep.txt", outside.display()),
    ] {
        let (code, out) = b.run(attack);
        assert_ne!(code, 0, "{attack} went through: {out}");
    }
    assert_eq!(tree(&outside), outside_before, "nothing outside changed");
    assert_eq!(tree(&b.ws), before);
    // The layer holds no file the links aimed at it could have planted.
    assert!(!b.scratch.upper().join("a.txt").exists());
}

/// A private place inside the workspace (a workspace that is a home folder, with its
/// `.ssh`) stays unreadable: the overlay is granted write rights, never reads beyond the
/// read set.
#[test]
fn scratch_a_private_place_inside_the_workspace_stays_unreadable() {
    let mut b = setup(64 << 20);
    std::fs::create_dir_all(b.ws.join(".ssh")).unwrap();
    std::fs::write(b.ws.join(".ssh/id_ed25519"), "ssh-secret").unwrap();
    let data = b.root.join("data");
    let scope = ReadScope {
        workspace: b.ws.clone(),
        artifacts: data.join("sessions/s1/artifacts"),
        project: Vec::new(),
        homes: vec![b.ws.clone()],
        owner: Owner {
            waymark: vec![data.clone()],
            homes: vec![b.ws.clone()],
            env: std::env::vars_os().filter(|(k, _)| k == "PATH").collect(),
        },
    };
    let helper = vec![OsString::from(env!("CARGO_BIN_EXE_waymark-sandbox"))];
    b.sandbox = Sandbox::new(
        Some(helper),
        None,
        data.join("sessions/s1/sandbox-tmp"),
        scope,
    );
    assert!(b.sandbox.probe().complete());
    let (code, out) = b.run("cat .ssh/id_ed25519; cat a.txt");
    assert!(!out.contains("ssh-secret"), "{out}");
    assert!(
        out.contains("alpha"),
        "the rest of the workspace reads: {out}"
    );
    assert!(out.contains("Permission denied"), "{out}");
    assert_eq!(code, 0);
}

/// Mounts cannot be undone from inside: the overlay, the read-only `.git` and the read-only
/// rest stay.
#[test]
fn scratch_mounts_cannot_be_undone_from_inside() {
    let b = setup(64 << 20);
    let ws = b.ws.display().to_string();
    for attack in [
        format!("umount {ws}"),
        format!("umount -l {ws}/.git"),
        "mount -o remount,rw /".into(),
        "unshare -Urm true".into(),
        // The layer's own folder, found in the mount table.
        r#"L=$(sed -nE 's/.*upperdir=([^,]*)\/upper.*/\1/p' /proc/1/mountinfo); chmod 777 "$L""#
            .into(),
        // A /proc entry's mode is the machine's (as root the command owns it).
        "chmod 0440 /proc/version".into(),
    ] {
        let (code, out) = b.run(&attack);
        assert_ne!(code, 0, "{attack} went through: {out}");
    }
    use std::os::unix::fs::PermissionsExt as _;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let version = Path::new("/proc/version");
    if mode(version) != 0o444 {
        // Put back what a broken rule let through (root only), then fail.
        let _ = std::fs::set_permissions(version, std::fs::Permissions::from_mode(0o444));
        panic!("the command changed /proc/version's mode for the whole machine");
    }
    assert_eq!(
        mode(&b.scratch.layer),
        0o700,
        "the layer's folder is as it was"
    );
}

/// A command that fills the layer is stopped at its cap, said, and the layer is emptied
/// before the next command.
#[test]
fn scratch_a_command_filling_the_layer_is_stopped_at_its_cap() {
    let b = setup(8 << 20);
    let mut child = b
        .command("i=0; while true; do i=$((i+1)); head -c 1000000 /dev/zero > f$i || exit 3; done")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if started.elapsed() > std::time::Duration::from_secs(30) {
            let _ = child.kill();
            panic!("the command filled the layer without being stopped");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(SCRATCH_FULL_EXIT), "{err}");
    assert!(err.contains("passed its cap of 8 MB"), "{err}");
    let (code, out) = b.run("ls f1 2>&1; true");
    assert_eq!(code, 0);
    assert!(out.contains("No such file"), "the layer was emptied: {out}");
    assert!(b.scratch.usage().0 < 1 << 20);
}

/// Ids of the processes running `needle` somewhere in their command line.
fn running(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                String::from_utf8_lossy(&c)
                    .replace('\0', " ")
                    .contains(needle)
            })
        })
        .collect()
}

/// A daemon the command leaves behind (double fork, `nohup`, a new process group
/// attempted) is gone when the command ends.
#[test]
fn scratch_a_daemon_left_running_is_killed_when_the_command_ends() {
    let b = setup(64 << 20);
    let tag = format!("{}.{}", 300, std::process::id());
    let (code, out) = b.run(&format!(
        "(sleep {tag} >/dev/null 2>&1 &) ; nohup sleep {tag}1 >/dev/null 2>&1 & disown; sleep 0.5; echo started"
    ));
    assert_eq!(code, 0, "{out}");
    let started = std::time::Instant::now();
    while !running(&format!("sleep {tag}")).is_empty() {
        if started.elapsed() > std::time::Duration::from_secs(5) {
            let left = running(&format!("sleep {tag}"));
            for pid in &left {
                #[allow(unsafe_code)]
                // SAFETY: kill(2) of a `sleep` this test started (its tag is in the command).
                unsafe {
                    libc::kill(*pid as i32, libc::SIGKILL);
                }
            }
            panic!("the daemon outlived its command: {left:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Stopped from outside (the runtime's timeout, Stop: SIGTERM to the helper), the scratch
/// shell kills its command and waits for it before it lets the layer go: nothing of the
/// command is left running when the helper has ended, and it says it was stopped.
#[test]
fn scratch_a_stopped_command_is_gone_before_its_layer_is_free() {
    let b = setup(64 << 20);
    let tag = format!("{}.{}", 400, std::process::id());
    let mut child = b
        .command(&format!("sleep {tag}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The command itself, not the helper whose arguments name it.
    let sleeping = || {
        running(&format!("sleep {tag}"))
            .into_iter()
            .filter(|p| *p != child.id())
            .count()
    };
    let started = std::time::Instant::now();
    while sleeping() == 0 {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "the command never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    #[allow(unsafe_code)]
    // SAFETY: kill(2) of the helper this test started.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let status = child.wait().unwrap();
    // Checked at once: the command must already be gone, not dying after its helper.
    let left: Vec<u32> = running(&format!("sleep {tag}"));
    for pid in &left {
        #[allow(unsafe_code)]
        // SAFETY: kill(2) of a `sleep` this test started (its tag is in the command).
        unsafe {
            libc::kill(*pid as i32, libc::SIGKILL);
        }
    }
    assert!(
        left.is_empty(),
        "the command outlived its stopped helper: {left:?}"
    );
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{status:?}");
    // The layer is free and mounts again.
    let (code, out) = b.run("echo again");
    assert_eq!((code, out.as_str()), (0, "again\n"));
}

/// The agent's edit made after a command copied the file into the layer wins: the next
/// command sees the workspace's file, not the stale copy.
#[test]
fn scratch_the_workspace_edit_after_a_copy_up_is_what_the_next_command_sees() {
    let b = setup(64 << 20);
    let (code, out) = b.run("echo from-the-check >> a.txt");
    assert_eq!(code, 0, "{out}");
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(b.ws.join("a.txt"), "the agent's edit\n").unwrap();
    let (_, out) = b.run("cat a.txt");
    assert_eq!(out, "the agent's edit\n");
}

/// A goal's layer keeps build output between checks and nothing else: what one check's
/// code wrote or changed (a hook file, a changed test, a deleted one) is gone for the next,
/// while `target/` stays for an incremental build (G-51).
#[test]
fn scratch_a_checks_layer_keeps_build_output_and_drops_what_code_left_behind() {
    let mut b = setup(64 << 20);
    let poison = "echo hook > conftest.py && mkdir -p .cargo && echo x > .cargo/config.toml && \
                  echo changed >> a.txt && rm b.txt && mkdir -p target/debug && echo built > target/debug/out && \
                  mkdir -p src/__pycache__ && echo c > src/__pycache__/lib.pyc";
    let look = "ls -a; cat a.txt; cat target/debug/out src/__pycache__/lib.pyc";
    // Plan mode's layer keeps everything for the next command.
    let (code, out) = b.run(poison);
    assert_eq!(code, 0, "{out}");
    let (_, kept) = b.run(look);
    assert!(
        kept.contains("conftest.py") && kept.contains("changed"),
        "{kept}"
    );
    // A check's layer: the build output only.
    b.scratch.keep = waymark_sandbox::scratch::Keep::BuildOutput;
    let (code, out) = b.run(poison);
    assert_eq!(code, 0, "{out}");
    let (_, seen) = b.run(look);
    assert!(!seen.contains("conftest.py"), "{seen}");
    assert!(!seen.contains(".cargo"), "{seen}");
    assert!(!seen.contains("changed"), "{seen}");
    assert!(seen.contains("b.txt"), "the deletion is undone: {seen}");
    assert!(
        seen.contains("built\nc\n"),
        "the build output stays: {seen}"
    );
}

/// A goal's checks after its baseline start from the baseline's frozen build alone: a cache
/// or a hook file a later check's code planted (a `.pyc` standing in for a test, a
/// `conftest.py`) is gone for the next one, while the baseline's build stays (G-51).
#[test]
fn scratch_a_claim_run_sees_the_frozen_baseline_build_and_nothing_a_later_check_planted() {
    let mut b = setup(64 << 20);
    b.scratch.keep = waymark_sandbox::scratch::Keep::BuildOutput;
    let (code, out) = b.run(
        "mkdir -p target/debug src/__pycache__ && echo built > target/debug/out && echo trusted > src/__pycache__/lib.pyc",
    );
    assert_eq!(code, 0, "{out}");
    b.scratch.freeze().unwrap();
    b.scratch.keep = waymark_sandbox::scratch::Keep::Nothing;
    let (code, out) = b.run(
        "echo planted > src/__pycache__/test_x.pyc && echo planted > src/__pycache__/lib.pyc && echo hook > conftest.py && echo tampered >> target/debug/out",
    );
    assert_eq!(code, 0, "{out}");
    let (_, seen) = b.run("ls -a . src/__pycache__; cat target/debug/out src/__pycache__/lib.pyc");
    assert!(
        !seen.contains("test_x.pyc") && !seen.contains("conftest.py"),
        "{seen}"
    );
    assert!(
        !seen.contains("planted") && !seen.contains("tampered"),
        "{seen}"
    );
    assert!(
        seen.contains("built\ntrusted\n"),
        "the baseline's build stays: {seen}"
    );
    // The workspace has none of it.
    assert!(!b.ws.join("target").exists() && !b.ws.join("conftest.py").exists());
}

/// Two commands on one layer run one after the other, never both over it at once.
#[test]
fn scratch_two_commands_on_one_layer_take_turns() {
    let b = setup(64 << 20);
    let first = b
        .command("echo one > x; sleep 1; cat x")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let (code, _) = b.run("echo two > x");
    assert_eq!(code, 0);
    let out = first.wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "one\n");
    let (_, now) = b.run("cat x");
    assert_eq!(now, "two\n");
}

/// A command killed with its group mid-run (a time limit, Stop) leaves a layer the next
/// command mounts as usual.
#[test]
fn scratch_a_killed_command_leaves_a_layer_that_mounts_again() {
    let b = setup(64 << 20);
    let mut c = b.command("echo partial > p; sleep 30").spawn().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    #[allow(unsafe_code)]
    // SAFETY: kill(2) of the process group this test started (the child leads it).
    unsafe {
        libc::kill(-(c.id() as i32), libc::SIGKILL);
    }
    c.wait().unwrap();
    let (code, out) = b.run("cat p");
    assert_eq!((code, out.as_str()), (0, "partial\n"));
    b.scratch.discard().unwrap();
    assert!(!b.scratch.layer.exists(), "discarded when its owner ends");
}
