//! Subagents: the `task` tool and the agents it can hand work to (built-in `explore` and
//! `general`, custom ones from agent files in Claude Code's format). A subagent never gets
//! more than its parent: it runs under the session's mode, grants and guards, its tokens
//! count toward the turn and the goal, Stop ends it, and it cannot start subagents itself.

pub mod definitions;
mod tool;

pub use tool::{MAX_RESULT, NAME, Task, agents};

use std::sync::Arc;
use waymark_extension::{Extension, SessionTool};

/// The name of the extension and of its settings section (`extensions.subagents`).
pub const EXTENSION: &str = "subagents";

/// The extension that offers `task`.
pub struct SubagentsExtension;

/// How many `task` calls of one reply run at once unless the settings say otherwise.
pub const DEFAULT_MAX_PARALLEL: usize = 4;
/// The most `extensions.subagents.max_parallel` may be.
const MAX_PARALLEL_LIMIT: u64 = 16;

impl Extension for SubagentsExtension {
    fn name(&self) -> &'static str {
        EXTENSION
    }

    fn session_tools(&self) -> Vec<Arc<dyn SessionTool>> {
        vec![Arc::new(Task)]
    }

    /// `extensions.subagents`: `models` maps the model names agent files use (`sonnet`) to
    /// model specs (`anthropic:claude-sonnet-4-5`); `max_parallel` is how many `task` calls
    /// of one reply run at once (1 to 16, default 4).
    fn check_settings(
        &self,
        section: &serde_json::Value,
    ) -> Option<Result<(), waymark_config::ConfigError>> {
        use waymark_config::ConfigError;
        let check = || {
            let map = section
                .as_object()
                .ok_or_else(|| ConfigError::new("", "must be an object"))?;
            for (key, value) in map {
                if key == "max_parallel" {
                    if !value
                        .as_u64()
                        .is_some_and(|n| (1..=MAX_PARALLEL_LIMIT).contains(&n))
                    {
                        return Err(ConfigError::new(
                            key,
                            format!("must be a whole number from 1 to {MAX_PARALLEL_LIMIT}"),
                        ));
                    }
                    continue;
                }
                if key != "models" {
                    return Err(ConfigError::new(
                        key,
                        "is not a setting of subagents (models, max_parallel)",
                    ));
                }
                let models = value
                    .as_object()
                    .ok_or_else(|| ConfigError::new("models", "must map names to model specs"))?;
                for (name, spec) in models {
                    if !spec.as_str().is_some_and(|s| s.contains(':')) {
                        return Err(ConfigError::new(
                            format!("models.{name}"),
                            "must be a model spec such as anthropic:claude-sonnet-4-5",
                        ));
                    }
                }
            }
            Ok(())
        };
        Some(check())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_settings_take_models_and_a_sane_max_parallel_and_nothing_else() {
        let check = |v| SubagentsExtension.check_settings(&v).unwrap();
        assert!(
            check(json!({"models": {"sonnet": "anthropic:claude-sonnet-4-5"}, "max_parallel": 2}))
                .is_ok()
        );
        for bad in [json!(0), json!(17), json!(-1), json!("4"), json!(2.5)] {
            let err = check(json!({ "max_parallel": bad })).unwrap_err();
            assert!(err.to_string().contains("from 1 to 16"), "{bad}: {err}");
        }
        let err = check(json!({"max_paralel": 2})).unwrap_err();
        assert!(err.to_string().contains("models, max_parallel"), "{err}");
    }
}
