//! The permission guard and the grants it honours. Grants never widen silently:
//! - "allow for session" on a shell command covers that exact command line;
//! - a prefix grant (`allow_prefix`) is offered only for the reviewed prefixes of
//!   [`PREFIX_ALLOWLIST`] (read-only tools, build and test runners), and covers the prefix
//!   followed by plain operands only;
//! - "allow for session" on a file tool covers that tool, except inside `.git/`;
//! - extensions add their own rules ([`crate::extension::rules`]): a policy for another
//!   actor, calls they decide before the mode, files written without asking, and the scope
//!   grants belong to (grants given in plan mode end when plan mode ends);
//! - writes inside `.git/`, and to instruction files (`AGENTS.md`, `CLAUDE.md`), ask in every
//!   mode but `auto`, and the session's artifacts folder
//!   follows the permission mode like any other place (unless a rule lets a file go).
//!
//! The question the user answers says exactly what each answer grants, shows the whole
//! command (escaped) and, for file changes, the diff of every file.

use crate::display::escape_line;
use crate::extension::rules::{PermissionRule, scope_of};
use crate::guard::{GuardCall, GuardDecision, ToolGuard, permission_answered, shell_question};
use crate::tools::fs_policy::resolve_target;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use waymark_protocol::{Answer, CallActor, GrantOffer, PermissionMode, PermissionQuestion};

/// The reviewed list of command prefixes a prefix grant may be offered for: read-only tools
/// and the subcommands of build and test runners. Every other command gets its exact command
/// line only — a program this list does not know may take plain-looking words as options
/// (GNU tar's dash-less bundles: `tar cIf bash …` runs bash). Each entry is checked against
/// the known ways to run a program or write a file through it (the GTFOBins table in this
/// module's tests); all of them use options, assignments, redirection or chaining, which a
/// prefix grant never covers. Build and test runners run the project's own code: that is
/// what the user approves when granting them (see the threat model).
pub const PREFIX_ALLOWLIST: &[&str] = &[
    // Read-only tools.
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "grep",
    "rg",
    "tree",
    "pwd",
    "stat",
    "file",
    "du",
    "df",
    "which",
    "diff",
    "echo",
    "git status",
    "git log",
    "git diff",
    "git show",
    "git blame",
    "git ls-files",
    "git rev-parse",
    // Build and test runners.
    "cargo build",
    "cargo check",
    "cargo test",
    "cargo clippy",
    "cargo fmt",
    "cargo bench",
    "cargo doc",
    "npm test",
    "yarn test",
    "pnpm test",
    "bun test",
    "go build",
    "go test",
    "go vet",
    "pytest",
    "make test",
    "make check",
    "make build",
    "make lint",
    "dotnet build",
    "dotnet test",
];

/// Shell control characters after which a command prefix no longer describes the command
/// (globs included: `AGENT[S].md` or `.gi[t]/config` names a file the words do not show).
const SHELL_META: &[char] = &[
    ';', '&', '|', '`', '$', '>', '<', '(', ')', '\n', '\r', '\\', '*', '?', '{', '}', '[', ']',
    '\'', '"',
];

/// Programs whose first argument names a subcommand, so `cargo test` and `cargo publish` are
/// told apart (and the program alone is never a prefix).
const SUBCOMMAND_PROGRAMS: &[&str] = &[
    "bun", "cargo", "dotnet", "git", "go", "make", "npm", "pnpm", "yarn",
];

/// The prefix a prefix grant would cover for `command`: the program and, for programs with
/// subcommands, the subcommand (`cargo test`), when that prefix is on [`PREFIX_ALLOWLIST`].
/// `None` otherwise, and when the command chains, redirects, quotes or expands anything.
pub fn command_prefix(command: &str) -> Option<String> {
    let mut words = plain_words(command)?.into_iter();
    let first = words.next()?;
    let prefix = if SUBCOMMAND_PROGRAMS.contains(&first) {
        format!("{first} {}", words.next()?)
    } else {
        first.to_string()
    };
    PREFIX_ALLOWLIST
        .contains(&prefix.as_str())
        .then_some(prefix)
}

/// The words bash splits `command` into, when it is plain: no shell syntax
/// ([`SHELL_META`]), and no blank or control character but spaces and tabs, the only ones
/// bash splits on. A vertical tab or a no-break space is part of a word to bash, so
/// splitting on it here would check words the command never has.
fn plain_words(command: &str) -> Option<Vec<&str>> {
    let odd = |c: char| (c.is_whitespace() || c.is_control()) && c != ' ' && c != '\t';
    if command.contains(SHELL_META) || command.contains(odd) {
        return None;
    }
    Some(
        command
            .split([' ', '\t'])
            .filter(|w| !w.is_empty())
            .collect(),
    )
}

/// Whether a word after a granted prefix is a plain operand (`src/lib.rs`, `parser::tests`):
/// not an option (options are where programs take files to write and commands to run:
/// `--output`, `-O`, `--pre`, `--exec`, `-f`), not an assignment (`SHELL=./x`), not a
/// path into `.git`, and not an instructions file.
fn plain_operand(word: &str) -> bool {
    !word.starts_with('-')
        && !word.starts_with('+')
        // `~` at the start of a word is the shell's: another user's or this user's home.
        && !word.starts_with('~')
        && !word.contains('=')
        && !word.split('/').any(|part| part == ".git")
        && !is_instructions_file(Path::new(word))
}

/// Whether a prefix grant covers `command`: a prefix still on the allowlist (a grant stored
/// before it left the list covers nothing), then plain operands only.
pub fn prefix_covers(prefix: &str, command: &str) -> bool {
    let Some(words) = plain_words(command) else {
        return false;
    };
    if !PREFIX_ALLOWLIST.contains(&prefix) {
        return false;
    }
    let granted: Vec<&str> = prefix.split(' ').collect();
    words.len() >= granted.len()
        && words[..granted.len()] == granted[..]
        && words[granted.len()..].iter().all(|w| plain_operand(w))
}

/// Whether a git prefix would read a repository that holds a private place (a home folder
/// kept in git, dotfiles and all): `git show HEAD:.ssh/id_rsa` names no file on disk, and a
/// plain `git diff` prints whatever tracked file changed, so no grant covers git there.
fn git_reads_private(call: &GuardCall<'_>, prefix: &str) -> bool {
    prefix.starts_with("git ")
        && call
            .workspace
            .ancestors()
            .find(|d| d.join(".git").exists())
            .is_some_and(|root| {
                call.protected.held_by(root).is_some() || call.protected.place_of(root).is_some()
            })
}

/// Whether a granted program reads more than its words name: `rg PATTERN` with no path
/// searches the whole workspace (so a workspace holding a private place, a credentials file
/// of the project, is the user's decision again), and `diff` given a folder opens, following
/// links, every file the two sides share by name (a link inside it could lead anywhere).
fn reads_beyond_its_words(call: &GuardCall<'_>, prefix: &str, command: &str) -> bool {
    let words = plain_words(command).unwrap_or_default();
    let operands = &words[words.len().min(1)..];
    match prefix {
        "rg" if operands.len() <= 1 => {
            call.protected.held_by(call.workspace).is_some()
                || call.protected.place_of(call.workspace).is_some()
        }
        "diff" => operands
            .iter()
            .any(|w| read_target(call.workspace, w).is_some_and(|t| t.is_dir())),
        _ => false,
    }
}

pub use crate::store::{Grant, GrantKind};

/// Whether a grant covers this call.
fn covers(grant: &Grant, call: &GuardCall<'_>, shell: bool, command: &str) -> bool {
    grant.tool == call.tool.name()
        && match (grant.kind, shell) {
            // A tool whose grants are narrower than the tool (a web fetch's host) is
            // covered only by a grant of the same scope.
            (GrantKind::Tool, false) => call
                .tool
                .grant_scope(call.arguments)
                .is_none_or(|scope| grant.pattern == scope),
            (GrantKind::Exact, true) => command == grant.pattern,
            // A granted `cat` or `rg` reads what its operands name, unsandboxed: an
            // operand leading into a private place, or naming a folder that holds one, is
            // the user's decision again.
            (GrantKind::Prefix, true) => {
                prefix_covers(&grant.pattern, command)
                    && !git_reads_private(call, &grant.pattern)
                    && !reads_beyond_its_words(call, &grant.pattern, command)
                    && !plain_words(command).unwrap_or_default().iter().any(|w| {
                        through_process_view(call.workspace, w)
                            || read_target(call.workspace, w).is_some_and(|t| {
                                call.protected.place_of(&t).is_some()
                                    || call.protected.held_by(&t).is_some()
                                    || is_device(&t)
                            })
                    })
            }
            (GrantKind::Tool, true) | (GrantKind::Exact | GrantKind::Prefix, false) => false,
        }
}

/// The grant an answer to a permission question creates, from the question's payload.
pub fn grant_for(answer: &Answer, q: &PermissionQuestion) -> Option<Grant> {
    let tool = q.tool.clone();
    match answer {
        Answer::AllowForSession => Some(Grant {
            tool,
            kind: if q.shell {
                GrantKind::Exact
            } else {
                GrantKind::Tool
            },
            pattern: q.grants.session.clone()?,
        }),
        Answer::AllowPrefix => Some(Grant {
            tool,
            kind: GrantKind::Prefix,
            pattern: q.grants.prefix.clone()?,
        }),
        Answer::AllowOnce
        | Answer::Deny { .. }
        | Answer::Approve { .. }
        | Answer::Defer
        | Answer::Revise { .. }
        | Answer::Reject
        | Answer::Withdraw
        | Answer::Accept { .. }
        | Answer::Decline
        | Answer::Cancel => None,
    }
}

/// The paths a file tool call writes (several for a patch), as the model named them.
fn written_paths(call: &GuardCall<'_>) -> Vec<String> {
    call.tool.written_paths(call.arguments)
}

pub(crate) use crate::tools::fs_policy::{in_git_dir, is_instructions_file};

/// The permission-mode guard: writes and shell commands ask, are allowed or refused
/// according to the session's permission mode, the user's grants and the extensions' rules.
#[derive(Default)]
pub struct PermissionGuard {
    rules: Vec<Arc<dyn PermissionRule>>,
}

impl PermissionGuard {
    pub fn new(rules: Vec<Arc<dyn PermissionRule>>) -> PermissionGuard {
        PermissionGuard { rules }
    }
}

impl ToolGuard for PermissionGuard {
    fn name(&self) -> &'static str {
        "permission"
    }

    fn before_tool_call(&self, call: &GuardCall<'_>) -> GuardDecision {
        let tool = call.tool;
        let scope = scope_of(&self.rules, call.session);
        // A private read and the rules together: the strictest wins, so a rule refusing the
        // tool holds even where `auto` would let the read go by.
        let private = private_read(call, scope);
        let verdicts = private
            .into_iter()
            .chain(self.rules.iter().filter_map(|r| r.decide(call)));
        if let Some(decision) = strictest(verdicts) {
            return decision;
        }
        // Another actor gets only what a rule gives it; a subagent is held to the session's
        // own mode and grants, like its parent (whatever it would ask, nobody answers).
        if !call.actor.under_session_policy() {
            return GuardDecision::Deny(format!(
                "`{}` is not available to this caller: no rule allows it.",
                tool.name()
            ));
        }
        let mode = call.session.permission_mode;
        // A tool that reaches the network itself: judged like an external one that writes,
        // whatever else it declares (what it sends leaves the machine).
        if tool.effects().network {
            return outside_call(call, scope, Outside::Network);
        }
        if tool.effects().external {
            if !tool.effects().writes {
                return GuardDecision::Allow;
            }
            return outside_call(call, scope, Outside::Server);
        }
        let shell = tool.effects().processes;
        if !shell && !tool.effects().writes {
            return GuardDecision::Allow;
        }
        let raw = if shell {
            Vec::new()
        } else {
            written_paths(call)
        };
        let mut targets: Vec<PathBuf> = Vec::with_capacity(raw.len());
        for p in &raw {
            match resolve_target(call.workspace, p) {
                Ok(t) => targets.push(t),
                // The tool resolves the same way and would refuse it: refused here, before
                // anyone is asked.
                Err(e) => return GuardDecision::Deny(format!("{}: {e}", tool.name())),
            }
        }
        // A patch that gives another file a private file's text copies what is kept from the
        // model: refused, whatever the answer would be.
        if tool.name() == "apply_patch"
            && let Some(patch) = call.arguments.get("patch").and_then(Value::as_str)
        {
            for (old, new) in crate::tools::patch_copies(patch) {
                if resolve_target(call.workspace, &old)
                    .is_ok_and(|t| call.protected.place_of(&t).is_some())
                {
                    return GuardDecision::Deny(crate::tools::copy_refused(
                        &escape_line(&old),
                        &escape_line(&new),
                    ));
                }
            }
        }
        // The tools write only inside the workspace and the session's artifacts: a call
        // aimed elsewhere is refused here, rather than asked about and refused later.
        if let Some(t) = targets
            .iter()
            .find(|t| !t.starts_with(call.workspace) && !t.starts_with(call.artifacts))
        {
            return GuardDecision::Deny(format!(
                "`{}` resolves to {}, outside the workspace ({}) and the session artifacts folder; files there are never written",
                tool.name(),
                escape_line(&t.display().to_string()),
                escape_line(&call.workspace.display().to_string())
            ));
        }
        // Written only on the user's word, never under a grant: `.git/` and instruction files,
        // by the name the call gives (an AGENTS.md that links elsewhere is still one) or by
        // where it leads; git's own settings; and private places.
        let touches_git = raw.iter().any(|p| is_instructions_file(Path::new(p)))
            || targets.iter().any(|t| {
                in_git_dir(t)
                    || is_instructions_file(t)
                    || call.protected.is_git_settings(t)
                    || call.protected.place_of(t).is_some()
            });
        // A file an extension protects (a goal's checks and CI files, G-52): asked about in
        // every mode, `auto` included, and no grant covers it.
        // Judged where the write lands and by the name it gives (a link named like a
        // protected file is one, wherever it leads).
        let named: Vec<PathBuf> = raw.iter().map(|p| call.workspace.join(p)).collect();
        let guarded = targets
            .iter()
            .chain(&named)
            .find_map(|t| self.rules.iter().find_map(|r| r.protects(call, t)));
        let touches_git = touches_git || guarded.is_some();
        // A file an extension's rule lets go (the plan file in plan mode), when nothing above
        // asks about it.
        if !touches_git
            && !targets.is_empty()
            && self.rules.iter().any(|r| r.allows_write(call, &targets))
        {
            return GuardDecision::Allow;
        }
        let needs_asking = match mode {
            PermissionMode::Auto => guarded.is_some(),
            PermissionMode::AutoEdit => shell || touches_git,
            PermissionMode::Ask => true,
            PermissionMode::ReadOnly => {
                return GuardDecision::Deny(format!(
                    "`{}` is not allowed: the session is in read-only permission mode. Use read-only tools, or ask the user to change the permission mode.",
                    tool.name()
                ));
            }
        };
        if !needs_asking {
            return GuardDecision::Allow;
        }
        if let Some(decision) = permission_answered(
            call,
            "call",
            "Do not retry it; ask or take another approach.",
        ) {
            return decision;
        }
        let command = call
            .arguments
            .get("command")
            .and_then(Value::as_str)
            .unwrap_or("");
        // `.git/` is never covered by a grant: hooks and config there run code later. Nor are
        // instruction files: they steer later sessions.
        if !touches_git && call.grants.iter().any(|g| covers(g, call, shell, command)) {
            return GuardDecision::Allow;
        }
        let mut q = question(call, command, touches_git, scope);
        if let Some(why) = guarded {
            q.summary = format!("{} ({})", q.summary, escape_line(&why));
        }
        GuardDecision::Ask(Box::new(q))
    }
}

/// What takes a call outside what the runtime can check.
#[derive(Clone, Copy)]
enum Outside {
    /// An external tool (an MCP server's) not marked read-only.
    Server,
    /// A tool that sends requests over the network itself.
    Network,
}

/// A call whose effect the runtime cannot check by path: an external tool (an MCP server's)
/// that writes, whose arguments name nothing the runtime can check, or a tool that reaches
/// the network itself. The permission mode alone decides: refused in `read-only`, run in
/// `auto`, asked about in `ask` and `auto-edit` (each call, unless the user allowed that tool
/// for the session).
fn outside_call(call: &GuardCall<'_>, scope: Option<&str>, why: Outside) -> GuardDecision {
    let name = call.tool.name();
    match call.session.permission_mode {
        PermissionMode::Auto => return GuardDecision::Allow,
        PermissionMode::ReadOnly => {
            let what = match why {
                Outside::Server => "it is not marked read-only",
                Outside::Network => "it reaches the network",
            };
            return GuardDecision::Deny(format!(
                "`{}` is not allowed: {what}, and the session is in read-only permission mode. Use read-only tools, or ask the user to change the permission mode.",
                escape_line(name)
            ));
        }
        PermissionMode::Ask | PermissionMode::AutoEdit => {}
    }
    if let Some(decision) = permission_answered(
        call,
        "call",
        "Do not retry it; ask or take another approach.",
    ) {
        return decision;
    }
    if call.grants.iter().any(|g| covers(g, call, false, "")) {
        return GuardDecision::Allow;
    }
    // A web fetch is granted by host: "allow for this session" covers that host only.
    let grant_scope = call.tool.grant_scope(call.arguments);
    let session_text = match &grant_scope {
        Some(scope) => format!(
            "every `{}` call to {} in this session",
            escape_line(name),
            escape_line(scope)
        ),
        None => format!(
            "every `{}` call in this session, with any arguments",
            escape_line(name)
        ),
    };
    // The tool's description is the server's text and stays out of the question: only the
    // name and the arguments, which the front ends show escaped in full.
    GuardDecision::Ask(Box::new(PermissionQuestion {
        tool: name.to_string(),
        shell: false,
        scope: scope.map(str::to_string),
        arguments: call.arguments.clone(),
        summary: match why {
            Outside::Server => format!(
                "{} (a tool server's tool: it acts outside Waymark, with the arguments below)",
                escape_line(name)
            ),
            Outside::Network => format!(
                "{} (it sends a request over the network, with the arguments below)",
                escape_line(name)
            ),
        },
        command: None,
        files: Vec::new(),
        git: false,
        grants: GrantOffer {
            session: Some(grant_scope.unwrap_or_default()),
            session_text: Some(session_text),
            prefix: None,
            prefix_text: None,
        },
        call_id: String::new(),
        call_sha256: String::new(),
    }))
}

/// Of the rules' verdicts, the strictest: a refusal over a question over an allowance (the
/// first of each kind), so no rule lets through what another one refuses or asks about,
/// whatever order the extensions come in.
fn strictest(verdicts: impl Iterator<Item = GuardDecision>) -> Option<GuardDecision> {
    let rank = |d: &GuardDecision| match d {
        GuardDecision::Deny(_) => 2,
        GuardDecision::Ask(_) => 1,
        GuardDecision::Allow => 0,
    };
    let mut best: Option<GuardDecision> = None;
    for v in verdicts {
        if best.as_ref().is_none_or(|b| rank(&v) > rank(b)) {
            best = Some(v);
        }
    }
    best
}

/// Whether a path is something other than a file or a folder: a device (a terminal the
/// user types a password into, the kernel log, a disk), a FIFO or a socket. Reading one is
/// not reading a file, so no prefix grant covers it.
fn is_device(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// Whether `raw`, resolved from the workspace, passes through a view of a process
/// (`/proc`, `/dev/fd`, `/dev/std*`), at any step or through any symlink on the way. Such a
/// path means one thing to the runtime, which checks it, and another to the command that
/// opens it (`/proc/self/cwd` is the runtime's folder here and the workspace there), so no
/// prefix grant covers it. A path with more links than the kernel follows counts too.
fn through_process_view(workspace: &Path, raw: &str) -> bool {
    use std::path::Component;
    let view = |p: &Path| {
        p.starts_with("/proc")
            || p.starts_with("/dev/fd")
            || ["/dev/stdin", "/dev/stdout", "/dev/stderr"]
                .iter()
                .any(|d| p.starts_with(d))
    };
    let mut pending: std::collections::VecDeque<PathBuf> = workspace
        .join(raw)
        .components()
        .map(|c| PathBuf::from(c.as_os_str()))
        .collect();
    let mut at = PathBuf::new();
    let mut links = 0;
    while let Some(part) = pending.pop_front() {
        match part.components().next() {
            Some(Component::RootDir) => at = PathBuf::from("/"),
            Some(Component::ParentDir) => {
                at.pop();
            }
            Some(Component::Normal(name)) => {
                at.push(name);
                if view(&at) {
                    return true;
                }
                if let Ok(to) = std::fs::read_link(&at) {
                    links += 1;
                    if links > 40 {
                        return true;
                    }
                    at.pop();
                    for c in to.components().rev() {
                        pending.push_front(PathBuf::from(c.as_os_str()));
                    }
                }
            }
            _ => {}
        }
    }
    view(&at)
}

/// Where a read of `raw` lands: canonical as far as the path exists (symlinks followed),
/// the rest appended as written.
pub fn read_target(workspace: &Path, raw: &str) -> Option<PathBuf> {
    let joined = workspace.join(raw);
    let mut existing = joined.as_path();
    let mut rest = Vec::new();
    while std::fs::symlink_metadata(existing).is_err() {
        rest.push(existing.file_name()?);
        existing = existing.parent()?;
    }
    let mut target = existing.canonicalize().ok()?;
    target.extend(rest.iter().rev());
    Some(target)
}

/// A read of a private place (a credential store, the data folder, the settings, a hidden
/// file of the home folder; `sandbox::private`), by a tool that reads the `path` it is
/// given: the reviewer is refused; in plan mode, and in every permission mode but `auto`,
/// the user is asked, and no grant covers it. `None` for any other call.
fn private_read(call: &GuardCall<'_>, scope: Option<&str>) -> Option<GuardDecision> {
    // An external tool's `path` is its server's, not a file the runtime could check; a
    // tool that reaches the network is judged as one (its `path` must not turn its question
    // into a question about a read).
    let effects = call.tool.effects();
    if effects.processes || effects.writes || effects.external || effects.network {
        return None;
    }
    let raw = call.arguments.get("path").and_then(Value::as_str)?;
    let target = read_target(call.workspace, raw)?;
    let place = call.protected.place_of(&target)?;
    let what = format!(
        "`{}` is private: it lies in {}, which Waymark keeps from the model (credential stores, its own data and settings, hidden files of the home folder)",
        escape_line(raw),
        escape_line(&place.display().to_string())
    );
    if call.actor != CallActor::Main {
        return Some(GuardDecision::Deny(format!(
            "{what}; only the session's agent may read it, on the user's word."
        )));
    }
    // A scope (plan mode) makes even `auto` ask.
    if call.session.permission_mode == PermissionMode::Auto && scope.is_none() {
        return Some(GuardDecision::Allow);
    }
    if let Some(decision) = permission_answered(call, "read", "Do not try to read it another way.")
    {
        return Some(decision);
    }
    Some(GuardDecision::Ask(Box::new(PermissionQuestion {
        tool: call.tool.name().to_string(),
        shell: false,
        scope: scope.map(str::to_string),
        arguments: call.arguments.clone(),
        summary: format!("{} a private place: {what}", call.tool.name()),
        command: None,
        files: Vec::new(),
        git: true,
        grants: GrantOffer::default(),
        call_id: String::new(),
        call_sha256: String::new(),
    })))
}

/// Whether the guard let this call read a private place (the user answered, or `auto`
/// outside any scope): the tool then reads it instead of refusing.
pub(crate) fn private_read_allowed(call: &GuardCall<'_>, scope: Option<&str>) -> bool {
    matches!(private_read(call, scope), Some(GuardDecision::Allow))
}

/// The permission question: what the call does (escaped, whole), and exactly what each
/// answer grants.
pub fn question(
    call: &GuardCall<'_>,
    command: &str,
    touches_git: bool,
    scope: Option<&str>,
) -> PermissionQuestion {
    let tool = call.tool.name();
    // A grant from a question asked in a scope (plan mode) ends with the scope, even when the
    // answer comes after it ended.
    if call.tool.effects().processes {
        let prefix = command_prefix(command);
        let mut q = shell_question(call, command);
        q.scope = scope.map(str::to_string);
        q.grants = GrantOffer {
            session: Some(command.to_string()),
            session_text: Some(format!(
                "this exact command line, for the rest of the session: `{}`",
                escape_line(command)
            )),
            prefix_text: prefix.as_ref().map(|p| format!("`{p}` followed by plain arguments only (no options, assignments, `.git` paths, chaining or redirection; anything else asks again), for the rest of the session")),
            prefix,
        };
        return q;
    }
    let mut q = PermissionQuestion {
        tool: tool.to_string(),
        shell: false,
        scope: scope.map(str::to_string),
        arguments: call.arguments.clone(),
        summary: String::new(),
        command: None,
        files: Vec::new(),
        git: touches_git,
        grants: GrantOffer::default(),
        call_id: String::new(),
        call_sha256: String::new(),
    };
    q.files = crate::preview::file_changes(call);
    let paths: Vec<&str> = q.files.iter().map(|f| f.path.as_str()).collect();
    q.summary = match paths.as_slice() {
        [] => format!("{tool} (no file named)"),
        [one] => format!("{tool} {one}"),
        many => format!("{tool} {} files: {}", many.len(), many.join(", ")),
    };
    if !touches_git {
        q.grants.session = Some(String::new());
        q.grants.session_text = Some(format!(
            "every `{tool}` call in this session, on any file outside `.git/` other than AGENTS.md and CLAUDE.md"
        ));
    }
    q
}

#[cfg(test)]
#[path = "permission_tests.rs"]
mod tests;
