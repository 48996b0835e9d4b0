//! The tools offered to the model in the session's current mode, and their size in tokens.

use crate::provider::ToolSpec;
use crate::session::SessionCore;

/// The tools offered in the session's current mode, and their size: the fixed ones built
/// once per mode, listed again only when a tool source's set has changed.
pub(crate) fn tool_specs(
    core: &SessionCore,
    session: &crate::store::SessionRow,
) -> (Vec<ToolSpec>, u64) {
    let mode = session.interaction_mode;
    let config = core.config();
    let cx = crate::extension::source::OfferContext {
        session_id: &core.id,
        mode,
        context_window: config
            .turn
            .context_tokens
            .unwrap_or_else(|| core.provider().context_tokens()),
        config: &config,
    };
    let offered: Vec<_> = core
        .toolbox
        .sources
        .iter()
        .map(|s| s.offered(&cx))
        .collect();
    let generations: Vec<u64> = offered.iter().map(|o| o.generation).collect();
    let mut cache = core
        .toolbox
        .offered
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(c) = cache.get(&mode)
        && c.generations == generations
    {
        return (c.specs.clone(), c.tokens);
    }
    let spec = |t: &dyn crate::tools::Tool| ToolSpec {
        name: t.name().to_string(),
        description: t.description().to_string(),
        parameters: t.schema(),
    };
    let mut specs: Vec<ToolSpec> = core
        .toolbox
        .fixed
        .iter()
        .map(|t| t.tool())
        .filter(|t| t.offered(mode, &config))
        .map(|t| spec(t.as_ref()))
        .collect();
    for o in &offered {
        for t in &o.tools {
            // A fixed tool's name is never a source's: the fixed one is what gets called.
            if core.toolbox.fixed.get(t.name()).is_none()
                && !specs.iter().any(|s| s.name == t.name())
            {
                specs.push(spec(t.as_ref()));
            }
        }
    }
    let tokens = crate::provider::tools_tokens(&specs);
    cache.insert(
        mode,
        crate::session::ToolList {
            generations,
            specs: specs.clone(),
            tokens,
        },
    );
    (specs, tokens)
}
