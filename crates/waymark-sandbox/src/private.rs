//! The places Waymark keeps from the model: its own data and settings, the user's credential
//! stores and the rest of the home folder's hidden files, and system secrets. The sandboxed
//! shell's read set is granted around them ([`super::reads`]), and the file tools ask before
//! reading one ([`Protected`]).
//!
//! A home folder's hidden entries are private unless they are toolchains or git's own
//! settings: the list of allowed ones is short and reviewed, so a credential file of a tool
//! we never heard of (`~/.codex/auth.json`, `~/.Xauthority`, `~/.bash_history`) is private
//! too. In `/etc` everything that is not world-readable is private, as it would be for any
//! user but root (whose user id the sandboxed shell keeps).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// Hidden entries of a home folder that are not private (toolchains, git's settings);
/// `.config` and `.local` are looked into instead (see [`Rules`]).
const HOME_PUBLIC: &[&str] = &[
    ".cargo",
    ".rustup",
    ".pyenv",
    ".nvm",
    ".volta",
    ".bun",
    ".deno",
    ".asdf",
    ".sdkman",
    ".ghcup",
    ".elan",
    ".gitconfig",
];

/// Credential files inside the public entries, and well-known stores (private even when they
/// do not exist yet, or when a folder around them is granted).
pub const CREDENTIAL_STORES: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".kube",
    ".docker",
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".config/gh",
    ".config/hub",
    ".local/share/keyrings",
    ".password-store",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".npmrc",
    ".pypirc",
    ".config/waymark",
    ".local/share/waymark",
];

/// Files and folders of `~/.config/git` that are git's settings, not its credentials.
const GIT_SETTINGS: &[&str] = &["config", "ignore", "attributes"];

/// What `~/.local` holds that serves commands (`share` is looked into).
const LOCAL_PUBLIC: &[&str] = &["bin", "lib", "share"];
/// What `~/.local/share` holds that serves commands.
const SHARE_PUBLIC: &[&str] = &["mise"];

/// System secrets named outright (the `/etc` walk finds the rest by their modes).
pub const SYSTEM_SECRETS: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/ssh",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssl/private",
    "/etc/security/opasswd",
    "/etc/krb5.keytab",
];

/// Variables naming a credential file or folder (a list for `KUBECONFIG`); any variable
/// whose name looks secret (`*KEY*`, `*TOKEN*`, …) and holds an absolute path counts too.
const CREDENTIAL_VARS: &[&str] = &[
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "HF_HOME",
    "TF_CLI_CONFIG_FILE",
    "XDG_CACHE_HOME",
    "GNUPGHOME",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE",
    "KUBECONFIG",
    "DOCKER_CONFIG",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "CLOUDSDK_CONFIG",
    "AZURE_CONFIG_DIR",
    "GH_CONFIG_DIR",
    "PASSWORD_STORE_DIR",
    "NETRC",
    "NPM_CONFIG_USERCONFIG",
    "PIP_CONFIG_FILE",
    "RCLONE_CONFIG",
    "XDG_RUNTIME_DIR",
    "XDG_STATE_HOME",
];

/// Whose private places these are.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Owner {
    /// Waymark's own folders: the data folder, the settings folder (those in use and the
    /// platform defaults).
    pub waymark: Vec<PathBuf>,
    /// Home folders: the tools' `HOME` and the runtime's own.
    pub homes: Vec<PathBuf>,
    /// The environment tools start with (relocated stores: `CARGO_HOME`, `XDG_CONFIG_HOME`…).
    pub env: Vec<(OsString, OsString)>,
}

impl Owner {
    fn var(&self, name: &str) -> Option<&OsStr> {
        self.env
            .iter()
            .find(|(k, _)| k == OsStr::new(name))
            .map(|(_, v)| v.as_os_str())
            .filter(|v| !v.is_empty())
    }

    /// The private places that are rules, not a list (see [`Rules`]).
    pub fn rules(&self) -> Rules {
        let homes: Vec<PathBuf> = self.homes.iter().map(|h| canonical(h)).collect();
        let mut configs: Vec<PathBuf> = homes.iter().map(|h| h.join(".config")).collect();
        let mut shares: Vec<PathBuf> = homes.iter().map(|h| h.join(".local/share")).collect();
        if let Some(dir) = self.var("XDG_CONFIG_HOME") {
            configs.push(canonical(Path::new(dir)));
        }
        if let Some(dir) = self.var("XDG_DATA_HOME") {
            shares.push(canonical(Path::new(dir)));
        }
        Rules {
            homes,
            configs,
            shares,
        }
    }

    /// Every named private place outside `/etc` (see [`etc_private`]), canonical where it
    /// exists; the home folders' hidden entries are [`Rules`] beside these.
    pub fn places(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = self.waymark.iter().map(|p| canonical(p)).collect();
        // The home folders' hidden entries are [`Rules`]; these are named on top, so a
        // folder granted around them (a public toolchain's credentials) leaves them out.
        for home in &self.homes {
            let home = canonical(home);
            out.extend(CREDENTIAL_STORES.iter().map(|c| canonical(&home.join(c))));
        }
        if let Some(dir) = self.var("CARGO_HOME") {
            for f in ["credentials", "credentials.toml"] {
                out.push(canonical(&Path::new(dir).join(f)));
            }
        }
        for var in CREDENTIAL_VARS {
            if let Some(v) = self.var(var) {
                out.extend(std::env::split_paths(v).map(|p| canonical(&p)));
            }
        }
        for (k, v) in &self.env {
            if k.to_str()
                .is_some_and(waymark_config::secrets::is_secret_name)
            {
                out.extend(
                    std::env::split_paths(v)
                        .filter(|p| p.is_absolute())
                        .map(|p| canonical(&p)),
                );
            }
        }
        out.retain(|p| p.is_absolute());
        out.sort();
        out.dedup();
        out
    }

    /// git's settings files, whose writes run code later (a `core.fsmonitor`, a filter): a
    /// write there is the user's decision, like one inside `.git/`.
    pub fn git_settings(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for home in &self.homes {
            out.push(canonical(&home.join(".gitconfig")));
            out.push(canonical(&home.join(".config/git")));
        }
        if let Some(dir) = self.var("XDG_CONFIG_HOME") {
            out.push(canonical(&Path::new(dir).join("git")));
        }
        if let Some(f) = self.var("GIT_CONFIG_GLOBAL") {
            out.push(canonical(Path::new(f)));
        }
        out
    }
}

/// Home folders beside the tools' and the runtime's `HOME`: this user's own from the
/// password database, and, for root (who may read them all), every other user's (`/root`
/// and the folders in `/home`).
pub fn other_homes() -> Vec<PathBuf> {
    let mut out = Vec::new();
    out.extend(passwd_home());
    #[allow(unsafe_code)]
    // SAFETY: geteuid(2) only reads this process's credentials.
    let root = unsafe { libc::geteuid() } == 0;
    if root {
        out.push(PathBuf::from("/root"));
        if let Ok(entries) = std::fs::read_dir("/home") {
            out.extend(entries.flatten().map(|e| e.path()));
        }
    }
    out
}

/// This user's home folder as the password database records it.
#[allow(unsafe_code)]
fn passwd_home() -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt as _;
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: an all-zero passwd is a valid value for getpwuid_r to fill.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: getpwuid_r writes into `pw` and `buf` (whose length we pass) and sets `result`
    // to `&pw` or null; nothing is kept past this call.
    let rc = unsafe {
        libc::getpwuid_r(
            libc::geteuid(),
            &mut pw,
            buf.as_mut_ptr(),
            buf.len(),
            &mut result,
        )
    };
    if rc != 0 || result.is_null() || pw.pw_dir.is_null() {
        return None;
    }
    // SAFETY: pw_dir points into `buf`, a NUL-terminated string getpwuid_r wrote.
    let dir = unsafe { std::ffi::CStr::from_ptr(pw.pw_dir) };
    let dir = PathBuf::from(OsStr::from_bytes(dir.to_bytes()));
    dir.is_absolute().then_some(dir)
}

/// A path made canonical when it exists (symlinks resolved), else kept as given.
pub(crate) fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

/// The private places that are rules rather than a list, so an entry made after the session
/// started (`vault login` writing `~/.vault-token`) is private too, and one that does not
/// exist yet: in each home folder every hidden entry but the public ones ([`HOME_PUBLIC`]);
/// in each settings folder (`~/.config`, `$XDG_CONFIG_HOME`) everything but git's settings;
/// in `~/.local` everything but what serves commands, and in each data folder
/// (`~/.local/share`, `$XDG_DATA_HOME`) everything but [`SHARE_PUBLIC`]. All canonical, so a
/// home reached through a link (`/home` → `/var/home`) counts where it really is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rules {
    homes: Vec<PathBuf>,
    configs: Vec<PathBuf>,
    shares: Vec<PathBuf>,
}

/// The entry of `dir` that `path` lies in (or is), with its name; None for `dir` itself and
/// for paths outside it.
fn entry_of<'a>(dir: &Path, path: &'a Path) -> Option<(&'a Path, String)> {
    let rest = path.strip_prefix(dir).ok()?;
    let name = rest.components().next()?.as_os_str();
    let depth = dir.components().count() + 1;
    let entry = path.ancestors().find(|a| a.components().count() == depth)?;
    Some((entry, name.to_string_lossy().into_owned()))
}

impl Rules {
    /// The private place a canonical path lies in by these rules, if any.
    pub fn place_of<'a>(&self, path: &'a Path) -> Option<&'a Path> {
        for dir in &self.configs {
            if let Some((entry, name)) = entry_of(dir, path) {
                if name != "git" {
                    return Some(entry);
                }
                let (entry, name) = entry_of(&dir.join("git"), path)?;
                return (!GIT_SETTINGS.contains(&name.as_str())).then_some(entry);
            }
        }
        for dir in &self.shares {
            if let Some((entry, name)) = entry_of(dir, path) {
                return (!SHARE_PUBLIC.contains(&name.as_str())).then_some(entry);
            }
        }
        for home in &self.homes {
            let Some((entry, name)) = entry_of(home, path) else {
                continue;
            };
            match name.as_str() {
                n if !n.starts_with('.') || HOME_PUBLIC.contains(&n) => {}
                // Looked into above (`share`) or here.
                ".config" => {}
                ".local" => {
                    if let Some((inner, name)) = entry_of(entry, path)
                        && !LOCAL_PUBLIC.contains(&name.as_str())
                    {
                        return Some(inner);
                    }
                }
                _ => return Some(entry),
            }
        }
        None
    }

    /// A folder these rules make private places in that lies in or is `dir` (a home, a
    /// settings or data folder, which in practice always hold some), if any.
    pub fn held_by(&self, dir: &Path) -> Option<&Path> {
        self.homes
            .iter()
            .chain(&self.configs)
            .chain(&self.shares)
            .find(|h| h.starts_with(dir))
            .map(PathBuf::as_path)
    }
}

/// The private places of `/etc`: the named secrets and whatever others may not read. A
/// walk of the whole folder, so it is done once, and only when needed (a sandboxed command,
/// or a file tool reading below `/etc`).
pub fn etc_private() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = SYSTEM_SECRETS
        .iter()
        .map(|s| canonical(Path::new(s)))
        .collect();
    not_world_readable(Path::new("/etc"), &mut out);
    out.sort();
    out.dedup();
    out
}

/// Entries below `dir` that others may not read (files without `o+r`, folders without
/// `o+rx`), found without following links; a private folder is not looked into.
fn not_world_readable(dir: &Path, out: &mut Vec<PathBuf>) {
    use std::os::unix::fs::PermissionsExt as _;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        let mode = meta.permissions().mode();
        if meta.is_dir() {
            if mode & 0o005 != 0o005 {
                out.push(entry.path());
            } else {
                not_world_readable(&entry.path(), out);
            }
        } else if meta.is_file() && mode & 0o004 == 0 {
            out.push(entry.path());
        }
    }
}

/// The private places as the file tools check them, with the user's own exceptions: a
/// place the user chose that lies inside a private one (the workspace, the session's own
/// folder, a `sandbox.read_allow` entry) is readable; a private place inside a chosen one
/// stays private.
#[derive(Debug, Clone, Default)]
pub struct Protected {
    places: Arc<Vec<PathBuf>>,
    rules: Arc<Rules>,
    /// `/etc`'s private places, walked for on first need (none at all: nothing protected).
    etc: Option<Arc<OnceLock<Vec<PathBuf>>>>,
    exceptions: Vec<PathBuf>,
    git_settings: Arc<Vec<PathBuf>>,
}

impl Protected {
    pub fn new(
        places: Arc<Vec<PathBuf>>,
        rules: Arc<Rules>,
        etc: Arc<OnceLock<Vec<PathBuf>>>,
        exceptions: Vec<PathBuf>,
        git_settings: Arc<Vec<PathBuf>>,
    ) -> Protected {
        Protected {
            places,
            rules,
            etc: Some(etc),
            exceptions: exceptions.iter().map(|e| canonical(e)).collect(),
            git_settings,
        }
    }

    /// Nothing protected (a read the user approved).
    pub fn none() -> Protected {
        Protected::default()
    }

    /// The private place a canonical path lies in, if any.
    pub fn place_of<'a>(&'a self, path: &'a Path) -> Option<&'a Path> {
        // A process's folder holds its environment, command line and memory: the runtime's
        // own (`/proc/self` leads there) and every other process of the user's.
        if let Some(process) = path.ancestors().find(|a| {
            a.parent() == Some(Path::new("/proc"))
                && a.file_name().is_some_and(|n| {
                    let n = n.to_string_lossy();
                    n == "self"
                        || n == "thread-self"
                        || (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                })
        }) {
            return Some(process);
        }
        let inside = |place: &&PathBuf| {
            path.starts_with(place)
                && !self
                    .exceptions
                    .iter()
                    .any(|e| path.starts_with(e) && e.starts_with(place))
        };
        if let Some(place) = self.places.iter().find(inside) {
            return Some(place);
        }
        if let Some(place) = self.rules.place_of(path)
            && !self
                .exceptions
                .iter()
                .any(|e| path.starts_with(e) && e.starts_with(place))
        {
            return Some(place);
        }
        let etc = self.etc.as_ref().filter(|_| path.starts_with("/etc"))?;
        etc.get_or_init(etc_private)
            .iter()
            .find(inside)
            .map(PathBuf::as_path)
    }

    /// A private place below a canonical folder (a command reading the folder whole, as `rg`
    /// does, would read it), if any; a place the user named itself does not count.
    pub fn held_by(&self, dir: &Path) -> Option<&Path> {
        let below = |place: &&PathBuf| {
            place.starts_with(dir)
                && place.as_path() != dir
                && !self.exceptions.iter().any(|e| e == *place)
        };
        if let Some(place) = self.places.iter().find(below) {
            return Some(place);
        }
        if let Some(place) = self.rules.held_by(dir) {
            return Some(place);
        }
        let etc = self
            .etc
            .as_ref()
            .filter(|_| Path::new("/etc").starts_with(dir) || dir.starts_with("/etc"))?;
        etc.get_or_init(etc_private)
            .iter()
            .find(below)
            .map(PathBuf::as_path)
    }

    /// Whether a canonical path is git settings (`~/.gitconfig`, `~/.config/git/…`).
    pub fn is_git_settings(&self, path: &Path) -> bool {
        self.git_settings.iter().any(|g| path.starts_with(g))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A file at `p` (folders made as needed), for the tests of the read rules.
    pub(crate) fn touch(p: &Path) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, "x").unwrap();
    }

    /// The home folders' hidden entries are a rule, not a list made when the session
    /// started: one made later is private, and so is a store that does not exist yet in a
    /// home reached through a link.
    #[test]
    fn a_hidden_entry_made_later_and_a_home_behind_a_link_are_private() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let real = root.join("real");
        std::fs::create_dir(&real).unwrap();
        std::os::unix::fs::symlink(&real, root.join("link")).unwrap();
        let owner = Owner {
            homes: vec![root.join("link")],
            ..Owner::default()
        };
        let p = Protected::new(
            Arc::new(owner.places()),
            Arc::new(owner.rules()),
            Arc::default(),
            vec![real.join(".dotfiles")],
            Arc::default(),
        );
        touch(&real.join(".vault-token"));
        for private in [
            ".vault-token",
            ".kube/config",
            ".terraform.d/credentials.tfrc.json",
            ".config/newtool/token",
            ".config/git/credentials",
            ".local/state/x",
            ".local/share/newapp/db",
            ".cargo/credentials.toml",
        ] {
            assert!(p.place_of(&real.join(private)).is_some(), "{private}");
        }
        for public in [
            ".config/git/config",
            ".local/bin/tool",
            ".local/share/mise/x",
            ".cargo/bin/cargo",
            "code/a.rs",
            ".dotfiles/vimrc",
        ] {
            assert!(p.place_of(&real.join(public)).is_none(), "{public}");
        }
        assert!(p.held_by(&real).is_some() && p.held_by(&root).is_some());
        assert!(p.held_by(&real.join("code")).is_none());
    }

    #[test]
    fn hidden_home_entries_are_private_unless_reviewed() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().canonicalize().unwrap();
        for f in [
            ".codex/auth.json",
            ".Xauthority",
            ".bash_history",
            ".config/glab-cli/config.yml",
            ".config/git/config",
            ".config/git/credentials",
            ".local/bin/tool",
            ".local/state/x",
            ".local/share/mise/x",
            ".local/share/recently-used.xbel",
            ".cargo/bin/cargo",
            ".cargo/credentials.toml",
            ".gitconfig",
            "code/main.rs",
        ] {
            touch(&home.join(f));
        }
        let owner = Owner {
            homes: vec![home.clone()],
            ..Owner::default()
        };
        let p = Protected::new(
            Arc::new(owner.places()),
            Arc::new(owner.rules()),
            Arc::default(),
            Vec::new(),
            Arc::default(),
        );
        for private in [
            ".codex/auth.json",
            ".Xauthority",
            ".bash_history",
            ".config/glab-cli/config.yml",
            ".config/git/credentials",
            ".local/state/x",
            ".local/share/recently-used.xbel",
            ".cargo/credentials.toml",
            ".ssh/id_ed25519",
        ] {
            assert!(p.place_of(&home.join(private)).is_some(), "{private}");
        }
        for public in [
            ".config/git/config",
            ".local/bin/tool",
            ".local/share/mise/x",
            ".cargo/bin/cargo",
            ".gitconfig",
            "code/main.rs",
        ] {
            assert!(p.place_of(&home.join(public)).is_none(), "{public}");
        }
    }

    #[test]
    fn relocated_stores_are_private_and_chosen_places_are_the_exception() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for f in [
            "cargo/credentials.toml",
            "cargo/bin/cargo",
            "xdg/gh/hosts.yml",
            "xdg/git/config",
            "xdgdata/waymark/waymark.db",
            "aws/creds",
            "data/sessions/s1/artifacts/plan.md",
            "data/sessions/s2/artifacts/plan.md",
        ] {
            touch(&root.join(f));
        }
        let var = |k: &str, v: &str| (OsString::from(k), OsString::from(root.join(v)));
        let owner = Owner {
            waymark: vec![root.join("data")],
            homes: Vec::new(),
            env: vec![
                var("CARGO_HOME", "cargo"),
                var("XDG_CONFIG_HOME", "xdg"),
                var("XDG_DATA_HOME", "xdgdata"),
                var("AWS_SHARED_CREDENTIALS_FILE", "aws/creds"),
            ],
        };
        let p = Protected::new(
            Arc::new(owner.places()),
            Arc::new(owner.rules()),
            Arc::default(),
            vec![root.join("data/sessions/s1")],
            Arc::new(owner.git_settings()),
        );
        for private in [
            "cargo/credentials.toml",
            "xdg/gh/hosts.yml",
            "xdgdata/waymark/waymark.db",
            "aws/creds",
            "data/sessions/s2/artifacts/plan.md",
            "data/waymark.db",
        ] {
            assert!(p.place_of(&root.join(private)).is_some(), "{private}");
        }
        for public in [
            "cargo/bin/cargo",
            "xdg/git/config",
            "data/sessions/s1/artifacts/plan.md",
        ] {
            assert!(p.place_of(&root.join(public)).is_none(), "{public}");
        }
        assert!(p.is_git_settings(&root.join("xdg/git/config")));
    }

    #[test]
    fn every_home_of_the_machine_counts_and_secret_named_paths_are_private() {
        let homes = other_homes();
        #[allow(unsafe_code)]
        // SAFETY: geteuid(2) only reads this process's credentials.
        if unsafe { libc::geteuid() } == 0 {
            assert!(homes.contains(&PathBuf::from("/root")), "{homes:?}");
        }
        assert!(passwd_home().is_some_and(|h| h.is_absolute()));
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let var = |k: &str, v: &str| (OsString::from(k), OsString::from(root.join(v)));
        let owner = Owner {
            env: vec![
                var("CLAUDE_CONFIG_DIR", "claude"),
                var("SOPS_AGE_KEY_FILE", "age.txt"),
                var("HF_TOKEN_PATH", "hf"),
                (
                    OsString::from("MY_KEY_FILES"),
                    OsString::from(format!(
                        "{}:{}",
                        root.join("k1").display(),
                        root.join("k2").display()
                    )),
                ),
                var("JAVA_HOME", "jdk"),
            ],
            ..Owner::default()
        };
        let places = owner.places();
        for private in ["claude", "age.txt", "hf", "k1", "k2"] {
            assert!(
                places.contains(&root.join(private)),
                "{private}: {places:?}"
            );
        }
        assert!(!places.contains(&root.join("jdk")), "{places:?}");
    }

    #[test]
    fn a_folder_holding_a_private_place_is_known() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        touch(&root.join("home/.ssh/id"));
        touch(&root.join("home/code/a.rs"));
        touch(&root.join("data/sessions/s1/x"));
        let owner = Owner {
            waymark: vec![root.join("data")],
            homes: vec![root.join("home")],
            env: Vec::new(),
        };
        let p = Protected::new(
            Arc::new(owner.places()),
            Arc::new(owner.rules()),
            Arc::default(),
            vec![root.join("data/sessions/s1"), root.join("home")],
            Arc::default(),
        );
        assert!(
            p.held_by(&root.join("home")).is_some(),
            "the workspace's own stores count"
        );
        assert!(p.held_by(&root).is_some());
        assert!(p.held_by(&root.join("home/code")).is_none());
        assert!(p.held_by(&root.join("data/sessions/s1")).is_none());
        assert!(
            p.held_by(Path::new("/")).is_some(),
            "/etc's secrets are below /"
        );
        // Every process's folder is private; the machine's own tables are not.
        for view in [
            "/proc/self/environ",
            "/proc/thread-self/mem",
            "/proc/1/environ",
            "/proc/42",
        ] {
            assert!(p.place_of(Path::new(view)).is_some(), "{view}");
        }
        for table in [
            "/proc/cpuinfo",
            "/proc/sys/kernel/ostype",
            "/proc/1x/environ",
        ] {
            assert!(p.place_of(Path::new(table)).is_none(), "{table}");
        }
    }

    #[test]
    fn what_others_may_not_read_in_etc_is_private() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let etc = dir.path().canonicalize().unwrap();
        touch(&etc.join("apt/auth.conf.d/private.conf"));
        touch(&etc.join("apt/sources.list"));
        touch(&etc.join("wireguard/wg0.conf"));
        let mode = |p: &str, m: u32| {
            std::fs::set_permissions(etc.join(p), std::fs::Permissions::from_mode(m)).unwrap()
        };
        mode("apt/auth.conf.d/private.conf", 0o600);
        mode("wireguard", 0o700);
        let mut out = Vec::new();
        not_world_readable(&etc, &mut out);
        assert!(
            out.contains(&etc.join("apt/auth.conf.d/private.conf")),
            "{out:?}"
        );
        assert!(out.contains(&etc.join("wireguard")), "{out:?}");
        assert!(!out.contains(&etc.join("apt/sources.list")), "{out:?}");
    }
}
