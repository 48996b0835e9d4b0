//! The providers Waymark knows by name: where each is, the variable that moves it, where its
//! key comes from, the format it speaks and the context window it is assumed to have.

/// A provider reached by its own name in a model spec (`openai:gpt-4.1`), with no entry in
/// the settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Builtin {
    /// The spec's prefix.
    pub name: &'static str,
    /// Where it is unless `base_env` says otherwise.
    pub base_url: &'static str,
    /// The environment variable that moves it (a proxy, a local server).
    pub base_env: &'static str,
    /// The variable its API key is read from; none for a local server.
    pub key_env: Option<&'static str>,
    /// Speaks the Anthropic Messages format (else OpenAI Chat Completions).
    pub anthropic: bool,
    /// The context window assumed when the model is not one Waymark knows.
    pub context_tokens: u64,
}

/// The providers known by name.
pub const BUILTINS: [Builtin; 3] = [
    Builtin {
        name: "openai",
        base_url: "https://api.openai.com/v1",
        base_env: "OPENAI_BASE_URL",
        key_env: Some("OPENAI_API_KEY"),
        anthropic: false,
        context_tokens: 128_000,
    },
    Builtin {
        name: "anthropic",
        base_url: "https://api.anthropic.com",
        base_env: "ANTHROPIC_BASE_URL",
        key_env: Some("ANTHROPIC_API_KEY"),
        anthropic: true,
        context_tokens: 200_000,
    },
    Builtin {
        name: "ollama",
        base_url: "http://localhost:11434/v1",
        base_env: "OLLAMA_BASE_URL",
        key_env: None,
        anthropic: false,
        context_tokens: 32_000,
    },
];

/// The provider known by `name`, if it is one.
pub fn builtin(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.name == name)
}
