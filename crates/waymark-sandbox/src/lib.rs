//! The sandboxed shell of plan mode and the goal verifier (PM-14). A command runs through a
//! helper process ([`helper`]) that confines itself in layers before it execs the command:
//!
//! | layer | what it stops | needs |
//! | --- | --- | --- |
//! | filesystem | writes outside a private temp folder (and the plan file); reads outside the listed folders ([`reads`]) | Landlock ABI 3 (Linux 6.2) |
//! | metadata | chmod, chown, utime, xattrs, inode flags; mounts, host names and other administration | seccomp |
//! | capabilities | anything root could do as root | nothing (see [`caps`]) |
//! | network | TCP/UDP and every other socket family | seccomp (+ Landlock TCP rights, ABI 4) |
//! | unix sockets | D-Bus, the SSH agent, docker.sock, X11 | seccomp |
//! | terminal | TIOCSTI into the user's terminal | a new session, stdin from /dev/null (+ seccomp, Landlock ABI 5) |
//! | scoping | signals to, and abstract sockets of, processes outside | Landlock ABI 6 (Linux 6.12) |
//! | environment | secrets, the session bus, agent and display variables | nothing (see [`waymark_config::secrets`]) |
//!
//! Each layer is probed once per session by running the helper in probe mode. Nothing runs
//! with a layer missing: where one is, every shell command asks the user first, and the plan
//! reminder names what is missing. The helper is a re-exec of a Waymark binary, never code
//! in `pre_exec` (only `setsid`, which cannot fail half-way, runs there).

mod caps;
mod helper;
pub mod mount;
pub mod private;
pub mod reads;
pub mod scratch;
pub mod seccomp;
pub mod temp;

pub use helper::{FILE_SIZE_LIMIT, main as helper_main};

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use waymark_config::{SandboxConfig, ShellNetwork};

/// The argument that makes a Waymark binary act as the sandbox helper.
pub const HELPER_ARG: &str = "__waymark-sandbox";

/// Environment switch (tests): `WAYMARK_SANDBOX=unsupported` treats every layer as missing;
/// `WAYMARK_SANDBOX=without:<layer>[,<layer>…]` treats the named layers as missing.
pub const FORCE_ENV: &str = "WAYMARK_SANDBOX";

/// Exit code of the helper when a layer could not be enforced.
pub const NOT_ENFORCED_EXIT: i32 = 125;

/// The line the helper prints in probe mode, before its findings.
const PROBE_PREFIX: &str = "waymark-sandbox-layers";

/// What the helper found it could enforce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Layers {
    /// Landlock filesystem rights: a write outside the temp folder failed, and so did reading
    /// a file outside the read set and the parent's environment.
    pub filesystem: bool,
    /// The seccomp filter refused a metadata change (and the calls listed with it).
    pub metadata: bool,
    /// No capability is left.
    pub capabilities: bool,
    /// Landlock TCP rights (ABI 4), on top of the seccomp filter.
    pub landlock_net: bool,
    /// Landlock device-ioctl rights (ABI 5), on top of the seccomp filter.
    pub device_ioctl: bool,
    /// Landlock scoping (ABI 6): signalling the parent failed.
    pub scoping: bool,
    /// The seccomp filter: opening an internet and a unix socket failed.
    pub seccomp: bool,
    /// No controlling terminal.
    pub terminal: bool,
}

/// A guarantee of the sandboxed shell, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layer {
    Filesystem,
    Metadata,
    Capabilities,
    Network,
    UnixSockets,
    Terminal,
    Scoping,
}

impl Layer {
    pub const ALL: [Layer; 7] = [
        Layer::Filesystem,
        Layer::Metadata,
        Layer::Capabilities,
        Layer::Network,
        Layer::UnixSockets,
        Layer::Terminal,
        Layer::Scoping,
    ];

    /// The name used by `WAYMARK_SANDBOX=without:…`.
    pub fn name(self) -> &'static str {
        match self {
            Layer::Filesystem => "filesystem",
            Layer::Metadata => "metadata",
            Layer::Capabilities => "capabilities",
            Layer::Network => "network",
            Layer::UnixSockets => "unix-sockets",
            Layer::Terminal => "terminal",
            Layer::Scoping => "scoping",
        }
    }

    /// What the layer is and what it needs, for the user and the model.
    pub fn describe(self) -> &'static str {
        match self {
            Layer::Filesystem => "filesystem confinement (Landlock ABI 3, Linux 6.2 or later)",
            Layer::Metadata => "metadata protection (seccomp)",
            Layer::Capabilities => "capability dropping",
            Layer::Network => "network blocking (seccomp)",
            Layer::UnixSockets => "unix-socket blocking (seccomp)",
            Layer::Terminal => "terminal detachment",
            Layer::Scoping => {
                "signal and abstract-socket scoping (Landlock ABI 6, Linux 6.12 or later)"
            }
        }
    }
}

impl Layers {
    fn holds(&self, layer: Layer) -> bool {
        match layer {
            Layer::Filesystem => self.filesystem,
            Layer::Metadata => self.metadata,
            Layer::Capabilities => self.capabilities,
            Layer::Network | Layer::UnixSockets => self.seccomp,
            Layer::Terminal => self.terminal,
            Layer::Scoping => self.scoping,
        }
    }

    /// The guarantees that do not hold here.
    pub fn missing(&self) -> Vec<Layer> {
        Layer::ALL.into_iter().filter(|l| !self.holds(*l)).collect()
    }

    fn encode(&self) -> String {
        let b = |v: bool| u8::from(v);
        format!(
            "{PROBE_PREFIX} filesystem={} metadata={} capabilities={} landlock_net={} device_ioctl={} scoping={} seccomp={} terminal={}",
            b(self.filesystem),
            b(self.metadata),
            b(self.capabilities),
            b(self.landlock_net),
            b(self.device_ioctl),
            b(self.scoping),
            b(self.seccomp),
            b(self.terminal)
        )
    }

    fn decode(out: &str) -> Option<Layers> {
        let line = out.lines().find(|l| l.starts_with(PROBE_PREFIX))?;
        let mut l = Layers::default();
        for kv in line.split_whitespace().skip(1) {
            let (k, v) = kv.split_once('=')?;
            let v = v == "1";
            match k {
                "filesystem" => l.filesystem = v,
                "metadata" => l.metadata = v,
                "capabilities" => l.capabilities = v,
                "landlock_net" => l.landlock_net = v,
                "device_ioctl" => l.device_ioctl = v,
                "scoping" => l.scoping = v,
                "seccomp" => l.seccomp = v,
                "terminal" => l.terminal = v,
                _ => {}
            }
        }
        Some(l)
    }
}

/// How to run one sandboxed command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSpec {
    /// The helper program and its leading arguments (ending with [`HELPER_ARG`]).
    pub helper: Vec<OsString>,
    /// What may be read (see [`reads::read_set`]).
    pub read: Vec<PathBuf>,
    /// The private temp folder (writable, `TMPDIR`), emptied when the command ends.
    pub tmp: PathBuf,
    /// The most the temp folder may hold while the command runs (`sandbox.temp_max_mb`).
    pub tmp_max_bytes: u64,
    /// Single files that stay writable (the plan file).
    pub writable_files: Vec<PathBuf>,
    /// Whether internet sockets are allowed (`plan.shell_network`).
    pub network: ShellNetwork,
    /// A scratch shell: the workspace writable through a throwaway layer, unchanged
    /// underneath ([`mount`]); `None` keeps the workspace read-only.
    pub scratch: Option<scratch::Scratch>,
}

impl SandboxSpec {
    /// The argument list that runs `program args…` under the sandbox.
    pub fn command_line(&self, program: &OsStr, args: &[&OsStr]) -> Vec<OsString> {
        let mut v = self.helper.clone();
        for r in &self.read {
            v.push("--ro".into());
            v.push(r.clone().into_os_string());
        }
        v.push("--rw".into());
        v.push(self.tmp.clone().into_os_string());
        for f in &self.writable_files {
            if f.exists() {
                v.push("--rw-file".into());
                v.push(f.clone().into_os_string());
            }
        }
        v.push("--net".into());
        v.push(match self.network {
            ShellNetwork::Deny => "deny".into(),
            ShellNetwork::Allow => "allow".into(),
        });
        if let Some(s) = &self.scratch {
            v.extend(mount::args(s));
        }
        v.push("--".into());
        v.push(program.to_os_string());
        v.extend(args.iter().map(|a| a.to_os_string()));
        v
    }
}

/// Starts `cmd` in a new session: no controlling terminal (so no TIOCSTI), and its own
/// process group (so a timeout or Stop can kill everything it started).
#[allow(unsafe_code)]
pub fn new_session(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt as _;
    // SAFETY: setsid(2) is async-signal-safe and touches no memory of the parent; it runs
    // in the child between fork and exec, as pre_exec requires.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// [`new_session`] for tokio's command.
#[allow(unsafe_code)]
pub fn new_session_async(cmd: &mut tokio::process::Command) {
    // SAFETY: as in `new_session`.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Makes this process non-dumpable: processes of the same user (a command the user approved,
/// anything else they run) can no longer read its environment, where the provider keys
/// are, nor its memory, and it leaves no core file. Processes with `CAP_SYS_PTRACE` still
/// can; the sandboxed shell has none.
#[allow(unsafe_code)]
pub fn make_undumpable() {
    // SAFETY: prctl(PR_SET_DUMPABLE, 0) takes integer arguments and changes only a flag of
    // this process.
    unsafe {
        libc::prctl(
            libc::PR_SET_DUMPABLE,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
        );
    }
}

/// Whether this process is dumpable (see [`make_undumpable`]).
#[allow(unsafe_code)]
pub fn is_dumpable() -> bool {
    // SAFETY: prctl(PR_GET_DUMPABLE) only reads a flag of this process.
    unsafe {
        libc::prctl(
            libc::PR_GET_DUMPABLE,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
        ) != 0
    }
}

/// Why the scratch shell cannot run on this machine (no user namespaces, overlayfs refused,
/// no helper), in plain words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ScratchUnavailable(pub String);

/// What the probe found, and why layers are missing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    pub layers: Layers,
    /// Set when the helper could not run or said why it failed.
    pub note: Option<String>,
}

impl Probe {
    /// Every guarantee holds: commands run sandboxed without asking.
    pub fn complete(&self) -> bool {
        self.layers.missing().is_empty()
    }
}

/// The sandbox of one session: the helper, its private temp folder, and what it enforces
/// here (probed once, on first use).
#[derive(Debug)]
pub struct Sandbox {
    helper: Option<Vec<OsString>>,
    forced: Option<String>,
    tmp: PathBuf,
    scope: reads::ReadScope,
    /// The private places, worked out on first use.
    private: OnceLock<reads::Private>,
    /// The fixed part of the read set, worked out on first use.
    reads: OnceLock<reads::ReadSet>,
    probe: OnceLock<Probe>,
    /// Whether the scratch shell works here, or why not (probed on first use).
    scratch_probe: OnceLock<Result<(), ScratchUnavailable>>,
}

impl Sandbox {
    /// `forced` is the value of [`FORCE_ENV`], if set; `scope` says what commands may read.
    pub fn new(
        helper: Option<Vec<OsString>>,
        forced: Option<String>,
        tmp: PathBuf,
        scope: reads::ReadScope,
    ) -> Self {
        Sandbox {
            helper,
            forced,
            tmp,
            scope,
            private: OnceLock::new(),
            reads: OnceLock::new(),
            probe: OnceLock::new(),
            scratch_probe: OnceLock::new(),
        }
    }

    /// The folder of this session's scratch layers, beside its temp folder.
    fn scratch_root(&self) -> PathBuf {
        self.tmp.parent().unwrap_or(&self.tmp).join("scratch")
    }

    /// The scratch layer `owner` uses (`plan`, `goal-<id>`), when the scratch shell works
    /// here; otherwise why not. Its commands see the workspace writable and leave it as it
    /// was ([`mount`]).
    pub fn scratch(
        &self,
        owner: &str,
        settings: &SandboxConfig,
    ) -> Result<scratch::Scratch, ScratchUnavailable> {
        self.scratch_probe
            .get_or_init(|| self.run_scratch_probe())
            .clone()?;
        Ok(self.scratch_layer(owner, settings))
    }

    fn scratch_layer(&self, owner: &str, settings: &SandboxConfig) -> scratch::Scratch {
        let name: String = owner
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        scratch::Scratch {
            workspace: self.scope.workspace.clone(),
            layer: self.scratch_root().join(name),
            max_bytes: settings.scratch_max_mb.saturating_mul(1024 * 1024),
            keep: scratch::Keep::All,
        }
    }

    /// Drops the scratch layer of `owner` (its goal ended, it left plan mode).
    pub fn discard_scratch(&self, owner: &str) -> std::io::Result<()> {
        self.scratch_layer(owner, &SandboxConfig::default())
            .discard()
    }

    /// Freezes the scratch layer of `owner` as its base (see [`scratch::Scratch::freeze`]).
    pub fn freeze_scratch(&self, owner: &str) -> std::io::Result<()> {
        self.scratch_layer(owner, &SandboxConfig::default())
            .freeze()
    }

    /// [`Sandbox::scratch`], run off the async threads the first time.
    pub async fn scratch_async(
        self: &std::sync::Arc<Self>,
        owner: &str,
        settings: &SandboxConfig,
    ) -> Result<scratch::Scratch, ScratchUnavailable> {
        if self.scratch_probe.get().is_none() {
            let me = self.clone();
            let _ = tokio::task::spawn_blocking(move || {
                me.scratch_probe.get_or_init(|| me.run_scratch_probe());
            })
            .await;
        }
        self.scratch(owner, settings)
    }

    /// Runs the helper in probe mode with a scratch layer over an empty folder: it works
    /// here when the probe gets as far as its report.
    fn run_scratch_probe(&self) -> Result<(), ScratchUnavailable> {
        let Some(helper) = &self.helper else {
            return Err(ScratchUnavailable("no sandbox helper is configured".into()));
        };
        if self.forced.as_deref() == Some("unsupported")
            || self.forced.as_deref().is_some_and(|f| {
                f.strip_prefix("without:")
                    .is_some_and(|l| l.split(',').any(|l| l.trim() == "scratch"))
            })
        {
            return Err(ScratchUnavailable(format!(
                "{FORCE_ENV} turns the scratch shell off"
            )));
        }
        let root = self
            .scratch_root()
            .join(format!(".probe-{}", std::process::id()));
        let probe = scratch::Scratch {
            workspace: root.join("ws"),
            layer: root.join("layer"),
            max_bytes: 1 << 20,
            keep: scratch::Keep::All,
        };
        let _ = {
            use std::os::unix::fs::DirBuilderExt as _;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&probe.workspace)
        };
        let mut cmd = std::process::Command::new(&helper[0]);
        cmd.args(&helper[1..])
            .arg("--rw")
            .arg(&self.tmp)
            .arg("--net")
            .arg("deny")
            .args(mount::args(&probe))
            .arg("--probe")
            .arg(root.join("outside"))
            .env_clear()
            .current_dir(&probe.workspace)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        new_session(&mut cmd);
        let out = cmd.output();
        let _ = probe.discard();
        let _ = scratch::remove_tree(&root);
        match out {
            Err(e) => Err(ScratchUnavailable(format!(
                "the sandbox helper did not start: {e}"
            ))),
            Ok(o) if Layers::decode(&String::from_utf8_lossy(&o.stdout)).is_some() => Ok(()),
            Ok(o) => Err(ScratchUnavailable(
                String::from_utf8_lossy(&o.stderr)
                    .trim()
                    .trim_start_matches("waymark sandbox: ")
                    .to_string(),
            )),
        }
    }

    fn private(&self) -> &reads::Private {
        self.private
            .get_or_init(|| reads::Private::new(&self.scope.owner))
    }

    fn read_set(&self) -> &reads::ReadSet {
        self.reads
            .get_or_init(|| reads::ReadSet::new(&self.scope, self.private()))
    }

    /// What a command may read now, with `read_allow` added (absolute paths).
    fn read_paths(&self, read_allow: &[PathBuf]) -> Vec<PathBuf> {
        self.read_set().paths(&self.scope, read_allow)
    }

    /// The private places the file tools ask before reading (`read_allow` as in
    /// [`Sandbox::spec`]).
    pub fn protected(&self, read_allow: &[String]) -> private::Protected {
        self.private()
            .protected(&self.scope, &self.scope.expand(read_allow))
    }

    /// What the sandbox enforces here (the first call runs the helper in probe mode; it
    /// blocks for a few milliseconds, so async callers use [`Sandbox::probe_async`]).
    pub fn probe(&self) -> &Probe {
        self.probe.get_or_init(|| self.run_probe())
    }

    /// [`Sandbox::probe`], run off the async threads the first time.
    pub async fn probe_async(self: &std::sync::Arc<Self>) -> Probe {
        if let Some(p) = self.probe.get() {
            return p.clone();
        }
        let me = self.clone();
        match tokio::task::spawn_blocking(move || me.probe().clone()).await {
            Ok(p) => p,
            Err(e) => Probe {
                layers: Layers::default(),
                note: Some(format!("the probe failed: {e}")),
            },
        }
    }

    fn run_probe(&self) -> Probe {
        let missing_all = |note: String| Probe {
            layers: Layers::default(),
            note: Some(note),
        };
        let Some(helper) = &self.helper else {
            return missing_all("no sandbox helper is configured".into());
        };
        if self.forced.as_deref() == Some("unsupported") {
            return missing_all(format!("{FORCE_ENV}=unsupported"));
        }
        let made = {
            use std::os::unix::fs::DirBuilderExt as _;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&self.tmp)
        };
        // Private whatever it was before.
        let made = made.and_then(|()| {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&self.tmp, std::fs::Permissions::from_mode(0o700))
        });
        if let Err(e) = made {
            return missing_all(format!("cannot create {}: {e}", self.tmp.display()));
        }
        // The first use in this process: what a command left when its process died goes.
        if let Err(e) = temp::empty(&self.tmp) {
            tracing::warn!(
                "the sandbox temp folder {} was not emptied: {e}",
                self.tmp.display()
            );
        }
        let beside = self.tmp.parent().unwrap_or(Path::new("/"));
        let outside = beside.join(format!(".sandbox-probe-{}", std::process::id()));
        // A file the probe must fail to read: beside the temp folder, in the data folder.
        let unreadable = beside.join(format!(".sandbox-probe-read-{}", std::process::id()));
        if let Err(e) = std::fs::write(&unreadable, b"probe") {
            return missing_all(format!("cannot create {}: {e}", unreadable.display()));
        }
        let mut cmd = std::process::Command::new(&helper[0]);
        cmd.args(&helper[1..]);
        for r in self.read_paths(&[]) {
            cmd.arg("--ro").arg(r);
        }
        cmd.arg("--rw")
            .arg(&self.tmp)
            .arg("--net")
            .arg("deny")
            .arg("--probe")
            .arg(&outside)
            .arg("--probe-read")
            .arg(&unreadable)
            .env_clear()
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        new_session(&mut cmd);
        let out = cmd.output();
        let _ = std::fs::remove_file(&outside);
        let _ = std::fs::remove_file(&unreadable);
        let mut probe = match out {
            Err(e) => missing_all(format!("the sandbox helper did not start: {e}")),
            Ok(o) => match Layers::decode(&String::from_utf8_lossy(&o.stdout)) {
                Some(layers) => Probe { layers, note: None },
                None => missing_all(
                    String::from_utf8_lossy(&o.stderr)
                        .trim()
                        .trim_start_matches("waymark sandbox: ")
                        .to_string(),
                ),
            },
        };
        if let Some(names) = self
            .forced
            .as_deref()
            .and_then(|f| f.strip_prefix("without:"))
        {
            for name in names.split(',') {
                match Layer::ALL.into_iter().find(|l| l.name() == name.trim()) {
                    Some(Layer::Filesystem) => probe.layers.filesystem = false,
                    Some(Layer::Metadata) => probe.layers.metadata = false,
                    Some(Layer::Capabilities) => probe.layers.capabilities = false,
                    Some(Layer::Network | Layer::UnixSockets) => probe.layers.seccomp = false,
                    Some(Layer::Terminal) => probe.layers.terminal = false,
                    Some(Layer::Scoping) => probe.layers.scoping = false,
                    None => {}
                }
            }
        }
        probe
    }

    /// The spec for running a command, when every layer holds here; `settings.read_allow`
    /// adds to what it may read (absolute paths, `~/` for the tools' home) and
    /// `settings.temp_max_mb` bounds its temp folder.
    pub fn spec(
        &self,
        writable_files: Vec<PathBuf>,
        network: ShellNetwork,
        settings: &SandboxConfig,
    ) -> Option<SandboxSpec> {
        match (&self.helper, self.probe().complete()) {
            (Some(helper), true) => Some(SandboxSpec {
                helper: helper.clone(),
                read: self.read_paths(&self.scope.expand(&settings.read_allow)),
                tmp: self.tmp.clone(),
                tmp_max_bytes: settings.temp_max_mb.saturating_mul(1024 * 1024),
                writable_files,
                network,
                scratch: None,
            }),
            (Some(_), false) | (None, _) => None,
        }
    }
}

/// The helper as a whole program (a binary whose `main` is this): its arguments, with or
/// without [`HELPER_ARG`] first, and its exit code.
#[allow(clippy::disallowed_methods)] // the helper's streams are the command's
pub fn run_as_program() -> ! {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let args = match args.first().and_then(|a| a.to_str()) {
        Some(HELPER_ARG) => &args[1..],
        _ => &args[..],
    };
    std::process::exit(helper_main(
        args,
        &mut std::io::stdout(),
        &mut std::io::stderr(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_round_trip_and_name_what_is_missing() {
        let all = Layers {
            filesystem: true,
            metadata: true,
            capabilities: true,
            landlock_net: true,
            device_ioctl: true,
            scoping: true,
            seccomp: true,
            terminal: true,
        };
        assert_eq!(Layers::decode(&all.encode()), Some(all));
        assert!(all.missing().is_empty());
        let old_kernel = Layers {
            scoping: false,
            ..all
        };
        assert_eq!(old_kernel.missing(), [Layer::Scoping]);
        assert_eq!(
            Layers::default().missing(),
            Layer::ALL.to_vec(),
            "nothing holds without a probe"
        );
        assert_eq!(Layers::decode("garbage"), None);
    }
}
