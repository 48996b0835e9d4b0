//! Settings: one JSON file, the same for the desktop app and the CLI. Every field has a
//! default; [`Config::from_json`] rejects unknown keys and out-of-range values naming the key.

use crate::error::ConfigError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use waymark_protocol::{PermissionMode, RouteKind};

/// The whole settings file.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Default model spec (`openai:<model>`, `anthropic:<model>`, `ollama:<model>`,
    /// `scripted:<path>`, or `<provider name>:<model>` / `<provider name>`).
    pub model: Option<String>,
    /// Permission mode of new sessions.
    pub permission_mode: PermissionMode,
    pub turn: TurnConfig,
    /// Named providers, referenced by model specs.
    pub providers: BTreeMap<String, ProviderConfig>,
    pub beta: BetaFlags,
    pub goal: GoalConfig,
    pub plan: PlanConfig,
    pub shell: ShellConfig,
    pub sandbox: SandboxConfig,
    /// Model Context Protocol servers whose tools the agent may use, by name.
    pub mcp_servers: BTreeMap<String, crate::mcp::McpServerConfig>,
    pub mcp: crate::mcp::McpConfig,
    pub checkpoints: CheckpointConfig,
    /// Prices of models by pattern (`openai:gpt-4.1*`, `kimi:*`), in USD per million
    /// tokens; they win over the built-in ones. A model with no price has an unknown cost.
    pub pricing: BTreeMap<String, crate::pricing::Price>,
    pub limits: LimitsConfig,
    pub notifications: NotificationsConfig,
    /// The `web` section: what the `web_fetch` tool may reach.
    pub web: WebConfig,
    /// Commands run on session events, in Claude Code's shape (event → matcher groups;
    /// [`crate::hooks`]), with `import_claude` beside the events.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub hooks: BTreeMap<String, serde_json::Value>,
    /// The sections extensions own, by extension name (`extensions.<name>`). Each is checked
    /// by its extension when the runtime takes the settings; a name no extension has is
    /// refused. New features keep their settings here, not in a field of this struct.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub extensions: BTreeMap<String, serde_json::Value>,
}

/// The `notifications` section: which goal and plan events alert the user (a toast while the
/// window has the focus, else a desktop notification), each on or off (G-44). Alerts follow
/// the goal's state, not each turn.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(default, deny_unknown_fields)]
pub struct NotificationsConfig {
    /// The agent reports the goal blocked on the user.
    pub goal_blocked: bool,
    /// A plan waits for approval (while the window is in the background).
    pub plan_awaiting_approval: bool,
    /// The goal's budget (tokens, turns, time or cost) is used up.
    pub budget_spent: bool,
    /// The goal is complete.
    pub goal_complete: bool,
    /// The goal paused by itself: no progress (the breaker), an error, a declined reply.
    pub goal_paused: bool,
    /// The day's spending cap is reached.
    pub spending_cap: bool,
    /// A provider's usage limit stopped the goal for good (a quota, no resumes left).
    pub usage_limit_stop: bool,
    /// A provider's usage limit began a wait the goal resumes from by itself.
    pub usage_limit_wait: bool,
    /// Each turn finished (while the window is in the background).
    pub turn_finished: bool,
    /// A goal woke from the agent's wait and carries on.
    pub goal_woke: bool,
}

impl Default for NotificationsConfig {
    fn default() -> Self {
        NotificationsConfig {
            goal_blocked: true,
            plan_awaiting_approval: true,
            budget_spent: true,
            goal_complete: true,
            goal_paused: true,
            spending_cap: true,
            usage_limit_stop: true,
            usage_limit_wait: false,
            turn_finished: false,
            goal_woke: true,
        }
    }
}

/// The `web` section: what the `web_fetch` tool may reach. Loopback, private, link-local and
/// metadata addresses are refused unless listed here.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(default, deny_unknown_fields)]
pub struct WebConfig {
    /// `host:port` pairs `web_fetch` may reach even though they are on this machine or a
    /// private network (`127.0.0.1:8080`, `intranet.local:443`). Exactly those, nothing more.
    pub allow_private: Vec<String>,
}

/// The `limits` section: what this machine may spend.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(default, deny_unknown_fields)]
pub struct LimitsConfig {
    /// The most all sessions on this machine may spend on model calls in one local day, in
    /// USD. Reaching it pauses every goal and starts no model call until the next day (or
    /// a higher cap).
    pub daily_cost_usd: Option<f64>,
}

/// The `checkpoints` section: the workspace snapshots rewind goes back to.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(default, deny_unknown_fields)]
pub struct CheckpointConfig {
    /// Take checkpoints (before each turn and each tool call that may write).
    pub enabled: bool,
    /// Files larger than this many MB are left out of checkpoints (and noted).
    pub max_file_mb: u64,
    /// A workspace with more entries than this to keep (files, links and folders, after the
    /// ignore files) is not checkpointed: the session says so once and goes on.
    pub max_files: u64,
    /// A workspace with more than this many MB of files to keep is not checkpointed either
    /// (a first checkpoint copies all of it into the session's store).
    pub max_total_mb: u64,
    /// Checkpoints older than this many days are pruned.
    pub keep_days: u32,
}

impl Default for CheckpointConfig {
    fn default() -> Self {
        CheckpointConfig {
            enabled: true,
            max_file_mb: 10,
            max_files: 100_000,
            max_total_mb: 2048,
            keep_days: 30,
        }
    }
}

/// The `sandbox` section: what the sandboxed shell (plan mode, the goal's reviewer) may read
/// beyond the workspace, system folders and toolchains, and the temp space it may fill.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(default, deny_unknown_fields)]
pub struct SandboxConfig {
    /// More folders or files it may read: absolute paths, or `~/…` for the home folder.
    /// One that names a credential store (`~/.aws`) makes that store readable.
    pub read_allow: Vec<String>,
    /// The most a sandboxed command may keep in its temp folder (`TMPDIR`, the one place it
    /// writes), in MB: past it the command is stopped. The folder is emptied when each
    /// command ends.
    pub temp_max_mb: u64,
    /// The most one scratch layer may hold, in MB: what the scratch shell (plan mode, the
    /// goal's reviewer and checks) wrote over the workspace, builds included. Past it the
    /// command is stopped and the layer emptied.
    pub scratch_max_mb: u64,
    /// Whether plan mode's shell and the goal's reviewer run in a scratch layer too (builds
    /// and tests run; the workspace stays as it was); off, theirs is the read-only shell.
    /// A goal's checks always run in one.
    pub scratch_shell: bool,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            read_allow: Vec::new(),
            temp_max_mb: 512,
            scratch_max_mb: 8192,
            scratch_shell: true,
        }
    }
}

/// Whether the sandboxed shell (plan mode, the verifier) may use the network.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum ShellNetwork {
    /// No sockets but local pipes: no TCP/UDP, no unix-socket daemons.
    #[default]
    Deny,
    /// Internet sockets (TCP/UDP over IPv4/IPv6) are allowed; unix sockets stay closed.
    Allow,
}

/// The `plan` section.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(default, deny_unknown_fields)]
pub struct PlanConfig {
    /// Network access of sandboxed shell commands (default `deny`).
    pub shell_network: ShellNetwork,
}

/// The `shell` section: how tool processes are started.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(default, deny_unknown_fields)]
pub struct ShellConfig {
    pub env: ShellEnvConfig,
}

/// Which environment variables tool processes get. Secrets (names matching `*KEY*`,
/// `*SECRET*`, `*TOKEN*`, `*PASSWORD*`, `*PASSWD*`, `*PASSPHRASE*`, `*CREDENTIAL*`, `*_PASS`,
/// `*_PWD`, `*_PAT`, `*_DSN`, and the provider key variables)
/// are removed; `include` lets named ones through again (provider keys never), `exclude`
/// removes more, `set` sets values. Names may use `*` wildcards.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(default, deny_unknown_fields)]
pub struct ShellEnvConfig {
    pub include: Vec<String>,
    pub exclude: Vec<String>,
    pub set: BTreeMap<String, String>,
}

/// How a goal's completion claim is checked (G-16 … G-19).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum Verification {
    None,
    Subagent,
    Evaluator,
}

/// The `goal` section (G-10).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(default, deny_unknown_fields)]
pub struct GoalConfig {
    /// Unset: decided by the model route (own key → none, managed → subagent).
    pub verification: Option<Verification>,
    /// The model the `evaluator` check runs on (`provider:model`), a smaller one than the
    /// session's, say; unset: the session's model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluator_model: Option<String>,
    pub budget: GoalBudgetConfig,
    pub breaker: BreakerConfig,
    pub verifier: VerifierConfig,
    pub usage_limit: UsageLimitConfig,
    /// The longest one wait of the agent's (the `wait` tool) lasts, in seconds; past it the
    /// goal pauses. Unset: 86 400 (24 h).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_wait: Option<u64>,
    /// Commands that define done for goals set in this folder without checks of their own
    /// (G-49): `cargo test`, `pytest tests/api`, `npm test`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<String>,
    /// The longest one check runs, in seconds, before it is killed with everything it
    /// started. Unset: 600.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_timeout: Option<u64>,
    /// Whether checks may use the network (off: no sockets but local pipes).
    #[serde(default)]
    pub check_network: ShellNetwork,
    /// Run the checks every this many goal turns as well, for the pass counts on the gauge
    /// (G-49). Unset or 0: only at the goal's start and at completion claims.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_every_turns: Option<u32>,
    /// What a goal's worker may not change without the user (G-52), as globs relative to
    /// the workspace, beside the defaults (CI files, and the scripts a check names). While a
    /// goal runs, a file tool's write there asks in every permission mode, `auto` included.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub protect: Vec<String>,
}

impl GoalConfig {
    /// The longest check when `check_timeout` is unset.
    pub const DEFAULT_CHECK_TIMEOUT: u64 = 600;

    /// `check_timeout` in seconds, its default filled in.
    pub fn check_timeout_seconds(&self) -> u64 {
        self.check_timeout.unwrap_or(Self::DEFAULT_CHECK_TIMEOUT)
    }

    /// The longest wait when `max_wait` is unset.
    pub const DEFAULT_MAX_WAIT: u64 = 24 * 3600;

    /// `max_wait` in seconds, its default filled in.
    pub fn max_wait_seconds(&self) -> u64 {
        self.max_wait.unwrap_or(Self::DEFAULT_MAX_WAIT)
    }
}

/// What happens when a provider's usage limit stops a goal.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(default, deny_unknown_fields)]
pub struct UsageLimitConfig {
    /// How many times in a row the runtime resumes a rate-limited goal by itself when the
    /// limit resets (0: never). A turn that gets through, or the user resuming, starts the
    /// count again. Quota and billing limits never resume by themselves.
    pub auto_resumes: u32,
}

impl Default for UsageLimitConfig {
    fn default() -> Self {
        UsageLimitConfig { auto_resumes: 3 }
    }
}

/// Default budgets of new goals and the grace steps after a budget runs out.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(default, deny_unknown_fields)]
pub struct GoalBudgetConfig {
    pub default_tokens: Option<u64>,
    pub default_main_turns: Option<u64>,
    pub default_active_seconds: Option<u64>,
    /// Tool calls answered "stop and summarize" before tools are disabled.
    pub grace_steps: u32,
}

impl Default for GoalBudgetConfig {
    fn default() -> Self {
        GoalBudgetConfig {
            default_tokens: None,
            default_main_turns: None,
            default_active_seconds: None,
            grace_steps: 1,
        }
    }
}

/// The no-progress breaker.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(default, deny_unknown_fields)]
pub struct BreakerConfig {
    pub repeated_reply_limit: u32,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        BreakerConfig {
            repeated_reply_limit: 3,
        }
    }
}

/// Limits of the verifier.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(default, deny_unknown_fields)]
pub struct VerifierConfig {
    pub repeated_not_met_limit: u32,
}

impl Default for VerifierConfig {
    fn default() -> Self {
        VerifierConfig {
            repeated_not_met_limit: 5,
        }
    }
}

/// Limits of one turn and its tools.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(default, deny_unknown_fields)]
pub struct TurnConfig {
    /// Model calls per turn before it ends as `step_capped`.
    pub max_steps: u32,
    /// Bytes of one tool result kept for the model; the rest is cut with a note.
    pub tool_output_limit: u64,
    /// Default timeout of a `bash` call.
    pub bash_timeout_ms: u64,
    /// Longest timeout a model may ask for with `timeout_ms`.
    pub max_bash_timeout_ms: u64,
    /// Context budget in tokens; when unset, the provider's context window is used.
    pub context_tokens: Option<u64>,
    /// Compact the conversation when the next request would pass this share of the context
    /// window (percent).
    pub compact_at_percent: u32,
    /// The newest history kept word for word by a compaction, as a share of the window
    /// (percent); at least 20 points below `compact_at_percent`, so a compaction makes room.
    pub compact_keep_percent: u32,
}

impl Default for TurnConfig {
    fn default() -> Self {
        TurnConfig {
            max_steps: 50,
            tool_output_limit: 30_000,
            bash_timeout_ms: 120_000,
            max_bash_timeout_ms: 600_000,
            context_tokens: None,
            compact_at_percent: 85,
            compact_keep_percent: 30,
        }
    }
}

/// Wire format a provider speaks.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    Openai,
    Anthropic,
}

/// A named provider from the settings file.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    pub base_url: String,
    /// Name of the environment variable holding the API key (never the key itself).
    #[serde(default)]
    pub api_key_env: Option<String>,
    #[serde(default)]
    pub route: RouteKind,
    /// Model used when the spec names only the provider.
    #[serde(default)]
    pub model: Option<String>,
    /// Context window of the model in tokens.
    #[serde(default)]
    pub context_tokens: Option<u64>,
    /// Whether its models take images (a message with images to one that does not is refused
    /// before any call).
    #[serde(default)]
    pub images: bool,
}

/// Feature flags.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(default, deny_unknown_fields)]
pub struct BetaFlags {
    pub desktop_plan_mode: bool,
    pub desktop_plan_mode_agent_entry: bool,
    pub thread_goal: bool,
}

impl Default for BetaFlags {
    fn default() -> Self {
        BetaFlags {
            desktop_plan_mode: true,
            desktop_plan_mode_agent_entry: false,
            thread_goal: true,
        }
    }
}

/// Why `entry` is not a `host:port` pair (`127.0.0.1:8080`, `[::1]:3000`, `wiki.lan:443`).
fn invalid_host_port(entry: &str) -> Option<String> {
    let shown: String = entry.chars().take(100).collect();
    let bad = || {
        Some(format!(
            "must be host:port, like 127.0.0.1:8080 or [::1]:3000 (got `{shown}`)"
        ))
    };
    let Some((host, port)) = entry.rsplit_once(':') else {
        return bad();
    };
    if port.parse::<u16>().is_err() || host.is_empty() {
        return bad();
    }
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let plain = host
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':'));
    if !plain {
        return bad();
    }
    None
}

impl Config {
    /// Parses and validates a settings file.
    pub fn from_json(text: &str) -> Result<Config, ConfigError> {
        let de = &mut serde_json::Deserializer::from_str(text);
        let config: Config = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            let key = if path == "." {
                "(file)".to_string()
            } else {
                path
            };
            ConfigError::new(key, e.into_inner().to_string())
        })?;
        config.validate()?;
        Ok(config)
    }

    /// Checks value ranges; the error names the first offending key.
    /// Whether `spec` names a model this configuration can reach: a built-in provider with
    /// a model (`openai:<model>`, `anthropic:<model>`, `ollama:<model>`), a script
    /// (`scripted:<path>`), or a provider named in `providers`. Keys and servers are not
    /// checked here (the model call says what is missing).
    pub fn check_model(&self, spec: &str) -> Result<(), ConfigError> {
        let (kind, rest) = spec.split_once(':').unwrap_or((spec, ""));
        let ok = match kind {
            "scripted" => !rest.trim().is_empty(),
            name if crate::catalog::builtin(name).is_some() => !rest.trim().is_empty(),
            name => self
                .providers
                .get(name)
                .is_some_and(|p| !rest.trim().is_empty() || p.model.is_some()),
        };
        if ok {
            return Ok(());
        }
        let known: Vec<&str> = self.providers.keys().map(String::as_str).collect();
        Err(ConfigError::new(
            "model",
            format!(
                "`{}` names no model Waymark knows: use openai:<model>, anthropic:<model>, ollama:<model>, scripted:<path>{}",
                spec.chars().take(200).collect::<String>(),
                if known.is_empty() {
                    String::new()
                } else {
                    format!(", or one of your providers: {}", known.join(", "))
                }
            ),
        ))
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        let t = &self.turn;
        range("turn.max_steps", u64::from(t.max_steps), 1, 1000)?;
        range(
            "turn.tool_output_limit",
            t.tool_output_limit,
            1024,
            10_000_000,
        )?;
        range("turn.bash_timeout_ms", t.bash_timeout_ms, 100, 3_600_000)?;
        range(
            "turn.max_bash_timeout_ms",
            t.max_bash_timeout_ms,
            t.bash_timeout_ms,
            86_400_000,
        )?;
        for p in &self.sandbox.read_allow {
            if !(p.starts_with('/') || p.starts_with("~/")) || p.contains('\0') {
                return Err(ConfigError::new(
                    "sandbox.read_allow",
                    format!("`{p}` is not an absolute path (start it with `/` or `~/`)"),
                ));
            }
        }
        range(
            "sandbox.temp_max_mb",
            self.sandbox.temp_max_mb,
            1,
            1_048_576,
        )?;
        range(
            "sandbox.scratch_max_mb",
            self.sandbox.scratch_max_mb,
            1,
            16_777_216,
        )?;
        let env = &self.shell.env;
        for (key, list) in [
            ("shell.env.include", &env.include),
            ("shell.env.exclude", &env.exclude),
        ] {
            for p in list {
                if !var_name(p, true) {
                    return Err(ConfigError::new(
                        key,
                        format!(
                            "`{p}` is not a variable name (letters, digits, `_`, and `*` as a wildcard)"
                        ),
                    ));
                }
            }
        }
        for name in env.set.keys() {
            if !var_name(name, false) {
                return Err(ConfigError::new(
                    format!("shell.env.set.{name}"),
                    "is not a variable name (letters, digits and `_`)",
                ));
            }
        }
        if let Some(c) = t.context_tokens {
            range("turn.context_tokens", c, 1000, 10_000_000)?;
        }
        range(
            "checkpoints.max_file_mb",
            self.checkpoints.max_file_mb,
            1,
            4096,
        )?;
        range(
            "checkpoints.max_files",
            self.checkpoints.max_files,
            100,
            10_000_000,
        )?;
        range(
            "checkpoints.max_total_mb",
            self.checkpoints.max_total_mb,
            1,
            1_048_576,
        )?;
        range(
            "checkpoints.keep_days",
            u64::from(self.checkpoints.keep_days),
            1,
            3650,
        )?;
        range(
            "turn.compact_at_percent",
            u64::from(t.compact_at_percent),
            50,
            95,
        )?;
        range(
            "turn.compact_keep_percent",
            u64::from(t.compact_keep_percent),
            5,
            u64::from(t.compact_at_percent.saturating_sub(20)),
        )?;
        let g = &self.goal;
        range(
            "goal.budget.grace_steps",
            u64::from(g.budget.grace_steps),
            0,
            3,
        )?;
        range(
            "goal.breaker.repeated_reply_limit",
            u64::from(g.breaker.repeated_reply_limit),
            2,
            100,
        )?;
        range(
            "goal.verifier.repeated_not_met_limit",
            u64::from(g.verifier.repeated_not_met_limit),
            1,
            100,
        )?;
        range(
            "goal.usage_limit.auto_resumes",
            u64::from(g.usage_limit.auto_resumes),
            0,
            100,
        )?;
        if let Some(t) = g.budget.default_tokens {
            range("goal.budget.default_tokens", t, 1, 1_000_000_000_000)?;
        }
        if let Some(t) = g.budget.default_main_turns {
            range("goal.budget.default_main_turns", t, 1, 1_000_000)?;
        }
        if let Some(t) = g.max_wait {
            range("goal.max_wait", t, 60, 7 * 24 * 3600)?;
        }
        if let Some(t) = g.check_timeout {
            range("goal.check_timeout", t, 1, 24 * 3600)?;
        }
        if let Some(n) = g.check_every_turns {
            range("goal.check_every_turns", u64::from(n), 0, 10_000)?;
        }
        if g.protect.len() > 200 {
            return Err(ConfigError::new("goal.protect", "at most 200 globs"));
        }
        for p in &g.protect {
            if p.trim().is_empty() || p.len() > 500 || p.contains(['\n', '\0']) {
                return Err(ConfigError::new(
                    "goal.protect",
                    format!(
                        "`{}` is not a usable glob: empty, over 500 characters, or a line break",
                        p.escape_debug()
                    ),
                ));
            }
            if let Err(e) = globset::GlobBuilder::new(p.trim_start_matches("./"))
                .literal_separator(true)
                .build()
            {
                return Err(ConfigError::new(
                    "goal.protect",
                    format!("`{}` is not a glob: {e}", p.escape_debug()),
                ));
            }
        }
        if g.checks.len() > crate::budget::MAX_CHECKS {
            return Err(ConfigError::new(
                "goal.checks",
                format!("at most {} checks", crate::budget::MAX_CHECKS),
            ));
        }
        for c in &g.checks {
            crate::budget::check_command(c)
                .map_err(|e| ConfigError::new("goal.checks", e.to_string()))?;
        }
        if let Some(t) = g.budget.default_active_seconds {
            range("goal.budget.default_active_seconds", t, 1, 365 * 24 * 3600)?;
        }
        if let Some(m) = &self.model
            && m.trim().is_empty()
        {
            return Err(ConfigError::new("model", "must not be empty"));
        }
        if let Some(m) = &g.evaluator_model
            && (m
                .trim()
                .split_once(':')
                .is_none_or(|(p, n)| p.is_empty() || n.is_empty())
                || m.chars().count() > 200
                || m.chars()
                    .any(|c| c.is_whitespace() || waymark_protocol::display::needs_escape(c)))
        {
            return Err(ConfigError::new(
                "goal.evaluator_model",
                format!(
                    "must be a model spec such as openai:gpt-4.1-mini (got `{}`)",
                    m.escape_debug()
                ),
            ));
        }
        for (name, p) in &self.providers {
            let key = |k: &str| format!("providers.{name}.{k}");
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            {
                return Err(ConfigError::new(
                    format!("providers.{name}"),
                    "provider names use letters, digits, `-` and `_`",
                ));
            }
            if !(p.base_url.starts_with("http://") || p.base_url.starts_with("https://")) {
                return Err(ConfigError::new(
                    key("base_url"),
                    format!("must start with http:// or https:// (got `{}`)", p.base_url),
                ));
            }
            if let Some(env) = &p.api_key_env
                && (env.is_empty() || env.contains('='))
            {
                return Err(ConfigError::new(
                    key("api_key_env"),
                    "must be the name of an environment variable",
                ));
            }
            if let Some(c) = p.context_tokens {
                range(&key("context_tokens"), c, 1000, 10_000_000)?;
            }
        }
        if let Some(cap) = self.limits.daily_cost_usd
            && waymark_protocol::cost::micros(cap).is_none()
        {
            return Err(ConfigError::new(
                "limits.daily_cost_usd",
                format!(
                    "must be a number of USD from 0 to {} (got {cap}); leave it out for no cap",
                    waymark_protocol::cost::MAX_COST_USD
                ),
            ));
        }
        crate::hooks::parse_strict(&self.hooks)?;
        for (i, entry) in self.web.allow_private.iter().enumerate() {
            if let Some(why) = invalid_host_port(entry) {
                return Err(ConfigError::new(format!("web.allow_private[{i}]"), why));
            }
        }
        for (pattern, price) in &self.pricing {
            if let Some(why) = crate::pricing::invalid_pattern(pattern) {
                return Err(ConfigError::new(format!("pricing.{pattern}"), why));
            }
            if let Some((field, why)) = price.invalid() {
                return Err(ConfigError::new(format!("pricing.{pattern}.{field}"), why));
            }
        }
        crate::mcp::validate_servers(&self.mcp_servers)?;
        range(
            "mcp.tool_search_percent",
            u64::from(self.mcp.tool_search_percent),
            1,
            100,
        )?;
        range(
            "mcp.first_request_wait_ms",
            self.mcp.first_request_wait_ms,
            0,
            600_000,
        )?;
        Ok(())
    }
}

/// A variable name (optionally with `*` wildcards).
fn var_name(s: &str, wildcards: bool) -> bool {
    !s.is_empty()
        && s.len() <= 128
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || (wildcards && c == '*'))
}

fn range(key: &str, value: u64, min: u64, max: u64) -> Result<(), ConfigError> {
    if value < min || value > max {
        return Err(ConfigError::new(
            key,
            format!("must be between {min} and {max} (got {value})"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn empty_file_gives_defaults() {
        let c = Config::from_json("{}").unwrap();
        assert_eq!(c, Config::default());
        assert_eq!(c.turn.max_steps, 50);
        assert!(c.beta.desktop_plan_mode);
        assert!(!c.beta.desktop_plan_mode_agent_entry);
        assert!(c.beta.thread_goal);
    }

    #[test]
    fn g_43_the_evaluator_model_is_a_model_spec() {
        let ok =
            Config::from_json(r#"{"goal": {"evaluator_model": "openai:gpt-4.1-mini"}}"#).unwrap();
        assert_eq!(
            ok.goal.evaluator_model.as_deref(),
            Some("openai:gpt-4.1-mini")
        );
        for bad in [
            "",
            "gpt-4.1-mini",
            ":x",
            "openai:",
            "openai:gpt 4",
            r"openai:\u0007x",
            // Invisible ones too (a bidi override, a zero-width space), as a switch refuses.
            r"openai:gpt\u202e4",
            r"openai:gpt\u200b4",
        ] {
            let json = format!(r#"{{"goal": {{"evaluator_model": "{bad}"}}}}"#);
            let e = Config::from_json(&json).unwrap_err();
            assert_eq!(e.key, "goal.evaluator_model", "{bad}: {e}");
            assert!(e.message.contains("model spec"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_private_web_entry_must_be_host_and_port() {
        for bad in [
            "127.0.0.1",
            "localhost:99999",
            ":80",
            "a b:80",
            "http://x:80",
            "*:80",
        ] {
            let json = format!(r#"{{"web": {{"allow_private": ["127.0.0.1:1", "{bad}"]}}}}"#);
            let e = Config::from_json(&json).unwrap_err();
            assert_eq!(e.key, "web.allow_private[1]", "{bad}: {e}");
            assert!(e.message.contains("host:port"), "{bad}: {e}");
        }
        let ok = Config::from_json(
            r#"{"web": {"allow_private": ["127.0.0.1:8080", "[::1]:3000", "wiki.lan:443"]}}"#,
        )
        .unwrap();
        assert_eq!(ok.web.allow_private.len(), 3);
    }

    #[test]
    fn wrong_type_names_the_key() {
        let e = Config::from_json(r#"{"turn": {"max_steps": "many"}}"#).unwrap_err();
        assert_eq!(e.key, "turn.max_steps");
    }

    #[test]
    fn a_protect_glob_that_does_not_parse_is_refused_when_the_settings_load() {
        let e =
            Config::from_json(r#"{"goal": {"protect": ["fixtures/**", "src/["]}}"#).unwrap_err();
        assert_eq!(e.key, "goal.protect");
        assert!(e.message.contains("`src/[` is not a glob"), "{e}");
        assert!(Config::from_json(r#"{"goal": {"protect": ["./ci/*.sh", "*.snap"]}}"#).is_ok());
    }

    #[test]
    fn out_of_range_names_the_key() {
        let e = Config::from_json(r#"{"turn": {"max_steps": 0}}"#).unwrap_err();
        assert_eq!(e.key, "turn.max_steps");
        assert!(e.message.contains("between 1 and 1000"), "{e}");
        for (json, key) in [
            (
                r#"{"checkpoints": {"max_files": 5}}"#,
                "checkpoints.max_files",
            ),
            (
                r#"{"checkpoints": {"max_total_mb": 0}}"#,
                "checkpoints.max_total_mb",
            ),
        ] {
            assert_eq!(Config::from_json(json).unwrap_err().key, key);
        }
    }

    /// A careless (or hostile) settings file cannot turn the spending controls off with a
    /// number out of range: a negative cap once meant "no cap", a negative price made every
    /// call cost $0.
    #[test]
    fn prices_and_the_daily_cap_are_checked_with_the_key_named() {
        for (json, key) in [
            (
                r#"{"limits": {"daily_cost_usd": -1}}"#,
                "limits.daily_cost_usd",
            ),
            (
                r#"{"limits": {"daily_cost_usd": 1e300}}"#,
                "limits.daily_cost_usd",
            ),
            (
                r#"{"pricing": {"openai:*": {"input_per_mtok": -1, "output_per_mtok": 1}}}"#,
                "pricing.openai:*.input_per_mtok",
            ),
            (
                r#"{"pricing": {"openai:*": {"input_per_mtok": 1, "output_per_mtok": -10}}}"#,
                "pricing.openai:*.output_per_mtok",
            ),
            (
                r#"{"pricing": {"kimi:*": {"input_per_mtok": 1, "output_per_mtok": 1, "cached_input_per_mtok": -0.1}}}"#,
                "pricing.kimi:*.cached_input_per_mtok",
            ),
            (
                r#"{"pricing": {"openai:*": {"input_per_mtok": 1, "output_per_mtok": 20000}}}"#,
                "pricing.openai:*.output_per_mtok",
            ),
            (
                r#"{"pricing": {"": {"input_per_mtok": 1, "output_per_mtok": 1}}}"#,
                "pricing.",
            ),
            (
                r#"{"pricing": {"openai: gpt": {"input_per_mtok": 1, "output_per_mtok": 1}}}"#,
                "pricing.openai: gpt",
            ),
        ] {
            let e = Config::from_json(json).unwrap_err();
            assert_eq!(e.key, key, "{json}: {e}");
        }
        let ok = Config::from_json(
            r#"{"limits": {"daily_cost_usd": 0}, "pricing": {"kimi:*": {"input_per_mtok": 0.6, "output_per_mtok": 2.5}}}"#,
        )
        .unwrap();
        assert_eq!(ok.limits.daily_cost_usd, Some(0.0));
    }

    #[test]
    fn unknown_key_is_refused() {
        let e = Config::from_json(r#"{"beta": {"plan": true}}"#).unwrap_err();
        assert_eq!(e.key, "beta.plan");
        assert!(e.message.contains("unknown field"), "{e}");
    }

    #[test]
    fn provider_base_url_is_checked() {
        let e = Config::from_json(
            r#"{"providers": {"kimi": {"kind": "openai", "base_url": "api.example"}}}"#,
        )
        .unwrap_err();
        assert_eq!(e.key, "providers.kimi.base_url");
    }

    #[test]
    fn a_model_spec_must_name_a_provider_it_can_reach() {
        let mut c = Config::default();
        for ok in [
            "openai:gpt-4.1",
            "anthropic:claude-x",
            "ollama:qwen3",
            "scripted:/s.json",
        ] {
            assert!(c.check_model(ok).is_ok(), "{ok}");
        }
        for bad in ["gpt-4.1", "openai:", "kimi:k2", "", "ollama: "] {
            let e = c.check_model(bad).unwrap_err();
            assert_eq!(e.key, "model", "{bad}");
            assert!(e.message.contains("names no model"), "{e}");
        }
        c.providers.insert(
            "kimi".into(),
            serde_json::from_str(
                r#"{"kind": "openai", "base_url": "https://api.example/v1", "model": "k2"}"#,
            )
            .unwrap(),
        );
        assert!(c.check_model("kimi").is_ok() && c.check_model("kimi:k2-turbo").is_ok());
        assert!(
            c.check_model("gpt-4.1")
                .unwrap_err()
                .message
                .contains("kimi")
        );
    }

    #[test]
    fn unknown_permission_mode_is_refused() {
        let e = Config::from_json(r#"{"permission_mode": "yolo"}"#).unwrap_err();
        assert_eq!(e.key, "permission_mode");
    }

    #[test]
    fn g_10_goal_settings_are_checked_with_the_key_named() {
        let c = Config::default();
        assert_eq!(c.goal.budget.grace_steps, 1);
        assert_eq!(c.goal.breaker.repeated_reply_limit, 3);
        assert_eq!(c.goal.verifier.repeated_not_met_limit, 5);
        assert_eq!(c.goal.verification, None);
        let e = Config::from_json(r#"{"goal": {"budget": {"grace_steps": 4}}}"#).unwrap_err();
        assert_eq!(e.key, "goal.budget.grace_steps");
        let e = Config::from_json(r#"{"goal": {"verification": "oracle"}}"#).unwrap_err();
        assert_eq!(e.key, "goal.verification");
        let ok = Config::from_json(
            r#"{"goal": {"verification": "none", "budget": {"default_tokens": 50000}}}"#,
        )
        .unwrap();
        assert_eq!(ok.goal.verification, Some(Verification::None));
    }

    #[test]
    fn mcp_servers_are_settings_checked_like_the_rest() {
        let ok = Config::from_json(
            r#"{"mcp_servers": {"fs": {"command": "npx", "args": ["server-filesystem"], "read_only_tools": ["read_file"]}},
                "mcp": {"tool_search_percent": 25}}"#,
        )
        .unwrap();
        assert_eq!(ok.mcp_servers["fs"].read_only_tools, ["read_file"]);
        assert_eq!(ok.mcp.tool_search_percent, 25);
        assert_eq!(Config::default().mcp.tool_search_percent, 10);
        for (json, key) in [
            (
                r#"{"mcp_servers": {"fs": {"command": "x", "enabled": "yes"}}}"#,
                "mcp_servers.fs.enabled",
            ),
            (
                r#"{"mcp_servers": {"fs": {"url": "gopher://x"}}}"#,
                "mcp_servers.fs.url",
            ),
            (
                r#"{"mcp": {"tool_search_percent": 0}}"#,
                "mcp.tool_search_percent",
            ),
            (r#"{"mcp": {"search": 5}}"#, "mcp.search"),
            (
                r#"{"mcp": {"first_request_wait_ms": 86400000}}"#,
                "mcp.first_request_wait_ms",
            ),
            (
                r#"{"mcp": {"first_request_wait_ms": -1}}"#,
                "mcp.first_request_wait_ms",
            ),
        ] {
            let e = Config::from_json(json).unwrap_err();
            assert_eq!(e.key, key, "{json}: {e}");
        }
    }

    #[test]
    fn sandbox_read_allow_takes_absolute_paths_only() {
        let ok =
            Config::from_json(r#"{"sandbox": {"read_allow": ["/opt/sdk", "~/docs"]}}"#).unwrap();
        assert_eq!(ok.sandbox.read_allow, ["/opt/sdk", "~/docs"]);
        for bad in ["docs", "../x", "~root/x", ""] {
            let e = Config::from_json(&format!(r#"{{"sandbox": {{"read_allow": ["{bad}"]}}}}"#))
                .unwrap_err();
            assert_eq!(e.key, "sandbox.read_allow", "{bad}");
        }
    }

    #[test]
    fn shell_and_plan_settings_are_checked() {
        let c = Config::default();
        assert_eq!(c.plan.shell_network, ShellNetwork::Deny);
        assert_eq!(c.turn.max_bash_timeout_ms, 600_000);
        let ok = Config::from_json(
            r#"{"plan": {"shell_network": "allow"}, "shell": {"env": {"include": ["GH_*"], "set": {"CI": "1"}}}}"#,
        )
        .unwrap();
        assert_eq!(ok.plan.shell_network, ShellNetwork::Allow);
        let e = Config::from_json(r#"{"plan": {"shell_network": "maybe"}}"#).unwrap_err();
        assert_eq!(e.key, "plan.shell_network");
        let e = Config::from_json(r#"{"shell": {"env": {"exclude": ["A B"]}}}"#).unwrap_err();
        assert_eq!(e.key, "shell.env.exclude");
        let e = Config::from_json(r#"{"shell": {"env": {"set": {"A=B": "x"}}}}"#).unwrap_err();
        assert_eq!(e.key, "shell.env.set.A=B");
        let e = Config::from_json(
            r#"{"turn": {"bash_timeout_ms": 5000, "max_bash_timeout_ms": 1000}}"#,
        )
        .unwrap_err();
        assert_eq!(e.key, "turn.max_bash_timeout_ms");
        assert!(e.message.contains("between 5000 and 86400000"), "{e}");
    }

    #[test]
    fn malformed_json_is_an_error() {
        let e = Config::from_json("{").unwrap_err();
        assert!(e.message.contains("EOF"), "{e}");
    }
}
