//! What the model sees of a server's tool: its name `mcp__<server>__<tool>` within the
//! providers' limits, and an input schema every provider takes.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// The longest tool name the providers take (OpenAI and Anthropic: 64 of `[A-Za-z0-9_-]`).
pub const MAX_NAME: usize = 64;

/// The name the model calls `tool` of `server` by. Characters a provider refuses become
/// `_`; a name that is too long, or that was changed, ends in a short hash of the real names
/// so two tools never share one. Stable: the same tool gets the same name every time.
pub fn model_name(server: &str, tool: &str) -> String {
    let plain = format!("mcp__{}__{}", clean(server), clean(tool));
    let changed = clean(tool) != tool || clean(server) != server;
    if plain.len() <= MAX_NAME && !changed {
        return plain;
    }
    let digest = Sha256::digest(format!("{server}\0{tool}").as_bytes());
    let hash: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    let keep = MAX_NAME - hash.len() - 1;
    let mut cut = plain;
    cut.truncate(keep.min(cut.len()));
    format!("{cut}_{hash}")
}

/// `s` with every character a provider refuses in a name made `_`.
fn clean(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Whether the model name `name` may be one of `server`'s tools: it starts as that
/// server's tools' names do (a long name cut to fit keeps its start).
pub fn may_be_of(server: &str, name: &str) -> bool {
    let prefix = format!("mcp__{}__", clean(server));
    let (name, prefix) = (name.as_bytes(), prefix.as_bytes());
    name.starts_with(prefix)
        || (name.len() == MAX_NAME && prefix.starts_with(&name[..name.len().min(prefix.len())]))
}

/// The largest input schema offered (serialized); a bigger one is left out with a warning.
pub const MAX_SCHEMA_BYTES: usize = 64 * 1024;

/// Why a tool's input schema is not offered.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SchemaError {
    #[error("its input schema has type {0}, and providers take only an object")]
    NotAnObject(Value),
    #[error("its input schema's `properties` is not an object")]
    BadProperties,
    #[error("its input schema is {0} bytes, over the {MAX_SCHEMA_BYTES} offered")]
    TooBig(usize),
}

/// The server's input schema made fit for every provider, or why the tool is left out. The
/// top level must describe an object (a missing `type` is taken as one).
pub fn input_schema(schema: &Map<String, Value>) -> Result<Value, SchemaError> {
    let mut schema = schema.clone();
    match schema.get("type") {
        None => {
            schema.insert("type".into(), Value::String("object".into()));
        }
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => return Err(SchemaError::NotAnObject(other.clone())),
    }
    if let Some(p) = schema.get("properties")
        && !p.is_object()
    {
        return Err(SchemaError::BadProperties);
    }
    if !schema.contains_key("properties") {
        schema.insert("properties".into(), Value::Object(Map::new()));
    }
    let value = Value::Object(schema);
    let size = value.to_string().len();
    if size > MAX_SCHEMA_BYTES {
        return Err(SchemaError::TooBig(size));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn plain_names_stay_readable_and_odd_or_long_ones_are_cut_with_a_stable_hash() {
        assert_eq!(model_name("everything", "echo"), "mcp__everything__echo");
        assert_eq!(
            model_name("everything", "get-sum"),
            "mcp__everything__get-sum"
        );
        let odd = model_name("fs", "read.file");
        assert!(odd.starts_with("mcp__fs__read_file_"), "{odd}");
        // `read.file` and `read_file` must not meet on one name.
        assert_ne!(odd, model_name("fs", "read_file"));
        let long = "x".repeat(100);
        let a = model_name("srv", &long);
        let b = model_name("srv", &format!("{long}y"));
        assert_eq!(a.len(), MAX_NAME);
        assert_ne!(a, b, "two long names that share a start get two names");
        assert_eq!(a, model_name("srv", &long), "stable");
        for n in [&odd, &a, &b] {
            assert!(
                n.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            );
        }
        // Unicode and control characters too.
        let u = model_name("srv", "tööl\u{1b}[31m");
        assert!(u.is_ascii() && u.len() <= MAX_NAME, "{u}");
    }

    #[test]
    fn schemas_a_provider_would_refuse_are_fixed_or_refused() {
        let obj = |v: Value| v.as_object().unwrap().clone();
        assert_eq!(
            input_schema(&obj(json!({}))).unwrap(),
            json!({"type": "object", "properties": {}})
        );
        assert!(input_schema(&obj(json!({"type": "array"}))).is_err());
        assert!(input_schema(&obj(json!({"type": "object", "properties": []}))).is_err());
        let huge = json!({"type": "object", "description": "d".repeat(MAX_SCHEMA_BYTES)});
        assert!(matches!(
            input_schema(&obj(huge)),
            Err(SchemaError::TooBig(_))
        ));
        let good =
            json!({"type": "object", "properties": {"a": {"type": "number"}}, "required": ["a"]});
        assert_eq!(input_schema(&obj(good.clone())).unwrap(), good);
    }

    /// A name the model chose, cut inside a character where a server's prefix would end, is
    /// no panic (red team).
    #[test]
    fn a_name_cut_inside_a_character_is_no_panic() {
        let name = format!("mcp__dead_é{}", "x".repeat(52));
        assert_eq!(name.len(), 64);
        assert!(!may_be_of("dead", &name));
        assert!(may_be_of("dead", "mcp__dead__tool"));
        assert!(!may_be_of("dead", "mcp__deadly__tool"));
    }
}
