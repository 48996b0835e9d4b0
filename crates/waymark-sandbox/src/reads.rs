//! What the sandboxed shell may read. Landlock grants only what it is given, so the read set
//! is built from what is allowed — the workspace (its whole repository), system folders,
//! the toolchains on `PATH`, the session's own artifacts, and what `sandbox.read_allow`
//! adds — never from what is denied. Private places ([`super::private`]: the data folder,
//! the user's credential stores and hidden files, the settings folder, system secrets) only
//! shape that list: an allowed folder that holds one is granted child by child around it,
//! so the private place itself is never granted.

use super::private::{Owner, Protected, Rules, canonical};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What the sandboxed shell reads and does not, for the model (the plan-mode reminder).
pub const SUMMARY: &str = "It reads the workspace, system folders and toolchains only: Waymark's data folder (other sessions), the home folder's hidden files and credential stores (~/.ssh, ~/.aws, ~/.config/gh and the like), the settings folder, system secrets and other processes' environment and memory are not readable, and the file tools ask before reading any of them; the user can add folders with the `sandbox.read_allow` setting.";

/// System folders every command needs: programs, libraries, configuration, a few devices and
/// the kernel's public tables. `/proc` holds every process's environment and memory, so only
/// files that describe the machine are listed (the command's own `/proc/<pid>` is added by
/// the helper).
pub const SYSTEM: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/nix/store",
    "/snap",
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/proc/stat",
    "/proc/uptime",
    "/proc/loadavg",
    "/proc/version",
    "/proc/filesystems",
    "/proc/cgroups",
    "/proc/swaps",
    "/proc/vmstat",
    "/proc/pressure",
    "/proc/sys",
    "/sys/devices/system/cpu",
    "/sys/fs/cgroup",
    "/sys/kernel/mm/transparent_hugepage",
];

/// Toolchain folders under a home folder, read so that the commands on `PATH` work.
const HOME_TOOLCHAINS: &[&str] = &[
    ".cargo",
    ".rustup",
    ".pyenv",
    ".nvm",
    ".volta",
    ".bun",
    ".deno",
    ".asdf",
    ".local/share/mise",
    ".sdkman",
    ".ghcup",
    ".elan",
    ".local/bin",
    ".local/lib",
    "go",
];

/// Git's own settings files, read so that `git` works as the user set it up (credentials
/// live elsewhere and stay unreadable).
const HOME_FILES: &[&str] = &[
    ".gitconfig",
    ".config/git/config",
    ".config/git/ignore",
    ".config/git/attributes",
];

/// Variables naming a toolchain folder.
const TOOLCHAIN_VARS: &[&str] = &[
    "CARGO_HOME",
    "RUSTUP_HOME",
    "PYENV_ROOT",
    "NVM_DIR",
    "VOLTA_HOME",
    "BUN_INSTALL",
    "DENO_INSTALL",
    "GOROOT",
    "GOPATH",
    "JAVA_HOME",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
];

/// Where one session's sandboxed shell stands: what it works on and what is private.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadScope {
    /// The session's workspace.
    pub workspace: PathBuf,
    /// The session's own artifacts folder (the plan file): readable.
    pub artifacts: PathBuf,
    /// The home folders whose toolchains serve commands (the tools' `HOME` first).
    pub homes: Vec<PathBuf>,
    /// Whose private places to keep out (Waymark's folders, every home, the environment).
    pub owner: Owner,
    /// Folders of the session's project outside its workspace that it reads: for a session
    /// in a git worktree, the project's git folder (the worktree's history lives there).
    pub project: Vec<PathBuf>,
}

impl ReadScope {
    fn var(&self, name: &str) -> Option<&OsStr> {
        self.owner
            .env
            .iter()
            .find(|(k, _)| k == OsStr::new(name))
            .map(|(_, v)| v.as_os_str())
    }

    /// `read_allow` entries as paths: `~/…` under the tools' home folder (an entry that
    /// needs a home when there is none is left out), others as written.
    pub fn expand(&self, entries: &[String]) -> Vec<PathBuf> {
        entries
            .iter()
            .filter_map(|e| match e.strip_prefix("~/") {
                Some(rest) => self.homes.first().map(|h| h.join(rest)),
                None => Some(PathBuf::from(e)),
            })
            .filter(|p| p.is_absolute())
            .collect()
    }

    /// Folders granted because they serve commands (system, toolchains, `PATH`).
    fn serving(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = SYSTEM.iter().map(PathBuf::from).collect();
        for home in &self.homes {
            out.extend(HOME_TOOLCHAINS.iter().map(|t| home.join(t)));
            out.extend(HOME_FILES.iter().map(|f| home.join(f)));
        }
        out.extend(
            TOOLCHAIN_VARS
                .iter()
                .filter_map(|v| self.var(v))
                .map(PathBuf::from),
        );
        if let Some(path) = self.var("PATH") {
            out.extend(std::env::split_paths(path));
        }
        out
    }

    /// Places the user chose, readable even inside a private place: the workspace and its
    /// repository, the session's own folder, `read_allow`.
    fn chosen(&self, read_allow: &[PathBuf]) -> Vec<PathBuf> {
        let mut chosen = vec![self.workspace.clone(), self.artifacts.clone()];
        chosen.extend(git_root(&self.workspace));
        chosen.extend(self.project.iter().cloned());
        chosen.extend(read_allow.iter().cloned());
        chosen
    }
}

/// The repository root of `dir`: the nearest folder up from it holding `.git`.
fn git_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
}

/// The folders and files the sandboxed shell reads: canonical, existing, none of them a
/// private place or inside one (except where the user's own choice names it: the
/// workspace, `read_allow`), and none holding one. `read_allow` entries are absolute paths.
pub fn read_set(scope: &ReadScope, read_allow: &[PathBuf]) -> Vec<PathBuf> {
    ReadSet::new(scope, &Private::new(&scope.owner)).paths(scope, read_allow)
}

/// The part of the read set that does not change while a session runs (system folders,
/// toolchains, the private places), worked out once; [`ReadSet::paths`] adds what the user
/// chose for each command.
#[derive(Debug, Clone, Default)]
pub struct ReadSet {
    private: Vec<PathBuf>,
    rules: Arc<Rules>,
    serving: Vec<PathBuf>,
}

/// The private places of a session: those outside `/etc` at once, `/etc`'s on first need.
#[derive(Debug, Clone, Default)]
pub struct Private {
    places: Arc<Vec<PathBuf>>,
    rules: Arc<Rules>,
    etc: Arc<std::sync::OnceLock<Vec<PathBuf>>>,
    git_settings: Arc<Vec<PathBuf>>,
}

impl Private {
    pub fn new(owner: &Owner) -> Private {
        Private {
            places: Arc::new(owner.places()),
            rules: Arc::new(owner.rules()),
            etc: Arc::default(),
            git_settings: Arc::new(owner.git_settings()),
        }
    }

    /// Every private place, `/etc`'s included.
    fn all(&self) -> Vec<PathBuf> {
        let mut all = self.places.as_ref().clone();
        all.extend(
            self.etc
                .get_or_init(super::private::etc_private)
                .iter()
                .cloned(),
        );
        all
    }

    /// The private places as the file tools check them, with the user's choices as
    /// exceptions (the session's whole folder among them).
    pub fn protected(&self, scope: &ReadScope, read_allow: &[PathBuf]) -> Protected {
        let mut exceptions = scope.chosen(read_allow);
        exceptions.extend(scope.artifacts.parent().map(Path::to_path_buf));
        Protected::new(
            self.places.clone(),
            self.rules.clone(),
            self.etc.clone(),
            exceptions,
            self.git_settings.clone(),
        )
    }
}

impl ReadSet {
    pub fn new(scope: &ReadScope, private: &Private) -> ReadSet {
        let rules = private.rules.clone();
        let private = private.all();
        let kept = Kept {
            list: &private,
            rules: &rules,
        };
        // A folder that serves commands but holds a home folder or Waymark's own (`PATH`
        // or `GOPATH` naming `~` or `/`) would open everything around the private places:
        // it is left out.
        let holds_personal = |root: &Path| {
            root == Path::new("/")
                || scope
                    .owner
                    .homes
                    .iter()
                    .chain(scope.owner.waymark.iter())
                    .any(|h| canonical(h).starts_with(root))
        };
        let mut serving = Vec::new();
        for root in scope.serving() {
            let root = canonical(&root);
            if root.is_absolute() && !holds_personal(&root) {
                grant(&root, &kept, false, &mut serving);
            }
        }
        ReadSet {
            private,
            rules,
            serving: compact(serving),
        }
    }

    /// The whole read set for one command: the workspace (and its repository), the
    /// session's artifacts and `read_allow`, looked at afresh, with the fixed part.
    pub fn paths(&self, scope: &ReadScope, read_allow: &[PathBuf]) -> Vec<PathBuf> {
        let mut out = self.serving.clone();
        for root in scope.chosen(read_allow) {
            let kept = Kept {
                list: &self.private,
                rules: &self.rules,
            };
            grant(&canonical(&root), &kept, true, &mut out);
        }
        compact(out)
    }
}

/// Sorted, without repeats, and without a path inside another (it adds nothing).
fn compact(mut paths: Vec<PathBuf>) -> Vec<PathBuf> {
    paths.sort();
    paths.dedup();
    let mut kept: Vec<PathBuf> = Vec::with_capacity(paths.len());
    for p in paths {
        if !kept.last().is_some_and(|k| p.starts_with(k)) {
            kept.push(p);
        }
    }
    kept
}

/// What [`grant`] keeps out: the named private places and the [`Rules`], both looked at
/// when the command starts (a hidden file made since is out too).
struct Kept<'a> {
    list: &'a [PathBuf],
    rules: &'a Rules,
}

impl Kept<'_> {
    fn is_private(&self, p: &Path) -> bool {
        self.list.iter().any(|q| p.starts_with(q)) || self.rules.place_of(p).is_some()
    }

    fn holds(&self, root: &Path) -> bool {
        self.list.iter().any(|q| q.starts_with(root)) || self.rules.held_by(root).is_some()
    }
}

/// Adds `root` to `out`, or, when a private place lies inside it, its children around that
/// place (recursively). Symbolic links found on the way are not followed: what they lead to
/// is granted or not by where it is.
fn grant(root: &Path, kept: &Kept<'_>, chosen: bool, out: &mut Vec<PathBuf>) {
    if !root.exists() {
        return;
    }
    if kept.is_private(root) {
        // A private place, or inside one: only the user's own choice reaches it (the
        // workspace, `read_allow`), never a folder that merely serves commands.
        if chosen {
            out.push(root.to_path_buf());
        }
        return;
    }
    if !kept.holds(root) {
        out.push(root.to_path_buf());
        return;
    }
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let is_link = entry.file_type().is_ok_and(|t| t.is_symlink());
        if !is_link {
            grant(&entry.path(), kept, false, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::private::tests::touch;

    fn scope(root: &Path) -> ReadScope {
        let home = root.join("home");
        ReadScope {
            workspace: root.join("ws"),
            artifacts: root.join("data/sessions/s1/artifacts"),
            project: Vec::new(),
            homes: vec![home.clone()],
            owner: Owner {
                waymark: vec![root.join("data"), home.join(".config/waymark")],
                homes: vec![home.clone()],
                env: vec![(
                    "PATH".into(),
                    format!(
                        "{}:/usr/bin:relative/bin",
                        home.join(".cargo/bin").display()
                    )
                    .into(),
                )],
            },
        }
    }

    #[test]
    fn the_read_set_lists_what_serves_and_holds_no_protected_place() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for f in [
            "ws/src/lib.rs",
            "data/waymark.db",
            "data/sessions/s1/artifacts/plan.md",
            "data/sessions/s2/artifacts/plan.md",
            "home/.ssh/id_ed25519",
            "home/.cargo/bin/cargo",
            "home/.cargo/credentials.toml",
            "home/.cargo/registry/x",
            "home/.gitconfig",
            "home/.config/waymark/settings.json",
            "home/notes.txt",
        ] {
            touch(&root.join(f));
        }
        let set = read_set(&scope(&root), &[]);
        let has = |p: &str| set.iter().any(|s| root.join(p).starts_with(s));
        assert!(has("ws/src/lib.rs"));
        assert!(has("data/sessions/s1/artifacts/plan.md"));
        assert!(has("home/.cargo/bin/cargo"));
        assert!(has("home/.gitconfig"));
        assert!(set.contains(&PathBuf::from("/usr")));
        for secret in [
            "data/waymark.db",
            "data/sessions/s2/artifacts/plan.md",
            "home/.ssh/id_ed25519",
            "home/.cargo/credentials.toml",
            "home/.config/waymark/settings.json",
            "home/notes.txt",
        ] {
            assert!(!has(secret), "{secret} is readable: {set:?}");
        }
        assert!(
            !set.iter().any(|p| p.ends_with("relative/bin")),
            "a relative PATH entry is granted"
        );
    }

    #[test]
    fn an_allowed_folder_holding_a_protected_place_is_granted_around_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for f in [
            "home/.ssh/id_ed25519",
            "home/.aws/credentials",
            "home/notes.txt",
            "home/code/app.rs",
            "home/.config/gh/hosts.yml",
            "home/.config/other/x",
            "outside/secret",
        ] {
            touch(&root.join(f));
        }
        // A link in the home folder to somewhere else is not followed into a grant.
        std::os::unix::fs::symlink(root.join("outside"), root.join("home/link")).unwrap();
        let mut s = scope(&root);
        s.workspace = root.join("home");
        let set = read_set(&s, &[]);
        let has = |p: &str| set.iter().any(|s| root.join(p).starts_with(s));
        assert!(has("home/notes.txt") && has("home/code/app.rs"));
        for secret in [
            "home/.ssh/id_ed25519",
            "home/.aws/credentials",
            "home/.config/gh/hosts.yml",
            // A hidden file of a tool nobody reviewed is private too.
            "home/.config/other/x",
            "outside/secret",
        ] {
            assert!(!has(secret), "{secret} is readable: {set:?}");
        }
        assert!(!set.contains(&root.join("home")), "{set:?}");
    }

    #[test]
    fn a_serving_folder_that_holds_a_home_is_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for f in ["home/notes.txt", "home/.codex/auth.json", "ws/a"] {
            touch(&root.join(f));
        }
        let mut s = scope(&root);
        s.owner.env = vec![
            (
                "PATH".into(),
                format!("/usr/bin:{}:/", root.display()).into(),
            ),
            ("GOPATH".into(), root.join("home").into()),
        ];
        let set = read_set(&s, &[]);
        let has = |p: &str| set.iter().any(|s| root.join(p).starts_with(s));
        assert!(has("ws/a"));
        assert!(
            !has("home/notes.txt") && !has("home/.codex/auth.json"),
            "{set:?}"
        );
        assert!(!set.contains(&PathBuf::from("/")), "{set:?}");
    }

    #[test]
    fn read_allow_adds_paths_and_may_name_a_protected_one_itself() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for f in ["extra/docs/a.md", "home/.aws/config", "home/.ssh/id_rsa"] {
            touch(&root.join(f));
        }
        let set = read_set(
            &scope(&root),
            &[
                root.join("extra"),
                root.join("home/.aws"),
                root.join("home"),
            ],
        );
        let has = |p: &str| set.iter().any(|s| root.join(p).starts_with(s));
        assert!(has("extra/docs/a.md"));
        assert!(has("home/.aws/config"), "named itself: {set:?}");
        assert!(
            !has("home/.ssh/id_rsa"),
            "a folder around a store is not the store"
        );
    }
}
