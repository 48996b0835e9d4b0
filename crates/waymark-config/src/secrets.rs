//! Secrets stay secret. Tool processes start with secrets removed from their environment
//! ([`ToolEnv`]), and every secret value the runtime knows — API keys from the environment,
//! the keyring or the settings, and the values of secret-looking variables — is replaced by
//! `[REDACTED:<name>]` in everything the store writes (events, history, questionnaires)
//! and everything streamed to front ends ([`Redactor`]), so it is never stored, sent to the
//! model or shown.

use crate::settings::{Config, ShellEnvConfig};
use std::borrow::Cow;
use std::ffi::{OsStr, OsString};

/// Variable names that hold secrets, as wildcard patterns (matched without regard to case).
pub const SECRET_NAME_PATTERNS: &[&str] = &[
    "*KEY*",
    "*SECRET*",
    "*TOKEN*",
    "*PASSWORD*",
    "*PASSWD*",
    "*PASSPHRASE*",
    "*CREDENTIAL*",
    "*_PASS",
    "*_PWD",
    "*_PAT",
    "*_DSN",
];

/// Variables that open a door out of a sandboxed shell (the session bus, the SSH agent, the
/// display server, the user's runtime folder of sockets): removed there.
pub const SANDBOX_REMOVED: &[&str] = &[
    "DBUS_SESSION_BUS_ADDRESS",
    "SSH_AUTH_SOCK",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "XDG_RUNTIME_DIR",
];

/// Values shorter than this are not redacted (they would match ordinary text everywhere).
pub const MIN_SECRET_LEN: usize = 8;

/// The variable names API keys are read from: the built-in providers' and those the
/// settings name (`providers.<name>.api_key_env`), whatever they are called.
pub fn key_names(config: &Config) -> Vec<String> {
    let mut names = vec![
        "OPENAI_API_KEY".to_string(),
        "ANTHROPIC_API_KEY".to_string(),
    ];
    for env in config
        .providers
        .values()
        .filter_map(|p| p.api_key_env.clone())
    {
        if !names.contains(&env) {
            names.push(env);
        }
    }
    names
}

/// `*`-wildcard match, ASCII case-insensitive.
pub fn wildcard(pattern: &str, name: &str) -> bool {
    fn go(p: &[u8], n: &[u8]) -> bool {
        match p.split_first() {
            None => n.is_empty(),
            Some((b'*', rest)) => (0..=n.len()).any(|i| go(rest, &n[i..])),
            Some((c, rest)) => n
                .split_first()
                .is_some_and(|(d, nrest)| c.eq_ignore_ascii_case(d) && go(rest, nrest)),
        }
    }
    go(pattern.as_bytes(), name.as_bytes())
}

/// Whether a variable name looks like it holds a secret.
pub fn is_secret_name(name: &str) -> bool {
    SECRET_NAME_PATTERNS.iter().any(|p| wildcard(p, name))
}

/// The environments tool processes start with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolEnv {
    /// For commands outside a sandbox.
    pub plain: Vec<(OsString, OsString)>,
    /// For sandboxed commands (plan mode, the verifier).
    pub sandboxed: Vec<(OsString, OsString)>,
}

impl ToolEnv {
    /// Filters `base` (the process environment): provider key variables and secret-looking
    /// names go (unless `shell.env.include` lets one through; provider keys never), then
    /// `shell.env.exclude` removes more, then `shell.env.set` sets values. Sandboxed shells
    /// also lose [`SANDBOX_REMOVED`].
    pub fn build(base: &[(OsString, OsString)], config: &Config) -> ToolEnv {
        let keys = key_names(config);
        let rules: &ShellEnvConfig = &config.shell.env;
        let keep = |name: &OsStr| {
            let Some(n) = name.to_str() else {
                // A name that is not UTF-8 cannot be checked against the patterns.
                return false;
            };
            if keys.iter().any(|k| k == n) || n == crate::mcp::OWNER_VAR {
                return false;
            }
            if rules.exclude.iter().any(|p| wildcard(p, n)) {
                return false;
            }
            // A git setting's name (`GIT_CONFIG_KEY_0=user.name`) only looks like a key; its
            // value variable is kept anyway, and git refuses a count with a name missing.
            if wildcard("GIT_CONFIG_KEY_*", n) {
                return true;
            }
            !is_secret_name(n) || rules.include.iter().any(|p| wildcard(p, n))
        };
        let mut plain: Vec<(OsString, OsString)> =
            base.iter().filter(|(k, _)| keep(k)).cloned().collect();
        for (k, v) in &rules.set {
            plain.retain(|(n, _)| n.as_os_str() != OsStr::new(k));
            plain.push((k.into(), v.into()));
        }
        git_guard(&mut plain);
        let sandboxed = plain
            .iter()
            .filter(|(k, _)| {
                !SANDBOX_REMOVED
                    .iter()
                    .any(|r| OsStr::new(r) == k.as_os_str())
            })
            .cloned()
            .collect();
        ToolEnv { plain, sandboxed }
    }
}

/// Settings every git a tool runs gets, on top of the user's (environment settings come
/// after every config file): the workspace is never taken for a bare repository (a model
/// writing `HEAD`, `config`, `objects/` and `refs/` there would otherwise make `git status`
/// run its `core.fsmonitor`), and no fsmonitor command runs at all.
pub const GIT_SETTINGS: &[(&str, &str)] = &[
    ("safe.bareRepository", "explicit"),
    ("core.fsmonitor", "false"),
];

/// Adds [`GIT_SETTINGS`] after any `GIT_CONFIG_COUNT` settings already there, and
/// `GIT_OPTIONAL_LOCKS=0`: read-only commands (`git status`, `git diff`) then never write the
/// index, so they never start the `post-index-change` hook of a `core.hooksPath` folder in
/// the workspace.
fn git_guard(env: &mut Vec<(OsString, OsString)>) {
    let get = |env: &[(OsString, OsString)], k: &str| {
        env.iter()
            .find(|(n, _)| n == OsStr::new(k))
            .and_then(|(_, v)| v.to_str().map(str::to_string))
    };
    let first = get(env, "GIT_CONFIG_COUNT")
        .and_then(|c| c.parse::<usize>().ok())
        .unwrap_or(0);
    let mut set = |k: String, v: String| {
        env.retain(|(n, _)| n.as_os_str() != OsStr::new(&k));
        env.push((k.into(), v.into()));
    };
    for (i, (key, value)) in GIT_SETTINGS.iter().enumerate() {
        set(format!("GIT_CONFIG_KEY_{}", first + i), (*key).into());
        set(format!("GIT_CONFIG_VALUE_{}", first + i), (*value).into());
    }
    set(
        "GIT_CONFIG_COUNT".into(),
        (first + GIT_SETTINGS.len()).to_string(),
    );
    set("GIT_OPTIONAL_LOCKS".into(), "0".into());
}

/// Replaces known secret values with `[REDACTED:<name>]`.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// `(needle, replacement)`: each secret as it appears in text and in JSON strings.
    needles: Vec<(String, String)>,
}

impl Redactor {
    /// Collects the secrets: the provider keys `lookup` resolves (environment or keyring),
    /// values of secret-looking variables in `base`, and `shell.env.set` values of
    /// secret-looking names.
    pub fn collect(
        base: &[(OsString, OsString)],
        config: &Config,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Redactor {
        let mut found: Vec<(String, String)> = Vec::new();
        for name in key_names(config) {
            if let Some(v) = lookup(&name) {
                found.push((name, v));
            }
        }
        for (k, v) in base {
            if let (Some(k), Some(v)) = (k.to_str(), v.to_str())
                && (is_secret_name(k) || found.iter().any(|(n, _)| n == k))
            {
                found.push((k.to_string(), v.to_string()));
            }
        }
        for (k, v) in &config.shell.env.set {
            if is_secret_name(k) {
                found.push((k.clone(), v.clone()));
            }
        }
        let mut r = Redactor::default();
        for (name, value) in found {
            r.add(&name, &value);
        }
        r
    }

    /// Adds one secret (ignored when shorter than [`MIN_SECRET_LEN`]).
    pub fn add(&mut self, name: &str, value: &str) {
        let value = value.trim();
        if value.chars().count() < MIN_SECRET_LEN {
            return;
        }
        let replacement = format!("[REDACTED:{name}]");
        let escaped = serde_json::to_string(value).unwrap_or_default();
        let escaped = escaped.trim_matches('"').to_string();
        // A secret of several lines (a PEM key, a credentials file) may be shown a line at a
        // time (a running command's live output, a cut): each of its lines is one too.
        let lines = value
            .lines()
            .map(str::trim)
            .filter(|l| l.len() != value.len() && l.chars().count() >= MIN_SECRET_LEN)
            .map(str::to_string);
        for needle in [value.to_string(), escaped].into_iter().chain(lines) {
            if !self.needles.iter().any(|(n, _)| *n == needle) {
                self.needles.push((needle, replacement.clone()));
            }
        }
        // Longer secrets first, so one that contains another is replaced whole.
        self.needles.sort_by_key(|n| std::cmp::Reverse(n.0.len()));
    }

    pub fn is_empty(&self) -> bool {
        self.needles.is_empty()
    }

    /// The name of a known secret that `text` holds, if any (`[REDACTED:<name>]`'s name).
    pub fn secret_in(&self, text: &str) -> Option<&str> {
        self.needles
            .iter()
            .find(|(n, _)| text.contains(n.as_str()))
            .map(|(_, r)| {
                r.strip_prefix("[REDACTED:")
                    .and_then(|r| r.strip_suffix(']'))
                    .unwrap_or(r)
            })
    }

    /// [`Redactor::secret_in`], ignoring ASCII case (a URL's host is lowercased).
    pub fn secret_in_any_case(&self, text: &str) -> Option<&str> {
        let folded = text.to_ascii_lowercase();
        self.needles
            .iter()
            .find(|(n, _)| folded.contains(&n.to_ascii_lowercase()))
            .map(|(_, r)| {
                r.strip_prefix("[REDACTED:")
                    .and_then(|r| r.strip_suffix(']'))
                    .unwrap_or(r)
            })
    }

    /// `text` with every known secret replaced.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if !self.needles.iter().any(|(n, _)| text.contains(n.as_str())) {
            return Cow::Borrowed(text);
        }
        let mut out = text.to_string();
        for (needle, replacement) in &self.needles {
            if out.contains(needle.as_str()) {
                out = out.replace(needle.as_str(), replacement);
            }
        }
        Cow::Owned(out)
    }
}

/// Redacts a text stream piece by piece: the end of what came so far is held back while it
/// could be the start of a secret, so a secret split across pieces is still caught.
#[derive(Debug, Default)]
pub struct StreamRedactor {
    held: String,
}

impl StreamRedactor {
    /// Takes the next piece; returns what can be shown now (redacted).
    pub fn push(&mut self, r: &Redactor, piece: &str) -> String {
        self.held.push_str(piece);
        let clean = r.redact(&self.held).into_owned();
        // The earliest point from which the rest could still grow into a secret.
        let cut = clean
            .char_indices()
            .map(|(i, _)| i)
            .find(|&i| {
                let tail = &clean[i..];
                r.needles
                    .iter()
                    .any(|(n, _)| n.len() > tail.len() && n.starts_with(tail))
            })
            .unwrap_or(clean.len());
        self.held = clean[cut..].to_string();
        clean[..cut].to_string()
    }

    /// What is still held back, redacted, at the end of the stream.
    pub fn finish(&mut self, r: &Redactor) -> String {
        r.redact(&std::mem::take(&mut self.held)).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs.iter().map(|(k, v)| (k.into(), v.into())).collect()
    }

    /// A Waymark started from inside a server's shell inherits that server's owner mark; its
    /// tools never pass it on (a later start would take them for a killed app's leftovers).
    #[test]
    fn the_mcp_owner_mark_is_not_passed_to_tools() {
        let env = ToolEnv::build(
            &base(&[(crate::mcp::OWNER_VAR, "1:2:pid:[3]"), ("PATH", "/bin")]),
            &Config::default(),
        );
        assert!(env.plain.iter().any(|(k, _)| k == "PATH"));
        assert!(!env.plain.iter().any(|(k, _)| k == crate::mcp::OWNER_VAR));
        assert!(
            !env.sandboxed
                .iter()
                .any(|(k, _)| k == crate::mcp::OWNER_VAR)
        );
    }

    #[test]
    fn secret_names_and_wildcards() {
        for n in [
            "OPENAI_API_KEY",
            "github_token",
            "DB_PASSWORD",
            "AWS_SECRET_ACCESS_KEY",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "KEYRING",
            "MYSQL_PWD",
            "SMTP_PASS",
            "GITHUB_PAT",
            "HTPASSWD_FILE",
            "GPG_PASSPHRASE",
            "SENTRY_DSN",
        ] {
            assert!(is_secret_name(n), "{n}");
        }
        for n in [
            "PATH",
            "HOME",
            "LANG",
            "CARGO_HOME",
            "TERM",
            "PWD",
            "OLDPWD",
            "MANPATH",
            "CLASSPATH",
            "PASSAGE",
        ] {
            assert!(!is_secret_name(n), "{n}");
        }
        assert!(wildcard("GH_*", "gh_host"));
        assert!(!wildcard("GH_*", "XGH_HOST"));
    }

    #[test]
    fn tool_env_drops_secrets_keys_and_sandbox_doors() {
        let config = Config::from_json(
            r#"{"providers": {"kimi": {"kind": "openai", "base_url": "http://x", "api_key_env": "KIMI_AUTH"}},
                "shell": {"env": {"include": ["GH_TOKEN"], "exclude": ["AWS_*"], "set": {"CI": "1"}}}}"#,
        )
        .unwrap();
        let env = ToolEnv::build(
            &base(&[
                ("PATH", "/usr/bin"),
                ("OPENAI_API_KEY", "sk-1"),
                ("KIMI_AUTH", "kimi-secret"),
                ("GH_TOKEN", "ghp"),
                ("NPM_TOKEN", "npm"),
                ("AWS_REGION", "eu"),
                ("DISPLAY", ":0"),
                ("SSH_AUTH_SOCK", "/run/agent"),
            ]),
            &config,
        );
        let names = |v: &[(OsString, OsString)]| {
            v.iter()
                .map(|(k, _)| k.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
        };
        let git = [
            "GIT_CONFIG_KEY_0",
            "GIT_CONFIG_VALUE_0",
            "GIT_CONFIG_KEY_1",
            "GIT_CONFIG_VALUE_1",
            "GIT_CONFIG_COUNT",
            "GIT_OPTIONAL_LOCKS",
        ];
        let with_git = |names: &[&str]| {
            names
                .iter()
                .chain(git.iter())
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names(&env.plain),
            with_git(&["PATH", "GH_TOKEN", "DISPLAY", "SSH_AUTH_SOCK", "CI"])
        );
        assert_eq!(names(&env.sandboxed), with_git(&["PATH", "GH_TOKEN", "CI"]));
        // The user's own environment settings come first and are kept.
        let env = ToolEnv::build(
            &base(&[
                ("GIT_CONFIG_COUNT", "1"),
                ("GIT_CONFIG_KEY_0", "user.name"),
                ("GIT_CONFIG_VALUE_0", "me"),
            ]),
            &Config::default(),
        );
        let value = |k: &str| {
            env.plain
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.to_string_lossy().into_owned())
        };
        assert_eq!(value("GIT_CONFIG_KEY_0").as_deref(), Some("user.name"));
        assert_eq!(
            value("GIT_CONFIG_KEY_1").as_deref(),
            Some("safe.bareRepository")
        );
        assert_eq!(value("GIT_CONFIG_COUNT").as_deref(), Some("3"));
    }

    #[test]
    fn redaction_covers_text_and_json_forms() {
        let config = Config::default();
        let r = Redactor::collect(
            &base(&[
                ("MY_PASSWORD", "hunter2-long\"quote"),
                ("SHORT_TOKEN", "abc"),
            ]),
            &config,
            &|k| (k == "OPENAI_API_KEY").then(|| "sk-live-0123456789".to_string()),
        );
        assert_eq!(
            r.redact("key sk-live-0123456789 and sk-live-0123456789"),
            "key [REDACTED:OPENAI_API_KEY] and [REDACTED:OPENAI_API_KEY]"
        );
        let json = serde_json::json!({"x": "hunter2-long\"quote"}).to_string();
        assert_eq!(r.redact(&json), r#"{"x":"[REDACTED:MY_PASSWORD]"}"#);
        assert_eq!(
            r.redact("abc is too short to redact"),
            "abc is too short to redact"
        );
        assert!(matches!(r.redact("nothing"), Cow::Borrowed(_)));
    }

    /// Every line of a secret of several lines is redacted alone too: a running command's
    /// output reaches the window a few lines at a time.
    #[test]
    fn every_line_of_a_secret_of_several_lines_is_redacted_alone() {
        let mut r = Redactor::default();
        r.add(
            "DEPLOY_KEY",
            "-----BEGIN TEST KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7\n-----END TEST KEY-----",
        );
        let shown = r.redact("MIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7\n");
        assert!(
            !shown.contains("MIIEvQ") && !shown.contains("BKcwgg"),
            "{shown}"
        );
        // A one-line secret adds no more than itself and its escaped form.
        let mut one = Redactor::default();
        one.add("TOKEN", "sk-abcdefghijklmnop");
        assert_eq!(one.needles.len(), 1);
    }
}
