//! Running the real `git` on a checkout: every call names its folder, never inherits a
//! repository from the environment, and reports git's own words when it fails.

use crate::{Result, WorktreeError};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Variables that would point git at another repository than the folder named.
const REPO_VARS: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES",
];

/// A worktree as Waymark hands it to git: its folder and its own git folder in the project's
/// `.git/worktrees/`, found from the project's side. The worktree's `.git` file is never
/// read: it is in the agent's workspace, and a `.git` pointing at a git folder of the agent's
/// making would have git run whatever program that folder's settings name (`core.fsmonitor`,
/// `diff.external`, hooks) outside the sandbox.
pub(crate) struct Worktree {
    pub work: PathBuf,
    pub gitdir: PathBuf,
}

/// Longest `gitdir` file read (it holds one path).
const GITDIR_FILE_MAX: u64 = 8 * 1024;

impl Worktree {
    /// The worktree at `work` of the project checked out at `repo`, as the project's own git
    /// folder records it.
    pub(crate) fn of(repo: &Path, work: &Path) -> Result<Worktree> {
        let common = run(
            repo,
            &["rev-parse", "--path-format=absolute", "--git-common-dir"],
        )?;
        let common = Path::new(common.trim());
        let work = real_folder(work)?;
        match admin_name(common, &work)? {
            Some(name) => Ok(Worktree {
                work,
                gitdir: common.join("worktrees").join(name),
            }),
            None => Err(WorktreeError::Unregistered {
                path: work.display().to_string(),
                repo: repo.display().to_string(),
            }),
        }
    }

    /// The worktree's own index.
    pub(crate) fn index(&self) -> PathBuf {
        self.gitdir.join("index")
    }

    /// `git <args>` on this worktree, with `env` added.
    pub(crate) fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> Result<Output> {
        let git_dir = format!("--git-dir={}", self.gitdir.display());
        let work_tree = format!("--work-tree={}", self.work.display());
        run_with(
            &self.work,
            &[git_dir.as_str(), work_tree.as_str()],
            args,
            env,
        )
    }

    /// `git <args>` on this worktree, which must succeed: its standard output.
    pub(crate) fn run(&self, args: &[&str]) -> Result<String> {
        ok(&self.work, args, self.run_env(args, &[])?)
    }
}

/// The name of git's folder (in `<common>/worktrees/`) for the worktree at `work`: the one
/// whose `gitdir` file names `work`'s `.git`. Each is read without following a link or
/// waiting on a pipe; `None` when none does.
pub(crate) fn admin_name(common: &Path, work: &Path) -> Result<Option<String>> {
    let worktrees = crate::at::Dir::open(common)?.walk("worktrees", false)?;
    for name in worktrees.names()? {
        let Ok(entry) = worktrees.walk(&name, false) else {
            continue;
        };
        let Ok(Some(text)) = entry.read("gitdir", GITDIR_FILE_MAX) else {
            continue;
        };
        // It names the worktree's `.git`: the worktree is the folder holding it.
        let text = String::from_utf8_lossy(&text);
        let named = Path::new(text.trim());
        if named.file_name() == Some(std::ffi::OsStr::new(".git")) && named.parent() == Some(work) {
            return Ok(Some(name));
        }
    }
    Ok(None)
}

/// `path` itself, a folder reached through no link: a worktree's folder the agent moved away
/// and replaced by a link (to `~/.ssh`, say) would have its review show, its merge commit and
/// its discard delete what the link points at.
pub(crate) fn real_folder(path: &Path) -> Result<PathBuf> {
    let io = |e| WorktreeError::Io {
        path: path.display().to_string(),
        source: e,
    };
    let meta = std::fs::symlink_metadata(path).map_err(io)?;
    let real = path.canonicalize().map_err(io)?;
    if !meta.is_dir() || real != path {
        return Err(WorktreeError::Replaced(path.display().to_string()));
    }
    Ok(real)
}

/// A git folder of Waymark's own for one review or merge. Git reads its settings (the
/// project's object format, nothing else), its ignore list (a copy of the project's
/// `info/exclude`) and its HEAD from here, and the project's objects from the project's own
/// object folder; the index and the work tree are named for each call. No setting of the
/// repository's is read (its `config`, nor the global or system ones), so no filter, merge
/// driver, textconv, hook, monitor, `core.worktree`, `merge.autoStash` or diff prefix of the
/// agent's is in force, and none can appear between a check and the call: the agent writes
/// the project's shared settings, and a process of its own that outlived its turn can change
/// them at any moment. Every call that reads or writes file content, or merges, goes through
/// here; the project's own git folder is used only to read and move references.
pub(crate) struct Sealed {
    pub(crate) dir: PathBuf,
    /// The project's object folder.
    pub(crate) shared: PathBuf,
    /// The private object folder every call uses once the objects a review or merge reads
    /// were copied in and checked ([`crate::objects`]); until then the project's.
    pub(crate) private: Option<PathBuf>,
    /// The ids copied into the private store from the project's, sorted.
    pub(crate) copied: Vec<String>,
}

/// Which objects a sealed call reads, and where git puts those it makes.
#[derive(Clone, Copy)]
pub(crate) enum Store<'a> {
    /// The project's, read only: what git makes (the worktree's files as objects) goes into
    /// the sealed folder's own `written` folder, never into the project's store, where the
    /// agent can have put links for git to write through.
    Project,
    /// The objects in this folder alone.
    Only(&'a Path),
    /// What git makes into this folder, the project's read beside it (so `index-pack`
    /// compares what it takes with an object of the same name there).
    Beside(&'a Path),
}

/// Longest ignore list (`info/exclude`, the user's own) copied into a [`Sealed`] folder.
const EXCLUDE_MAX: u64 = 1024 * 1024;

/// How the folders [`Sealed`] makes are named, before the process id.
const SEALED_PREFIX: &str = ".waymark-git-";

impl Sealed {
    /// A sealed folder for the repository checked out at `repo`, made in `home` (Waymark's
    /// worktrees folder, which no session writes: the agent's temporary folder would let it
    /// change what git reads here).
    pub(crate) fn of(repo: &Path, home: &Path) -> Result<Sealed> {
        let common = run(
            repo,
            &["rev-parse", "--path-format=absolute", "--git-common-dir"],
        )?;
        let common = PathBuf::from(common.trim());
        let format = run(repo, &["rev-parse", "--show-object-format"])?;
        let format = format.trim();
        if !matches!(format, "sha1" | "sha256") {
            return Err(WorktreeError::Git {
                command: "git rev-parse --show-object-format".into(),
                dir: repo.display().to_string(),
                message: format!("unknown object format `{format}`"),
            });
        }
        // The user's own ignore list (`core.excludesFile`, else git's default place), copied
        // once: the name comes from settings the agent can write, and what it names could be a
        // pipe or change between review and merge.
        let named = run_env(
            repo,
            &["config", "--type=path", "--get", "core.excludesFile"],
            &[],
        )?;
        let named = named
            .status
            .success()
            .then(|| String::from_utf8_lossy(&named.stdout).trim().to_string())
            .filter(|e| !e.is_empty())
            .map(PathBuf::from)
            .or_else(default_excludes);
        let user_excludes = named
            .and_then(|p| read_small(&p, EXCLUDE_MAX))
            .unwrap_or_default();
        // In a folder of their own: a worktree's folder name never collides with theirs.
        let home = &home.join(".sealed");
        waymark_extension::paths::private_dir(home).map_err(|e| io_error(home, e))?;
        sweep(home);
        let dir = home.join(format!(
            "{SEALED_PREFIX}{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        use std::os::unix::fs::DirBuilderExt as _;
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(|e| io_error(&dir, e))?;
        let sealed = Sealed {
            shared: common.join("objects"),
            private: None,
            copied: Vec::new(),
            dir,
        };
        sealed.fill(&common, format, &user_excludes)?;
        Ok(sealed)
    }

    /// A file name in this folder for a call's own use (an index).
    pub(crate) fn scratch(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Writes the folder's settings, HEAD, `refs/` and ignore lists.
    fn fill(&self, common: &Path, format: &str, user_excludes: &[u8]) -> Result<()> {
        let io = |p: &Path| {
            let p = p.to_path_buf();
            move |e| io_error(&p, e)
        };
        for sub in ["refs", "info", "written"] {
            std::fs::create_dir(self.dir.join(sub)).map_err(io(&self.dir))?;
        }
        let config = if format == "sha1" {
            "[core]\n\trepositoryformatversion = 0\n\tbare = false\n".to_string()
        } else {
            format!(
                "[core]\n\trepositoryformatversion = 1\n\tbare = false\n[extensions]\n\tobjectformat = {format}\n"
            )
        };
        std::fs::write(self.dir.join("config"), config).map_err(io(&self.dir))?;
        self.set_head(None)?;
        // The project's ignore list, read without following a link or waiting on a pipe:
        // the files it names stay out of review and merge alike, as they would in git.
        let exclude = common.join("info/exclude");
        let text = read_small(&exclude, EXCLUDE_MAX).unwrap_or_default();
        std::fs::write(self.dir.join("info/exclude"), text).map_err(io(&self.dir))?;
        std::fs::write(self.dir.join("info/user-excludes"), user_excludes).map_err(io(&self.dir))
    }

    /// Points the folder's HEAD at `commit` (detached), or at an unborn branch.
    pub(crate) fn set_head(&self, commit: Option<&str>) -> Result<()> {
        let head = match commit {
            Some(c) => format!("{c}\n"),
            None => "ref: refs/heads/waymark\n".into(),
        };
        std::fs::write(self.dir.join("HEAD"), head).map_err(|e| io_error(&self.dir, e))
    }

    /// The objects calls use now: the private ones once copied in, else the project's.
    pub(crate) fn store(&self) -> Store<'_> {
        match &self.private {
            Some(p) => Store::Only(p),
            None => Store::Project,
        }
    }

    /// A `git <args>` command on the objects of [`Sealed::store`], the work tree `work` and the
    /// index `index` where named (else one of this folder's own).
    fn command(&self, work: Option<&Path>, index: Option<&Path>, args: &[&str]) -> Command {
        self.command_on(self.store(), work, index, args)
    }

    /// [`Sealed::command`] on the objects of `store`.
    pub(crate) fn command_on(
        &self,
        store: Store<'_>,
        work: Option<&Path>,
        index: Option<&Path>,
        args: &[&str],
    ) -> Command {
        let mut repo = vec![format!("--git-dir={}", self.dir.display())];
        if let Some(w) = work {
            repo.push(format!("--work-tree={}", w.display()));
        }
        let repo: Vec<&str> = repo.iter().map(String::as_str).collect();
        let mut c = command(work.unwrap_or(&self.dir), &repo);
        let mut pairs: Vec<(String, String)> = FIXED
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        // Nothing of the folder's owner is read here, so whose folder it is does not matter.
        pairs.push(("safe.directory".into(), "*".into()));
        pairs.push((
            "core.excludesFile".into(),
            self.dir.join("info/user-excludes").display().to_string(),
        ));
        configure(&mut c, &pairs);
        let written = self.dir.join("written");
        let (objects, beside) = match store {
            Store::Project => (written.as_path(), Some(self.shared.as_path())),
            Store::Only(p) => (p, None),
            Store::Beside(p) => (p, Some(self.shared.as_path())),
        };
        if let Some(shared) = beside {
            c.env("GIT_ALTERNATE_OBJECT_DIRECTORIES", shared);
        }
        c.env("GIT_OBJECT_DIRECTORY", objects)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_GRAFT_FILE", self.dir.join("info/grafts"))
            .env(
                "GIT_INDEX_FILE",
                index.map_or_else(|| self.dir.join("index"), Path::to_path_buf),
            );
        c.args(args);
        c
    }

    /// `git <args>` with `env` added (see [`Sealed::command`]).
    pub(crate) fn run_env(
        &self,
        work: Option<&Path>,
        index: Option<&Path>,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Result<Output> {
        let mut c = self.command(work, index, args);
        for (k, v) in env {
            c.env(k, v);
        }
        crate::run::run(c, work.unwrap_or(&self.dir), None).map(|(out, _)| out)
    }

    /// `git <args>` in the work tree `work`, reading `input`, which must succeed: its
    /// standard output.
    pub(crate) fn run_fed(
        &self,
        work: Option<&Path>,
        args: &[&str],
        input: Vec<u8>,
    ) -> Result<String> {
        let dir = work.unwrap_or(&self.dir);
        let c = self.command(work, None, args);
        let (out, _) = crate::run::run_io(c, dir, crate::run::Io::Feed(input))?;
        ok(dir, args, out)
    }

    /// `git <args>` on the objects alone, which must succeed: its standard output.
    pub(crate) fn run(&self, args: &[&str]) -> Result<String> {
        ok(&self.dir, args, self.run_env(None, None, args, &[])?)
    }

    /// [`Sealed::run`] on the work tree `work` and the index `index`.
    pub(crate) fn run_in(
        &self,
        work: Option<&Path>,
        index: &Path,
        args: &[&str],
    ) -> Result<String> {
        let dir = work.unwrap_or(&self.dir);
        ok(dir, args, self.run_env(work, Some(index), args, &[])?)
    }

    /// `git <args>` on the objects alone, its output read up to `cap` bytes: past that git is
    /// stopped, and the text is cut after its last whole line (`true` says it was cut).
    pub(crate) fn run_capped(&self, args: &[&str], cap: usize) -> Result<(String, bool)> {
        let (mut out, cut) = crate::run::run(self.command(None, None, args), &self.dir, Some(cap))?;
        if cut {
            let end = out
                .stdout
                .iter()
                .rposition(|b| *b == b'\n')
                .map_or(0, |i| i + 1);
            out.stdout.truncate(end);
        } else if !out.status.success() {
            return Err(WorktreeError::Git {
                command: format!("git {}", args.join(" ")),
                dir: self.dir.display().to_string(),
                message: said(&out),
            });
        }
        Ok((String::from_utf8_lossy(&out.stdout).into_owned(), cut))
    }
}

impl Drop for Sealed {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Where git looks for the user's ignore list when no setting names one.
fn default_excludes() -> Option<PathBuf> {
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(config.join("git/ignore"))
}

/// Removes the sealed folders in `home` of processes that are gone (one killed mid-merge).
fn sweep(home: &Path) {
    let Ok(entries) = std::fs::read_dir(home) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(SEALED_PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let real = e.file_type().is_ok_and(|t| t.is_dir());
        if real && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// The content of the small regular file at `path`, read without following a link or
/// waiting on a pipe, at most `max` bytes; `None` when it is not one.
fn read_small(path: &Path, max: u64) -> Option<Vec<u8>> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    if !f.metadata().ok()?.is_file() {
        return None;
    }
    let mut buf = Vec::new();
    f.take(max).read_to_end(&mut buf).ok()?;
    Some(buf)
}

/// Settings keys that name a program git would run on a file's content, or make a filter's
/// absence an error: each is set empty (or false) on every call made with the repository's
/// own settings. An agent that can run git in its worktree writes the project's shared
/// settings, so these may be its own. (Calls that read or write file content go through
/// [`Sealed`], which reads no settings of the repository's at all: listing keys and then
/// calling git leaves a moment in which a key can appear.)
const PROGRAM_KEYS: &str =
    r"^(filter|merge|diff)\..*\.(clean|smudge|process|driver|textconv|command|required)$";

/// Settings every call gets, whatever the repository's say: no hook, no file-system monitor,
/// no attributes file, no external diff, no replacement objects, no transport (a partial
/// clone's missing object is never fetched: fetching runs `core.sshCommand`,
/// `remote.*.uploadpack` or a credential helper, all of them settings the agent can write),
/// and no hint in place of git's own error.
const FIXED: &[(&str, &str)] = &[
    ("core.hooksPath", "/dev/null"),
    ("core.fsmonitor", "false"),
    ("core.attributesFile", "/dev/null"),
    ("diff.external", ""),
    ("core.useReplaceRefs", "false"),
    ("protocol.allow", "never"),
    ("advice.graftFileDeprecated", "false"),
    // A directory renamed on one side never carries files the other side added along with
    // it: that is a conflict, shown, never a move the review did not show.
    ("merge.directoryRenames", "conflict"),
    // An index git writes is whole: a split index would be written beside it as a shared
    // file, in a git folder of ours that goes away.
    ("core.splitIndex", "false"),
    // No command goes into a submodule's repository, whose settings the agent can write.
    ("submodule.recurse", "false"),
];

/// A git command in `dir` with `repo` (the options choosing the repository) first, every
/// variable that would point it elsewhere removed, and no prompt.
fn command(dir: &Path, repo: &[&str]) -> Command {
    let mut c = Command::new("git");
    c.arg("-C").arg(dir).args(repo);
    for v in REPO_VARS.iter().chain(CONFIG_VARS) {
        c.env_remove(v);
    }
    // Never stop to ask (a credential prompt, an editor for a merge message); never read
    // replacement objects or grafts, which would show one content and commit another; never
    // fetch a missing object.
    c.env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_EDITOR", "true")
        .env("GIT_MERGE_AUTOEDIT", "no")
        .env("GIT_NO_REPLACE_OBJECTS", "1")
        .env("GIT_NO_LAZY_FETCH", "1")
        .env("GIT_GRAFT_FILE", "/dev/null");
    // Programs git starts are found on the PATH's absolute folders only: a relative one
    // (`node_modules/.bin`) would be looked up in the worktree git works in.
    if let Some(path) = std::env::var_os("PATH") {
        let kept: Vec<PathBuf> = std::env::split_paths(&path)
            .filter(|p| p.is_absolute())
            .collect();
        if let Ok(joined) = std::env::join_paths(kept) {
            c.env("PATH", joined);
        }
    }
    c.stdin(std::process::Stdio::null());
    c
}

/// Variables that would add settings to a call from Waymark's own environment.
const CONFIG_VARS: &[&str] = &["GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_CONFIG"];

/// Gives `c` the settings `pairs` the way git takes them from its environment
/// (`GIT_CONFIG_COUNT`, `GIT_CONFIG_KEY_<n>`, `GIT_CONFIG_VALUE_<n>`): a key is taken whole,
/// whatever it holds (a `-c key=value` is split at its first `=`, so a driver named `a=b`
/// would escape it).
fn configure(c: &mut Command, pairs: &[(String, String)]) {
    c.env("GIT_CONFIG_COUNT", pairs.len().to_string());
    for (n, (k, v)) in pairs.iter().enumerate() {
        c.env(format!("GIT_CONFIG_KEY_{n}"), k);
        c.env(format!("GIT_CONFIG_VALUE_{n}"), v);
    }
}

/// The settings that switch off, for one call with the repository's own settings, every
/// program they name for file content (filter drivers, merge drivers, textconv, external
/// diff), with [`FIXED`].
fn neutral(dir: &Path, repo: &[&str]) -> Result<Vec<(String, String)>> {
    let mut out: Vec<(String, String)> = FIXED
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let mut c = command(dir, repo);
    configure(&mut c, &out);
    c.args([
        "config",
        "--null",
        "--name-only",
        "--get-regexp",
        PROGRAM_KEYS,
    ]);
    let (listed, _) = crate::run::run(c, dir, None)?;
    // Exit 1: none set.
    for key in String::from_utf8_lossy(&listed.stdout)
        .split('\0')
        .map(str::trim)
        .filter(|k| !k.is_empty())
    {
        let off = if key.ends_with(".required") {
            "false"
        } else {
            ""
        };
        out.push((key.to_string(), off.to_string()));
    }
    Ok(out)
}

fn io_error(dir: &Path, e: std::io::Error) -> WorktreeError {
    match e.kind() {
        std::io::ErrorKind::NotFound => WorktreeError::NoGit,
        _ => WorktreeError::Io {
            path: dir.display().to_string(),
            source: e,
        },
    }
}

/// `git <args>` in `dir`, with `env` added. No hook, no file-system monitor, and no program
/// the repository's settings name for file content runs, in the worktree or in the user's
/// checkout: a relative `core.hooksPath` (husky's `.husky/_`) or `core.fsmonitor` in the
/// user's settings names a program in the folder git works in, which in a worktree the agent
/// wrote, and the agent's git calls in its worktree write the project's shared settings.
pub(crate) fn run_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<Output> {
    run_with(dir, &[], args, env)
}

/// [`run_env`] with `repo`, the options choosing the repository, first.
fn run_with(dir: &Path, repo: &[&str], args: &[&str], env: &[(&str, &str)]) -> Result<Output> {
    let neutral = neutral(dir, repo)?;
    let mut c = command(dir, repo);
    configure(&mut c, &neutral);
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    crate::run::run(c, dir, None).map(|(out, _)| out)
}

/// `git <args>` in `dir`, which must succeed: its standard output.
pub(crate) fn run(dir: &Path, args: &[&str]) -> Result<String> {
    ok(dir, args, run_env(dir, args, &[])?)
}

/// The output of a call that must have succeeded.
pub(crate) fn ok(dir: &Path, args: &[&str], out: Output) -> Result<String> {
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    Err(WorktreeError::Git {
        command: format!("git {}", args.join(" ")),
        dir: dir.display().to_string(),
        message: said(&out),
    })
}

/// What git said on failure, on a few lines.
pub(crate) fn said(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr);
    let text = if err.trim().is_empty() {
        String::from_utf8_lossy(&out.stdout).into_owned()
    } else {
        err.into_owned()
    };
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(8)
        .collect();
    lines.join("\n")
}

/// The NUL-separated paths of a `-z` listing.
pub(crate) fn paths(z: &str) -> Vec<String> {
    z.split('\0')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}

/// Whether the git installed takes `--attr-source` (2.40 and later), asked once.
pub(crate) fn has_attr_source() -> bool {
    static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HAS.get_or_init(|| {
        let Ok(out) = Command::new("git").arg("--version").output() else {
            return false;
        };
        let text = String::from_utf8_lossy(&out.stdout);
        let mut nums = text
            .split_whitespace()
            .nth(2)
            .unwrap_or("")
            .split('.')
            .map(|n| n.parse::<u32>().unwrap_or(0));
        let (major, minor) = (nums.next().unwrap_or(0), nums.next().unwrap_or(0));
        (major, minor) >= (2, 40)
    })
}

/// `--attr-source=<commit>` where git takes it (2.40 and later): attributes then come from
/// that commit alone, never from a work tree's `.gitattributes` (older git reads those).
pub(crate) fn attr_source(commit: &str) -> Vec<String> {
    if has_attr_source() {
        vec![format!("--attr-source={commit}")]
    } else {
        Vec::new()
    }
}
