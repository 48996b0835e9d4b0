//! Trying a model before it is saved: the setup card's "Test connection" makes one small
//! call to the model its answer describes, and says which field to fix when it fails.

use crate::provider::{
    CallPurpose, HttpOptions, ModelMessage, ModelRequest, ProviderError, ProviderErrorKind,
    RetryPolicy, SpecError, resolve_model,
};
use crate::runtime::EnvReader;
use std::path::Path;
use std::time::{Duration, Instant};
use waymark_config::setup::{SETUP_BASE_URL, SETUP_KEY, SETUP_MODEL, SetupPlan};
use waymark_protocol::ErrorInfo;

/// A model that answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    /// The model as its provider names it (`custom:m1`).
    pub model: String,
    /// From sending the call to the end of the reply.
    pub millis: u64,
}

/// The longest a test call may take in all.
const PROBE_LIMIT: Duration = Duration::from_secs(45);

/// What the test asks: a reply of a word or two, so it costs next to nothing.
fn request() -> ModelRequest {
    ModelRequest {
        system: "This is a connection check. Answer with one word.".into(),
        messages: vec![ModelMessage::user("Say ready.")],
        tools: Vec::new(),
        max_output_tokens: 32,
        purpose: CallPurpose::Main,
    }
}

/// Tries once, without retries, with shorter waits than a turn's: a user is watching.
fn options() -> HttpOptions {
    HttpOptions {
        connect_timeout: Duration::from_secs(10),
        first_byte_timeout: Duration::from_secs(30),
        idle_timeout: Duration::from_secs(30),
        error_body_timeout: Duration::from_secs(5),
        retry: RetryPolicy {
            max_tries: 1,
            ..RetryPolicy::default()
        },
    }
}

/// Makes one small call to `plan`'s model. `key`, when given, is the key for the plan's key
/// variable (not stored yet); other variables come from `env`. An error names the setup
/// field to fix in `setting` when one is to blame.
pub async fn try_model(
    plan: &SetupPlan,
    key: Option<&str>,
    env: EnvReader,
    cwd: &Path,
) -> Result<Probe, ErrorInfo> {
    let key = typed(key);
    let used = used_key(plan, key.as_deref(), &env);
    let result = try_with(plan, key, env, cwd).await;
    result.map_err(|e| shown(e, used.as_deref()))
}

/// The models the server `plan` describes offers, for the setup card to pick from: the key
/// and errors handled as [`try_model`]'s (an error names the field to fix: the key, or the
/// address when the server does not answer a listing).
pub async fn list_models(
    plan: &SetupPlan,
    key: Option<&str>,
    env: EnvReader,
    cwd: &Path,
) -> Result<Vec<String>, ErrorInfo> {
    let key = typed(key);
    let used = used_key(plan, key.as_deref(), &env);
    let result = async {
        let resolved = resolve(plan, key, env, cwd)?;
        match tokio::time::timeout(PROBE_LIMIT, resolved.provider.list_models()).await {
            Err(_) => Err(field(
                ProviderErrorKind::Timeout.code(),
                format!(
                    "no list of models within {} s: check the address",
                    PROBE_LIMIT.as_secs()
                ),
                SETUP_BASE_URL,
            )),
            Ok(Err(e)) => {
                let setting = match e.kind {
                    ProviderErrorKind::Auth => SETUP_KEY,
                    _ => SETUP_BASE_URL,
                };
                Err(field(e.kind.code(), e.message, setting))
            }
            Ok(Ok(names)) => Ok(names),
        }
    }
    .await;
    result.map_err(|e| shown(e, used.as_deref()))
}

/// The key a call of `plan` sends: the one typed, else the stored one its variable holds
/// (blanked from what the server says, whole or cut, before anything is cut short).
fn used_key(plan: &SetupPlan, typed: Option<&str>, env: &EnvReader) -> Option<String> {
    typed
        .map(str::to_string)
        .or_else(|| plan.key_env.as_deref().and_then(|v| env(v)))
        .filter(|k| !k.trim().is_empty())
}

/// A key as typed: surrounding blanks dropped, an empty one none.
fn typed(key: Option<&str>) -> Option<String> {
    key.map(str::trim)
        .filter(|k| !k.is_empty())
        .map(str::to_string)
}

/// An error as the card shows it: what the server said goes to the screen, never with the
/// key in it, and not at length.
fn shown(mut e: ErrorInfo, key: Option<&str>) -> ErrorInfo {
    if let Some(k) = key {
        e.message = blank_key(&e.message, k);
    }
    if e.message.chars().count() > MESSAGE_MAX {
        e.message = format!(
            "{}…",
            e.message.chars().take(MESSAGE_MAX).collect::<String>()
        );
    }
    e
}

/// The longest failure shown on the card.
const MESSAGE_MAX: usize = 600;

/// The shortest start of a key blanked on its own (a message cut short may end inside one).
const KEY_PART_MIN: usize = 8;

/// `text` with `key` blanked out, whole or its start where a cut left only that.
fn blank_key(text: &str, key: &str) -> String {
    let mut out = text.replace(key, "[the key]");
    let ends: Vec<usize> = key
        .char_indices()
        .map(|(i, c)| i + c.len_utf8())
        .filter(|&n| key[..n].chars().count() >= KEY_PART_MIN)
        .collect();
    for &n in ends.iter().rev() {
        if out.contains(&key[..n]) {
            out = out.replace(&key[..n], "[the key]");
        }
    }
    out
}

async fn try_with(
    plan: &SetupPlan,
    key: Option<String>,
    env: EnvReader,
    cwd: &Path,
) -> Result<Probe, ErrorInfo> {
    let resolved = resolve(plan, key, env, cwd)?;
    let started = Instant::now();
    let request = request();
    let call = resolved.provider.call(&request, &|_| {});
    match tokio::time::timeout(PROBE_LIMIT, call).await {
        Err(_) => Err(field(
            ProviderErrorKind::Timeout.code(),
            format!(
                "no complete answer within {} s: check the address",
                PROBE_LIMIT.as_secs()
            ),
            SETUP_BASE_URL,
        )),
        Ok(Err(e)) => Err(blame(e)),
        Ok(Ok(_)) => Ok(Probe {
            model: resolved.provider.describe(),
            millis: started.elapsed().as_millis().try_into().unwrap_or(u64::MAX),
        }),
    }
}

/// `plan`'s model, reached with `key` for the plan's key variable and `env` for the rest.
fn resolve(
    plan: &SetupPlan,
    key: Option<String>,
    env: EnvReader,
    cwd: &Path,
) -> Result<crate::provider::ResolvedModel, ErrorInfo> {
    let key_env = plan.key_env.clone();
    // The card has its own address field: a built-in's base-URL variable (`OPENAI_BASE_URL`)
    // must not send the key the card is given somewhere the card does not show.
    let base_env = plan
        .spec
        .split_once(':')
        .and_then(|(kind, _)| waymark_config::catalog::builtin(kind))
        .map(|b| b.base_env);
    let read = move |name: &str| match (&key, &key_env) {
        _ if Some(name) == base_env => None,
        (Some(k), Some(var)) if var == name => Some(k.clone()),
        _ => env(name),
    };
    resolve_model(&plan.spec, &plan.config, &read, cwd, cwd, None, options()).map_err(|e| match e {
        SpecError::Invalid { .. } => field(e.code(), e.to_string(), SETUP_MODEL),
        SpecError::Provider(p) if p.kind == ProviderErrorKind::Auth => field(
            p.kind.code(),
            "no API key: paste the key (it is kept in the system keyring)".into(),
            SETUP_KEY,
        ),
        SpecError::Provider(p) => blame(p),
    })
}

fn field(code: &str, message: String, setting: &str) -> ErrorInfo {
    let mut e = ErrorInfo::new(code, message);
    e.setting = Some(setting.to_string());
    e
}

/// Which field a failed call points at: a refused key, an address that does not answer (or
/// not in the provider's format), a model the server does not have. A limit or a server
/// failure blames none: the connection itself works.
fn blame(e: ProviderError) -> ErrorInfo {
    let code = e.kind.code();
    let setting = match e.kind {
        ProviderErrorKind::Auth => Some(SETUP_KEY),
        ProviderErrorKind::Network
        | ProviderErrorKind::Timeout
        | ProviderErrorKind::BadResponse => Some(SETUP_BASE_URL),
        ProviderErrorKind::RequestRejected if e.message.to_ascii_lowercase().contains("model") => {
            Some(SETUP_MODEL)
        }
        ProviderErrorKind::RequestRejected if e.message.contains("HTTP 404") => {
            Some(SETUP_BASE_URL)
        }
        ProviderErrorKind::RequestRejected
        | ProviderErrorKind::RateLimited
        | ProviderErrorKind::QuotaExhausted
        | ProviderErrorKind::ServerError
        | ProviderErrorKind::ContextTooLong
        | ProviderErrorKind::ScriptExhausted
        | ProviderErrorKind::Refused => None,
    };
    let mut info = ErrorInfo::new(code, e.message);
    info.setting = setting.map(str::to_string);
    info
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use waymark_config::Config;
    use waymark_config::setup::{ModelSetup, SetupProvider, plan};

    fn no_env() -> EnvReader {
        Arc::new(|_| None)
    }

    fn at(url: &str) -> SetupPlan {
        let s = ModelSetup {
            provider: SetupProvider::Compatible,
            base_url: url.into(),
            model: "m1".into(),
        };
        plan(&Config::default(), &s, true).unwrap()
    }

    /// The card's address is the one asked, whatever a base-URL variable says, and a stored
    /// key the server echoes is blanked even where the message cuts it.
    #[tokio::test]
    async fn the_card_address_wins_and_a_stored_key_is_blanked() {
        let s = ModelSetup {
            provider: SetupProvider::Ollama,
            base_url: "http://localhost:11434/v1".into(),
            model: "m1".into(),
        };
        let p = plan(&Config::default(), &s, false).unwrap();
        let env: EnvReader =
            Arc::new(|n| (n == "OLLAMA_BASE_URL").then(|| "http://127.0.0.1:9/v1".into()));
        let e = list_models(&p, None, env, Path::new("/"))
            .await
            .unwrap_err();
        assert!(!e.message.contains("127.0.0.1:9"), "{e:?}");
        let key = "sk-stored-0123456789abcdef";
        let mut p = at("http://127.0.0.1:9/v1");
        p.key_env = Some("CUSTOM_API_KEY".into());
        let env: EnvReader = Arc::new(move |n| (n == "CUSTOM_API_KEY").then(|| key.to_string()));
        let cut = format!("{} {}", "x".repeat(590), key);
        let shown = shown(
            ErrorInfo::new("bad", cut),
            used_key(&p, None, &env).as_deref(),
        );
        assert!(!shown.message.contains(&key[..10]), "{}", shown.message);
    }

    /// A listing from an address where nothing answers points at the address field.
    #[tokio::test]
    async fn a_listing_nobody_answers_points_at_the_address() {
        let e = list_models(
            &at("http://127.0.0.1:9/v1"),
            Some("sk-unused"),
            no_env(),
            Path::new("/"),
        )
        .await
        .unwrap_err();
        assert_eq!(e.setting.as_deref(), Some(SETUP_BASE_URL), "{e:?}");
        assert!(e.message.contains("127.0.0.1:9"), "{e:?}");
    }

    #[test]
    fn a_key_is_blanked_whole_or_cut_and_a_long_message_is_cut() {
        let key = "sk-proj-abcdefghijklmnop";
        assert_eq!(
            blank_key(&format!("bad key {key}, or {key}"), key),
            "bad key [the key], or [the key]"
        );
        // A message cut inside the key shows no part of it 8 characters or longer.
        assert_eq!(
            blank_key("bad key sk-proj-abcd…", key),
            "bad key [the key]…"
        );
        assert_eq!(blank_key("sk-proj", key), "sk-proj");
    }

    #[test]
    fn failures_point_at_the_field_to_fix() {
        let cases = [
            (
                ProviderErrorKind::Auth,
                "refused (HTTP 401)",
                Some(SETUP_KEY),
            ),
            (
                ProviderErrorKind::Network,
                "could not reach",
                Some(SETUP_BASE_URL),
            ),
            (
                ProviderErrorKind::BadResponse,
                "not SSE",
                Some(SETUP_BASE_URL),
            ),
            (
                ProviderErrorKind::RequestRejected,
                "(HTTP 404): The model `x` does not exist",
                Some(SETUP_MODEL),
            ),
            (
                ProviderErrorKind::RequestRejected,
                "(HTTP 404): Not Found",
                Some(SETUP_BASE_URL),
            ),
            (ProviderErrorKind::RateLimited, "slow down", None),
            (ProviderErrorKind::ServerError, "HTTP 500", None),
        ];
        for (kind, message, setting) in cases {
            let e = blame(ProviderError::new(kind, message));
            assert_eq!(e.setting.as_deref(), setting, "{kind:?} {message}");
            assert_eq!(e.message, message);
        }
    }

    #[tokio::test]
    async fn a_key_that_is_needed_and_missing_is_asked_for() {
        let p = plan(
            &Config::default(),
            &ModelSetup {
                provider: SetupProvider::Openai,
                base_url: "https://api.openai.com/v1".into(),
                model: "gpt-4.1".into(),
            },
            false,
        )
        .unwrap();
        // Nothing is sent: the missing key is found before any call.
        let e = try_model(&p, None, no_env(), Path::new("/"))
            .await
            .unwrap_err();
        assert_eq!(e.setting.as_deref(), Some(SETUP_KEY), "{e}");
        assert!(e.message.contains("paste the key"), "{e}");
    }

    #[tokio::test]
    async fn a_closed_port_blames_the_address() {
        // A port bound and then closed: nothing listens there.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let e = try_model(
            &at(&format!("http://127.0.0.1:{port}/v1")),
            Some("k"),
            no_env(),
            Path::new("/"),
        )
        .await
        .unwrap_err();
        assert_eq!(e.setting.as_deref(), Some(SETUP_BASE_URL), "{e}");
    }
}
