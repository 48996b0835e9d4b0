//! Model specs (`openai:<model>`, `anthropic:<model>`, `ollama:<model>`, `scripted:<path>`,
//! `<provider name>[:<model>]`) resolved to a provider.

use super::http::HttpOptions;
use super::{AnthropicProvider, Endpoint, ModelProvider, OpenAiProvider, Script, ScriptedProvider};
use std::path::Path;
use std::sync::Arc;
use waymark_config::{Config, ProviderKind};
use waymark_protocol::RouteKind;

/// Why a model spec names no usable model.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// The spec itself is wrong (an unknown provider, no model, a missing script file).
    #[error("invalid model spec `{spec}`: {message}")]
    Invalid { spec: String, message: String },
    /// The provider cannot be built (a key that is not set, a bad script).
    #[error("{0}")]
    Provider(#[from] super::ProviderError),
}

impl SpecError {
    /// The stable code the CLI and IPC report.
    pub fn code(&self) -> &'static str {
        match self {
            SpecError::Invalid { .. } => "invalid_model_spec",
            SpecError::Provider(e) => e.kind.code(),
        }
    }
}

type Result<T> = std::result::Result<T, SpecError>;

/// A resolved model and its normalized spec (scripted paths made absolute).
pub struct ResolvedModel {
    pub spec: String,
    pub provider: Arc<dyn ModelProvider>,
}

const FORMS: &str = "use openai:<model>, anthropic:<model>, ollama:<model>, scripted:<path> or a provider named in the settings";

/// Resolves a spec. `env` reads environment variables (injected for tests); `cwd` anchors
/// a relative scripted path.
pub fn resolve_model(
    spec: &str,
    config: &Config,
    env: &dyn Fn(&str) -> Option<String>,
    cwd: &Path,
    workspace: &Path,
    session_dir: Option<&Path>,
    opts: HttpOptions,
) -> Result<ResolvedModel> {
    let bad = |message: String| SpecError::Invalid {
        spec: spec.to_string(),
        message,
    };
    let (kind, rest) = match spec.split_once(':') {
        Some((k, r)) => (k, r),
        None => (spec, ""),
    };
    let provider: Arc<dyn ModelProvider> = match kind {
        "scripted" => {
            if rest.is_empty() {
                return Err(bad("name the script file: scripted:<path>".into()));
            }
            let path = cwd.join(rest);
            let path = path
                .canonicalize()
                .map_err(|e| bad(format!("{}: {e}", path.display())))?;
            let script = Script::from_file(&path)?;
            let spec = format!("scripted:{}", path.display());
            return Ok(ResolvedModel {
                provider: Arc::new(ScriptedProvider::new(&spec, script, workspace, session_dir)),
                spec,
            });
        }
        name if waymark_config::catalog::builtin(name).is_some() => {
            let Some(b) = waymark_config::catalog::builtin(name) else {
                return Err(bad(FORMS.into()));
            };
            if rest.is_empty() {
                return Err(bad(format!("name the model: {kind}:<model>")));
            }
            let base = env(b.base_env).filter(|b| !b.is_empty());
            let api_key = b.key_env.and_then(env).filter(|k| !k.is_empty());
            if let Some(k) = b.key_env
                && api_key.is_none()
                && base.is_none()
            {
                return Err(SpecError::Provider(super::ProviderError::new(
                    super::ProviderErrorKind::Auth,
                    format!(
                        "{k} is not set: export your API key, or set {} for a server that needs none",
                        b.base_env
                    ),
                )));
            }
            let endpoint = Endpoint {
                label: kind.to_string(),
                base_url: base
                    .unwrap_or_else(|| b.base_url.to_string())
                    .trim_end_matches('/')
                    .to_string(),
                model: rest.to_string(),
                api_key,
                key_hint: b.key_env.unwrap_or("the server settings").to_string(),
                route: RouteKind::OwnKey,
                context_tokens: config
                    .turn
                    .context_tokens
                    .or_else(|| known_context_window(rest))
                    .unwrap_or(b.context_tokens),
                images: true,
            };
            wire(b.anthropic, endpoint, opts)?
        }
        name => {
            let Some(p) = config.providers.get(name) else {
                return Err(bad(FORMS.into()));
            };
            let model = if rest.is_empty() {
                p.model.clone().ok_or_else(|| {
                    bad(format!(
                        "provider `{name}` has no default model: use {name}:<model>"
                    ))
                })?
            } else {
                rest.to_string()
            };
            let api_key = match &p.api_key_env {
                Some(var) => Some(env(var).filter(|k| !k.is_empty()).ok_or_else(|| {
                    SpecError::Provider(super::ProviderError::new(
                        super::ProviderErrorKind::Auth,
                        format!("{var} is not set (provider `{name}` reads its API key from it)"),
                    ))
                })?),
                None => None,
            };
            let known = known_context_window(&model);
            let endpoint = Endpoint {
                label: name.to_string(),
                base_url: p.base_url.trim_end_matches('/').to_string(),
                model,
                api_key,
                key_hint: p
                    .api_key_env
                    .clone()
                    .unwrap_or_else(|| "the provider settings".into()),
                route: p.route,
                context_tokens: config
                    .turn
                    .context_tokens
                    .or(p.context_tokens)
                    .or(known)
                    .unwrap_or(128_000),
                images: p.images,
            };
            wire(p.kind == ProviderKind::Anthropic, endpoint, opts)?
        }
    };
    Ok(ResolvedModel {
        spec: spec.to_string(),
        provider,
    })
}

fn wire(anthropic: bool, endpoint: Endpoint, opts: HttpOptions) -> Result<Arc<dyn ModelProvider>> {
    Ok(if anthropic {
        Arc::new(AnthropicProvider::new(endpoint, opts)?)
    } else {
        Arc::new(OpenAiProvider::new(endpoint, opts)?)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(spec: &str, config: &Config, vars: &[(&str, &str)]) -> Result<ResolvedModel> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        let env = move |k: &str| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        resolve_model(
            spec,
            config,
            &env,
            Path::new("/"),
            Path::new("/ws"),
            None,
            HttpOptions::default(),
        )
    }

    #[test]
    fn builtin_kinds_need_a_key_unless_a_base_url_is_set() {
        let c = Config::default();
        let e = resolve("openai:gpt-x", &c, &[]).err().unwrap();
        assert_eq!(e.code(), "auth");
        assert!(e.to_string().contains("OPENAI_API_KEY"));
        assert!(resolve("openai:gpt-x", &c, &[("OPENAI_API_KEY", "k")]).is_ok());
        assert!(
            resolve(
                "openai:local",
                &c,
                &[("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")]
            )
            .is_ok()
        );
        let r = resolve("ollama:llama3", &c, &[]).unwrap();
        assert_eq!(r.provider.describe(), "ollama:llama3");
        assert_eq!(r.provider.route(), RouteKind::OwnKey);
    }

    #[test]
    fn named_providers_come_from_settings() {
        let c = Config::from_json(
            r#"{"providers":{"kimi":{"kind":"anthropic","base_url":"https://example.invalid/anthropic","api_key_env":"KIMI_KEY","route":"managed","model":"k2"}}}"#,
        )
        .unwrap();
        let e = resolve("kimi", &c, &[]).err().unwrap();
        assert!(e.to_string().contains("KIMI_KEY"), "{e}");
        let r = resolve("kimi", &c, &[("KIMI_KEY", "x")]).unwrap();
        assert_eq!(r.provider.describe(), "kimi:k2");
        assert_eq!(r.provider.route(), RouteKind::Managed);
    }

    #[test]
    fn unknown_or_incomplete_specs_are_clear_errors() {
        let c = Config::default();
        for spec in [
            "gpt4",
            "openai:",
            "scripted:",
            "scripted:/no/such/file.json",
        ] {
            let e = resolve(spec, &c, &[]).err().unwrap();
            assert_eq!(e.code(), "invalid_model_spec", "{spec}: {e}");
        }
    }
}

/// The context window of well-known model families (tokens), by the model name's start;
/// settings (`turn.context_tokens`, a provider's `context_tokens`) and `--context-window`
/// take precedence. Unknown names fall back to the provider kind's default.
pub fn known_context_window(model: &str) -> Option<u64> {
    let m = model.to_ascii_lowercase();
    let m = m.rsplit('/').next().unwrap_or(&m);
    const FAMILIES: &[(&str, u64)] = &[
        ("gpt-4.1", 1_047_576),
        ("gpt-5", 400_000),
        ("gpt-4o", 128_000),
        ("gpt-4-turbo", 128_000),
        ("gpt-4", 8_192),
        ("gpt-3.5", 16_385),
        ("o1", 200_000),
        ("o3", 200_000),
        ("o4", 200_000),
        ("codex", 200_000),
        ("claude", 200_000),
        ("gemini", 1_048_576),
        ("llama3", 128_000),
        ("llama-3", 128_000),
        ("qwen3", 40_960),
        ("qwen2.5", 32_768),
        ("mistral", 32_768),
        ("deepseek", 128_000),
    ];
    FAMILIES
        .iter()
        .find(|(prefix, _)| m.starts_with(prefix))
        .map(|(_, n)| *n)
}

#[cfg(test)]
mod window_tests {
    use super::known_context_window as w;

    #[test]
    fn known_families_have_windows_and_longer_prefixes_win() {
        assert_eq!(w("gpt-4.1-mini"), Some(1_047_576));
        assert_eq!(w("gpt-4o-2024-08-06"), Some(128_000));
        assert_eq!(w("gpt-4-0613"), Some(8_192));
        assert_eq!(w("claude-sonnet-4-5"), Some(200_000));
        assert_eq!(w("meta-llama/Llama3.1-70B"), Some(128_000));
        assert_eq!(w("my-own-model"), None);
    }
}
