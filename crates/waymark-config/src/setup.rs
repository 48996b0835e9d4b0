//! Connecting a model for the first time: what the setup
//! card asks (a provider, its address and a model; the key travels apart and goes to the
//! keyring), and how an answer becomes settings ([`plan`]).

use crate::catalog::{BUILTINS, Builtin, builtin};
use crate::error::ConfigError;
use crate::settings::{Config, ProviderConfig, ProviderKind};
use serde::{Deserialize, Serialize};
use waymark_protocol::RouteKind;

/// The kinds of provider the setup card offers.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum SetupProvider {
    Openai,
    Anthropic,
    Ollama,
    /// Any server speaking the OpenAI format (a proxy, vLLM, LM Studio, a gateway).
    Compatible,
}

impl SetupProvider {
    /// The provider known by name behind this choice (none for a compatible server).
    pub fn builtin(self) -> Option<&'static Builtin> {
        match self {
            SetupProvider::Openai => builtin("openai"),
            SetupProvider::Anthropic => builtin("anthropic"),
            SetupProvider::Ollama => builtin("ollama"),
            SetupProvider::Compatible => None,
        }
    }

    /// The address the card fills in (empty for a compatible server: only the user knows it).
    pub fn default_base_url(self) -> &'static str {
        self.builtin().map_or("", |b| b.base_url)
    }
}

/// What the setup card sends (the key goes separately, straight to the keyring).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(deny_unknown_fields)]
pub struct ModelSetup {
    pub provider: SetupProvider,
    pub base_url: String,
    pub model: String,
}

/// The settings keys of the card's fields, as errors name them.
pub const SETUP_BASE_URL: &str = "setup.base_url";
pub const SETUP_MODEL: &str = "setup.model";
pub const SETUP_KEY: &str = "setup.key";

/// What an answer of the setup card comes to.
#[derive(Debug, Clone, PartialEq)]
pub struct SetupPlan {
    /// The settings with the new model (and, for an address of the user's, its provider).
    pub config: Config,
    /// The model spec now the default (`openai:gpt-4.1`, `custom:llama3`).
    pub spec: String,
    /// The variable the key is stored under; none when the server takes no key.
    pub key_env: Option<String>,
}

/// Longest model name taken (real ones are far shorter).
const MODEL_MAX: usize = 200;
/// Longest address taken.
const URL_MAX: usize = 2048;

/// Turns the card's answer into settings. `with_key`: the user typed a key. The provider
/// known by name is used when its address is left as it is; any other address becomes a
/// provider entry of its own, under a name no other entry holds with another address, and
/// with a key variable of its own (`<NAME>_API_KEY`), so a key typed for one server is never
/// sent to another. Setting up the same server again reuses its entry, keeping what the user
/// set there.
pub fn plan(config: &Config, setup: &ModelSetup, with_key: bool) -> Result<SetupPlan, ConfigError> {
    let model = check_model_name(&setup.model)?;
    let url = check_base_url(&setup.base_url)?;
    let mut config = config.clone();
    if let Some(b) = setup.provider.builtin()
        && url == b.base_url
    {
        let spec = format!("{}:{model}", b.name);
        config.model = Some(spec.clone());
        return Ok(SetupPlan {
            config,
            spec,
            key_env: b.key_env.map(str::to_string),
        });
    }
    let base = match setup.provider {
        SetupProvider::Compatible => "custom",
        SetupProvider::Openai => "openai-custom",
        SetupProvider::Anthropic => "anthropic-custom",
        SetupProvider::Ollama => "ollama-custom",
    };
    let kind = if setup.provider == SetupProvider::Anthropic {
        ProviderKind::Anthropic
    } else {
        ProviderKind::Openai
    };
    let name = free_name(&config, base, kind, &url)?;
    // OpenAI's and Anthropic's APIs always take a key; another server only when one is given.
    let needs_key = with_key
        || matches!(
            setup.provider,
            SetupProvider::Openai | SetupProvider::Anthropic
        );
    let mut entry = config
        .providers
        .get(&name)
        .cloned()
        .unwrap_or(ProviderConfig {
            kind,
            base_url: url.clone(),
            api_key_env: None,
            route: RouteKind::OwnKey,
            model: None,
            context_tokens: None,
            // A compatible server may not take images: the user says so in the settings.
            images: setup.provider.builtin().is_some(),
        });
    if needs_key && entry.api_key_env.is_none() {
        entry.api_key_env = Some(key_var(&name));
    }
    // A key variable another provider reads (or a built-in one) would send that provider's
    // key to this server, or overwrite it: refused.
    if let Some(var) = &entry.api_key_env
        && key_var_shared(&config, &name, var)
    {
        return Err(ConfigError::new(
            SETUP_KEY,
            format!(
                "the provider `{name}` reads its key from {var}, which another provider uses too: give it a key variable of its own in Settings first"
            ),
        ));
    }
    if entry.api_key_env.is_some() && !carries_keys_safely(&url) {
        return Err(ConfigError::new(
            SETUP_BASE_URL,
            "a key would cross the network unencrypted: use https:// (plain http:// is for a server on this machine or your own network)",
        ));
    }
    entry.model = Some(model.clone());
    let key_env = entry.api_key_env.clone();
    let spec = format!("{name}:{model}");
    config.providers.insert(name.clone(), entry);
    config.model = Some(spec.clone());
    config.check_model(&spec)?;
    config.validate().map_err(|e| {
        if e.key.starts_with(&format!("providers.{name}.")) {
            ConfigError::new(SETUP_BASE_URL, e.message)
        } else {
            e
        }
    })?;
    Ok(SetupPlan {
        config,
        spec,
        key_env,
    })
}

/// The key variable of a provider entry Waymark makes: `<NAME>_API_KEY`.
fn key_var(name: &str) -> String {
    format!("{}_API_KEY", name.to_ascii_uppercase().replace('-', "_"))
}

/// Whether `var` is a built-in provider's key variable or one another entry than `name` reads.
fn key_var_shared(config: &Config, name: &str, var: &str) -> bool {
    BUILTINS.iter().any(|b| b.key_env == Some(var))
        || config
            .providers
            .iter()
            .any(|(n, p)| n != name && p.api_key_env.as_deref() == Some(var))
}

/// `base`, or `base-2`, `base-3`…: the first name that is free or already holds a provider
/// of this kind at this address (reused), so setting up twice piles up no entries and one
/// the user made for another server is never changed.
fn free_name(
    config: &Config,
    base: &str,
    kind: ProviderKind,
    url: &str,
) -> Result<String, ConfigError> {
    for n in 1..=100 {
        let name = if n == 1 {
            base.to_string()
        } else {
            format!("{base}-{n}")
        };
        match config.providers.get(&name) {
            None if !key_var_shared(config, &name, &key_var(&name)) => return Ok(name),
            None => {}
            Some(p) if p.kind == kind && p.base_url == url && p.route == RouteKind::OwnKey => {
                return Ok(name);
            }
            Some(_) => {}
        }
    }
    Err(ConfigError::new(
        SETUP_BASE_URL,
        format!("the settings already hold 100 providers named {base}…: remove some in Settings"),
    ))
}

/// Whether a key may go to `url`: over https, or over plain http to this machine or the
/// local network (a loopback, private or link-local address; `localhost`, a `.local` name or
/// a single-label host name). The host is the one the HTTP client connects to: read by the
/// same (WHATWG) rules, so `http://134744072/` is 8.8.8.8 and `http://a%2eb.com/` is a.b.com.
pub fn carries_keys_safely(url: &str) -> bool {
    let Ok(u) = url::Url::parse(url) else {
        return false;
    };
    match u.scheme() {
        "https" => true,
        "http" => local_host(&u),
        _ => false,
    }
}

/// Whether `url` (an `http(s)` address) names this machine or the local network: a
/// loopback, private or link-local address, `localhost`, a `.local` name or a single-label
/// host name.
pub fn local_address(url: &str) -> bool {
    url::Url::parse(url).is_ok_and(|u| matches!(u.scheme(), "http" | "https") && local_host(&u))
}

/// Whether `u`'s host is this machine or the local network (see [`local_address`]).
fn local_host(u: &url::Url) -> bool {
    match u.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback() || ip.is_private() || ip.is_link_local(),
        Some(url::Host::Ipv6(ip)) => {
            let first = ip.segments()[0];
            ip.is_loopback() || (first & 0xfe00) == 0xfc00 || (first & 0xffc0) == 0xfe80
        }
        Some(url::Host::Domain(d)) => {
            let host = d.trim_end_matches('.').to_ascii_lowercase();
            host == "localhost"
                || host.ends_with(".localhost")
                || host.ends_with(".local")
                || (!host.is_empty() && !host.contains('.'))
        }
        None => false,
    }
}

fn check_model_name(model: &str) -> Result<String, ConfigError> {
    let model = model.trim();
    let bad = |why: &str| Err(ConfigError::new(SETUP_MODEL, why.to_string()));
    if model.is_empty() {
        return bad("name the model, for example gpt-4.1, claude-sonnet-4-5 or qwen3");
    }
    if model.chars().count() > MODEL_MAX {
        return bad("this is longer than any model name (200 characters at most)");
    }
    if model
        .chars()
        .any(|c| c.is_whitespace() || waymark_protocol::display::needs_escape(c))
    {
        return bad("a model name has no spaces, control or invisible characters");
    }
    Ok(model.to_string())
}

fn check_base_url(url: &str) -> Result<String, ConfigError> {
    let url = url.trim();
    let bad = |why: &str| Err(ConfigError::new(SETUP_BASE_URL, why.to_string()));
    if url.is_empty() {
        return bad("give the server's address, for example http://localhost:8000/v1");
    }
    if url.len() > URL_MAX {
        return bad("this address is too long (2048 characters at most)");
    }
    if url
        .chars()
        .any(|c| c.is_whitespace() || waymark_protocol::display::needs_escape(c))
    {
        return bad("an address has no spaces, control or invisible characters");
    }
    let Some((scheme, rest)) = url.split_once("://") else {
        return bad("the address starts with http:// or https://");
    };
    // The client would take `http:///v1` for the server `v1`.
    if rest.is_empty() || rest.starts_with(['/', '\\']) {
        return bad("the address names no server (http://host:port/…)");
    }
    if !(scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https")) {
        return bad("the address starts with http:// or https://");
    }
    if url.contains(['?', '#']) {
        return bad(
            "an address has no ?query or #part (a key goes in the key field, not in the address)",
        );
    }
    // Read as the HTTP client will read it; what is stored is that reading, so the settings
    // hold the address the calls go to.
    let Ok(parsed) = url::Url::parse(url) else {
        return bad("this is not an address the HTTP client can read (http://host:port/…)");
    };
    if parsed.host_str().is_none_or(str::is_empty) {
        return bad("the address names no server (http://host:port/…)");
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return bad(
            "the address names no server (http://host:port/…): a key goes in the key field, not in the address",
        );
    }
    Ok(parsed.as_str().trim_end_matches('/').to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(provider: SetupProvider, url: &str, model: &str) -> ModelSetup {
        ModelSetup {
            provider,
            base_url: url.into(),
            model: model.into(),
        }
    }

    #[test]
    fn a_provider_at_its_own_address_is_used_by_name() {
        let p = plan(
            &Config::default(),
            &setup(
                SetupProvider::Openai,
                "https://api.openai.com/v1/",
                " gpt-4.1 ",
            ),
            true,
        )
        .unwrap();
        assert_eq!(p.spec, "openai:gpt-4.1");
        assert_eq!(p.config.model.as_deref(), Some("openai:gpt-4.1"));
        assert!(p.config.providers.is_empty());
        assert_eq!(p.key_env.as_deref(), Some("OPENAI_API_KEY"));
        let o = plan(
            &Config::default(),
            &setup(SetupProvider::Ollama, "http://localhost:11434/v1", "qwen3"),
            false,
        )
        .unwrap();
        assert_eq!((o.spec.as_str(), o.key_env), ("ollama:qwen3", None));
    }

    #[test]
    fn another_address_becomes_a_provider_of_its_own() {
        let s = setup(SetupProvider::Compatible, "http://127.0.0.1:8000/v1", "m1");
        let p = plan(&Config::default(), &s, true).unwrap();
        assert_eq!(p.spec, "custom:m1");
        assert_eq!(p.key_env.as_deref(), Some("CUSTOM_API_KEY"));
        let entry = &p.config.providers["custom"];
        assert_eq!(entry.base_url, "http://127.0.0.1:8000/v1");
        assert_eq!(entry.kind, ProviderKind::Openai);
        assert_eq!(entry.api_key_env.as_deref(), Some("CUSTOM_API_KEY"));
        // Without a key, none is sent.
        let none = plan(&Config::default(), &s, false).unwrap();
        assert_eq!(none.config.providers["custom"].api_key_env, None);
        // Anthropic behind a proxy keeps its wire format and its key.
        let a = plan(
            &Config::default(),
            &setup(
                SetupProvider::Anthropic,
                "https://gw.example/anthropic",
                "claude-sonnet-4-5",
            ),
            true,
        )
        .unwrap();
        assert_eq!(a.spec, "anthropic-custom:claude-sonnet-4-5");
        assert_eq!(
            a.config.providers["anthropic-custom"].kind,
            ProviderKind::Anthropic
        );
        assert_eq!(a.key_env.as_deref(), Some("ANTHROPIC_CUSTOM_API_KEY"));
    }

    #[test]
    fn a_provider_the_user_made_is_never_overwritten() {
        let mine = Config::from_json(
            r#"{"providers": {"custom": {"kind": "openai", "base_url": "http://10.0.0.9/v1", "model": "x"}}}"#,
        )
        .unwrap();
        let s = setup(SetupProvider::Compatible, "http://127.0.0.1:8000/v1", "m1");
        let p = plan(&mine, &s, false).unwrap();
        assert_eq!(p.spec, "custom-2:m1");
        assert_eq!(p.config.providers["custom"], mine.providers["custom"]);
        // Setting up the same server again reuses its entry.
        let again = plan(
            &p.config,
            &setup(SetupProvider::Compatible, "http://127.0.0.1:8000/v1", "m2"),
            false,
        )
        .unwrap();
        assert_eq!(again.spec, "custom-2:m2");
        assert_eq!(again.config.providers.len(), 2);
    }

    #[test]
    fn each_server_has_its_own_key_variable_so_no_key_reaches_another() {
        let first = plan(
            &Config::default(),
            &setup(SetupProvider::Compatible, "http://127.0.0.1:8000/v1", "m1"),
            true,
        )
        .unwrap();
        let second = plan(
            &first.config,
            &setup(SetupProvider::Compatible, "https://b.example/v1", "m2"),
            true,
        )
        .unwrap();
        assert_eq!(second.spec, "custom-2:m2");
        assert_eq!(second.key_env.as_deref(), Some("CUSTOM_2_API_KEY"));
        assert_eq!(
            second.config.providers["custom"].api_key_env.as_deref(),
            Some("CUSTOM_API_KEY")
        );
        // OpenAI behind a gateway never reads (or overwrites) the OpenAI key.
        let gw = plan(
            &Config::default(),
            &setup(SetupProvider::Openai, "https://gw.example/v1", "gpt-4.1"),
            false,
        )
        .unwrap();
        assert_eq!(gw.key_env.as_deref(), Some("OPENAI_CUSTOM_API_KEY"));
    }

    #[test]
    fn a_key_variable_another_provider_reads_is_never_taken() {
        // The user renamed an entry Waymark made, keeping its variable.
        let mine = Config::from_json(
            r#"{"providers": {"work-gw": {"kind": "openai", "base_url": "https://gw-a.example/v1", "api_key_env": "OPENAI_CUSTOM_API_KEY"}}}"#,
        )
        .unwrap();
        let p = plan(
            &mine,
            &setup(SetupProvider::Openai, "https://gw-b.example/v1", "gpt-4.1"),
            false,
        )
        .unwrap();
        assert_eq!(p.spec, "openai-custom-2:gpt-4.1");
        assert_eq!(p.key_env.as_deref(), Some("OPENAI_CUSTOM_2_API_KEY"));
        // Setting up again a server whose entry shares its variable is refused.
        let shared = Config::from_json(
            r#"{"providers": {"custom": {"kind": "openai", "base_url": "http://127.0.0.1:8000/v1", "api_key_env": "OPENAI_API_KEY"}}}"#,
        )
        .unwrap();
        let e = plan(
            &shared,
            &setup(SetupProvider::Compatible, "http://127.0.0.1:8000/v1", "m1"),
            true,
        )
        .unwrap_err();
        assert_eq!(e.key, SETUP_KEY, "{e}");
        assert!(e.message.contains("OPENAI_API_KEY"), "{e}");
    }

    #[test]
    fn settings_that_do_not_hold_are_refused_before_anything_is_stored() {
        let broken = Config {
            turn: crate::settings::TurnConfig {
                max_steps: 0,
                ..Default::default()
            },
            ..Config::default()
        };
        let e = plan(
            &broken,
            &setup(SetupProvider::Compatible, "http://127.0.0.1:8000/v1", "m1"),
            true,
        )
        .unwrap_err();
        assert_eq!(e.key, "turn.max_steps", "{e}");
    }

    #[test]
    fn setting_up_a_server_again_keeps_what_the_user_set_there() {
        let mine = Config::from_json(
            r#"{"providers": {"custom": {"kind": "openai", "base_url": "http://127.0.0.1:8000/v1", "api_key_env": "LAB_KEY", "model": "old", "context_tokens": 32000}}}"#,
        )
        .unwrap();
        let p = plan(
            &mine,
            &setup(SetupProvider::Compatible, "http://127.0.0.1:8000/v1", "m1"),
            true,
        )
        .unwrap();
        let entry = &p.config.providers["custom"];
        assert_eq!(entry.context_tokens, Some(32000));
        assert_eq!(entry.api_key_env.as_deref(), Some("LAB_KEY"));
        assert_eq!(entry.model.as_deref(), Some("m1"));
        assert_eq!(p.key_env.as_deref(), Some("LAB_KEY"));
    }

    #[test]
    fn a_key_never_crosses_the_network_in_plain_http() {
        let key = |url: &str| {
            plan(
                &Config::default(),
                &setup(SetupProvider::Compatible, url, "m1"),
                true,
            )
        };
        let e = key("http://models.example.com/v1").unwrap_err();
        assert_eq!(e.key, SETUP_BASE_URL);
        assert!(e.message.contains("unencrypted"), "{e}");
        for ok in [
            "https://models.example.com/v1",
            "http://127.0.0.1:8000/v1",
            "http://192.168.1.20:8000/v1",
            "http://gpu-box:8000/v1",
            "http://[::1]:8000/v1",
        ] {
            assert!(key(ok).is_ok(), "{ok}");
        }
        // The scheme is kept in lower case, as the settings take it.
        assert_eq!(
            key("HTTP://127.0.0.1:9/v1").unwrap().config.providers["custom"].base_url,
            "http://127.0.0.1:9/v1"
        );
        // Without a key, a plain address is the user's choice.
        assert!(
            plan(
                &Config::default(),
                &setup(
                    SetupProvider::Compatible,
                    "http://models.example.com/v1",
                    "m1"
                ),
                false
            )
            .is_ok()
        );
        // OpenAI's own API always takes a key.
        assert!(
            plan(
                &Config::default(),
                &setup(SetupProvider::Openai, "http://api.openai.com/v1", "gpt-4.1"),
                false
            )
            .is_err()
        );
    }

    #[test]
    fn only_this_machine_and_the_local_network_may_see_a_key_in_plain_http() {
        for (url, safe) in [
            ("https://x.example/v1", true),
            ("http://localhost:11434/v1", true),
            ("http://api.localhost/v1", true),
            ("http://box.local:8000", true),
            ("http://gpu-box/v1", true),
            ("http://127.0.0.1/v1", true),
            ("http://10.1.2.3/v1", true),
            ("http://172.16.0.1/v1", true),
            ("http://169.254.1.1/v1", true),
            ("http://[fd00::1]:8000/v1", true),
            ("http://[fe80::1]/v1", true),
            ("http://x.example/v1", false),
            ("http://8.8.8.8/v1", false),
            ("http://172.32.0.1/v1", false),
            ("http://[2001:db8::1]/v1", false),
            ("http://localhost.example.com/v1", false),
            ("http://localhost./v1", true),
            // Read as the HTTP client reads them: each is a public host.
            ("http://134744072/v1", false),
            ("http://0x8080808/v1", false),
            ("http://gpu%2eexample%2ecom/v1", false),
            ("http://models\u{3002}example\u{3002}com/v1", false),
            ("http://models.example.com\\.local/v1", false),
            ("http://[::ffff:8.8.8.8]/v1", false),
            ("ftp://localhost/v1", false),
        ] {
            assert_eq!(carries_keys_safely(url), safe, "{url}");
        }
    }

    #[test]
    fn bad_answers_name_their_field_in_words() {
        let long_model = "m".repeat(201);
        let long_url = format!("http://h/{}", "a".repeat(3000));
        // (provider, address, model) → the field blamed and words the message holds.
        let cases: [(SetupProvider, &str, &str, &str, &str); 16] = {
            use SetupProvider::{Compatible as C, Openai as O};
            const OPENAI: &str = "https://api.openai.com/v1";
            [
                (O, OPENAI, "", SETUP_MODEL, "name the model"),
                (O, OPENAI, "gpt 4", SETUP_MODEL, "no spaces"),
                (O, OPENAI, &long_model, SETUP_MODEL, "200 characters"),
                (C, "", "m1", SETUP_BASE_URL, "give the server's address"),
                (
                    C,
                    "ftp://host/v1",
                    "m1",
                    SETUP_BASE_URL,
                    "http:// or https://",
                ),
                (
                    C,
                    "localhost:8000",
                    "m1",
                    SETUP_BASE_URL,
                    "http:// or https://",
                ),
                (C, "http:///v1", "m1", SETUP_BASE_URL, "names no server"),
                (
                    C,
                    "http://user:pw@host/v1",
                    "m1",
                    SETUP_BASE_URL,
                    "names no server",
                ),
                (C, "http://host/v1\n", "m1\u{7}", SETUP_MODEL, "control"),
                (
                    C,
                    "https://gw/v1?api-key=sk-1",
                    "m1",
                    SETUP_BASE_URL,
                    "no ?query",
                ),
                (C, "https://gw/v1#x", "m1", SETUP_BASE_URL, "no ?query"),
                (
                    C,
                    "https://gw\u{202e}/v1",
                    "m1",
                    SETUP_BASE_URL,
                    "invisible",
                ),
                (C, "https://gw/v1", "m\u{200b}1", SETUP_MODEL, "invisible"),
                (C, "http://ho st/v1", "m1", SETUP_BASE_URL, "no spaces"),
                (C, &long_url, "m1", SETUP_BASE_URL, "too long"),
                (C, "http://[::1/v1", "m1", SETUP_BASE_URL, "client can read"),
            ]
        };
        let cases = cases.map(|(p, url, model, key, words)| (setup(p, url, model), key, words));
        for (s, key, words) in cases {
            let e = plan(&Config::default(), &s, false).unwrap_err();
            assert_eq!(e.key, key, "{s:?}: {e}");
            assert!(e.message.contains(words), "{s:?}: {e}");
        }
    }
}
