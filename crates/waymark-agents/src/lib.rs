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

impl Extension for SubagentsExtension {
    fn name(&self) -> &'static str {
        EXTENSION
    }

    fn session_tools(&self) -> Vec<Arc<dyn SessionTool>> {
        vec![Arc::new(Task)]
    }

    /// `extensions.subagents`: `models` maps the model names agent files use (`sonnet`) to
    /// model specs (`anthropic:claude-sonnet-4-5`).
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
                if key != "models" {
                    return Err(ConfigError::new(
                        key,
                        "is not a setting of subagents (models)",
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
