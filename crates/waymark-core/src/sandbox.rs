//! The read-only shell of plan mode (PM-14). A command runs through a helper process that
//! applies a Landlock ruleset — read and execute everywhere, write only in a private temp
//! folder (and the plan file) — confirms it is fully enforced, and only then execs the
//! command. The helper is a re-exec of a Waymark binary (`<binary> __waymark-sandbox …`),
//! never code in `pre_exec`. Where the kernel cannot enforce it, nothing runs unsandboxed:
//! plan mode asks the user about every shell command instead.

use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr,
    RulesetStatus, path_beneath_rules,
};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The argument that makes a Waymark binary act as the sandbox helper.
pub const HELPER_ARG: &str = "__waymark-sandbox";

/// Environment switch: `WAYMARK_SANDBOX=unsupported` makes the runtime treat Landlock as
/// unavailable (to exercise the permission fallback).
pub const FORCE_ENV: &str = "WAYMARK_SANDBOX";

/// Exit code of the helper when the ruleset could not be fully enforced.
pub const NOT_ENFORCED_EXIT: i32 = 125;

/// The Landlock ABI whose filesystem rights must all be enforced (V3 adds truncation).
const REQUIRED_ABI: ABI = ABI::V3;

/// Whether commands can run sandboxed on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Support {
    Enforced,
    Unsupported,
}

/// How to run one sandboxed command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSpec {
    /// The helper program and its leading arguments (ending with [`HELPER_ARG`]).
    pub helper: Vec<OsString>,
    /// The private temp folder (writable, `TMPDIR`).
    pub tmp: PathBuf,
    /// Single files that stay writable (the plan file).
    pub writable_files: Vec<PathBuf>,
}

impl SandboxSpec {
    /// The argument list that runs `program args…` under the sandbox.
    pub fn command_line(&self, program: &OsStr, args: &[&OsStr]) -> Vec<OsString> {
        let mut v = self.helper.clone();
        v.push("--rw".into());
        v.push(self.tmp.clone().into_os_string());
        for f in &self.writable_files {
            if f.exists() {
                v.push("--rw-file".into());
                v.push(f.clone().into_os_string());
            }
        }
        v.push("--".into());
        v.push(program.to_os_string());
        v.extend(args.iter().map(|a| a.to_os_string()));
        v
    }
}

/// The sandbox of one session: the helper, its private temp folder, and whether it works
/// here (probed once, on first use).
#[derive(Debug)]
pub struct Sandbox {
    helper: Option<Vec<OsString>>,
    forced_off: bool,
    tmp: PathBuf,
    support: OnceLock<Support>,
}

impl Sandbox {
    pub fn new(helper: Option<Vec<OsString>>, forced_off: bool, tmp: PathBuf) -> Self {
        Sandbox {
            helper,
            forced_off,
            tmp,
            support: OnceLock::new(),
        }
    }

    /// Whether the ruleset is enforced here: the helper must apply it and then fail to
    /// write outside its temp folder.
    pub fn support(&self) -> Support {
        *self.support.get_or_init(|| {
            if self.forced_off {
                return Support::Unsupported;
            }
            let Some(helper) = &self.helper else {
                return Support::Unsupported;
            };
            if std::fs::create_dir_all(&self.tmp).is_err() {
                return Support::Unsupported;
            }
            let outside = self
                .tmp
                .parent()
                .unwrap_or(Path::new("/"))
                .join(format!(".sandbox-probe-{}", std::process::id()));
            let mut cmd = std::process::Command::new(&helper[0]);
            cmd.args(&helper[1..])
                .arg("--rw")
                .arg(&self.tmp)
                .arg("--probe")
                .arg(&outside)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null());
            let ok = cmd.status().map(|s| s.success()).unwrap_or(false);
            let _ = std::fs::remove_file(&outside);
            if ok {
                Support::Enforced
            } else {
                Support::Unsupported
            }
        })
    }

    /// The spec for running a command, when the sandbox is enforced here.
    pub fn spec(&self, writable_files: Vec<PathBuf>) -> Option<SandboxSpec> {
        match (self.support(), &self.helper) {
            (Support::Enforced, Some(helper)) => Some(SandboxSpec {
                helper: helper.clone(),
                tmp: self.tmp.clone(),
                writable_files,
            }),
            (Support::Enforced, None) | (Support::Unsupported, _) => None,
        }
    }
}

/// Why the ruleset could not be enforced.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct NotEnforced(String);

fn apply(rw_dirs: &[PathBuf], rw_files: &[PathBuf]) -> Result<(), NotEnforced> {
    let abi = REQUIRED_ABI;
    let read = AccessFs::from_read(abi);
    let status = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))
        .map_err(|e| NotEnforced(e.to_string()))?
        .create()
        .map_err(|e| NotEnforced(e.to_string()))?
        .add_rules(path_beneath_rules(["/"], read))
        .map_err(|e| NotEnforced(e.to_string()))?
        .add_rules(path_beneath_rules(rw_dirs, AccessFs::from_all(abi)))
        .map_err(|e| NotEnforced(e.to_string()))?
        .add_rules(path_beneath_rules(rw_files, AccessFs::from_file(abi)))
        .map_err(|e| NotEnforced(e.to_string()))?
        .add_rules(path_beneath_rules(["/dev/null"], AccessFs::from_file(abi)))
        .map_err(|e| NotEnforced(e.to_string()))?
        .restrict_self()
        .map_err(|e| NotEnforced(e.to_string()))?;
    match status.ruleset {
        RulesetStatus::FullyEnforced => Ok(()),
        RulesetStatus::PartiallyEnforced | RulesetStatus::NotEnforced => Err(NotEnforced(format!(
            "the kernel enforces the ruleset only as {:?}",
            status.ruleset
        ))),
    }
}

/// Entry point of the helper: `[--rw DIR]… [--rw-file FILE]… (--probe PATH | -- PROGRAM ARGS…)`.
/// Returns the exit code when it does not exec the program.
pub fn helper_main(args: &[OsString]) -> i32 {
    let mut rw_dirs = Vec::new();
    let mut rw_files = Vec::new();
    let mut probe = None;
    let mut program = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.to_str() {
            Some("--rw") => rw_dirs.extend(it.next().map(PathBuf::from)),
            Some("--rw-file") => rw_files.extend(it.next().map(PathBuf::from)),
            Some("--probe") => probe = it.next().map(PathBuf::from),
            Some("--") => {
                program = it.by_ref().cloned().collect();
            }
            _ => {
                eprintln!("waymark sandbox: unexpected argument {a:?}");
                return 2;
            }
        }
    }
    if let Err(e) = apply(&rw_dirs, &rw_files) {
        eprintln!(
            "waymark sandbox: the read-only sandbox could not be enforced ({e}); the command did not run"
        );
        return NOT_ENFORCED_EXIT;
    }
    if let Some(p) = probe {
        // Enforced means this write must fail.
        return match std::fs::write(&p, b"probe") {
            Ok(()) => {
                let _ = std::fs::remove_file(&p);
                eprintln!(
                    "waymark sandbox: a write outside the temp folder succeeded; not enforced"
                );
                NOT_ENFORCED_EXIT
            }
            Err(_) => 0,
        };
    }
    let Some((prog, rest)) = program.split_first() else {
        eprintln!("waymark sandbox: no command given");
        return 2;
    };
    use std::os::unix::process::CommandExt as _;
    let err = std::process::Command::new(prog).args(rest).exec();
    eprintln!("waymark sandbox: could not run {prog:?}: {err}");
    127
}
