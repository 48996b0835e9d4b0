//! The engine as extensions reach it: [`SessionHost`] for the session core. The engine's own
//! code takes the core itself, never a handle it would have to turn back into one.

use super::SessionCore;
use crate::clock::Clock;
use crate::error::Result;
use crate::extension::{SessionApi, SessionHost, Slots};
use crate::provider::ModelProvider;
use crate::store::{self, Tx};
use crate::tools::ToolRegistry;
use std::sync::Arc;
use waymark_config::Config;
use waymark_protocol::EventKind;

impl SessionHost for SessionCore {
    fn id(&self) -> &str {
        &self.id
    }
    fn config(&self) -> Arc<Config> {
        SessionCore::config(self)
    }
    fn clock(&self) -> &Arc<dyn Clock> {
        &self.journal.clock
    }
    fn new_id(&self, prefix: &str) -> String {
        self.journal.ids.new_id(prefix)
    }
    fn poke(&self) {
        self.poked.notify_one();
    }
    fn workspace(&self) -> &std::path::Path {
        &self.places.workspace
    }
    fn session_dir(&self) -> &std::path::Path {
        &self.places.session_dir
    }
    fn artifacts(&self) -> &std::path::Path {
        &self.places.artifacts
    }
    fn write_with(&self, f: &mut dyn FnMut(&mut Tx<'_>) -> Result<()>) -> Result<()> {
        self.write(f)
    }
    fn read_with(&self, f: &mut dyn FnMut(&rusqlite::Connection) -> Result<()>) -> Result<()> {
        self.read(f)
    }
    fn transient(&self, kind: EventKind) {
        SessionCore::transient(self, kind)
    }
    fn subscribe(&self) -> tokio::sync::broadcast::Receiver<waymark_protocol::Event> {
        self.journal.events.subscribe()
    }
    fn history_with(&self, f: &mut dyn FnMut(&[(Option<i64>, store::HistoryItem)])) -> Result<()> {
        self.with_history(f)
    }
    fn provider(&self) -> Arc<dyn ModelProvider> {
        SessionCore::provider(self)
    }
    fn model_spec(&self) -> String {
        SessionCore::model_spec(self)
    }
    fn route(&self) -> crate::provider::Route {
        SessionCore::route(self)
    }
    fn route_for(&self, spec: &str) -> waymark_extension::error::Result<crate::provider::Route> {
        let (spec, provider) = (self.model.resolve)(spec)
            .map_err(|e| waymark_extension::error::Error::refused(e.to_string()))?;
        Ok(crate::provider::Route { spec, provider })
    }
    fn charge_for(
        &self,
        route: &crate::provider::Route,
        usage: &waymark_protocol::Usage,
        hold: Option<store::spend::Hold>,
    ) -> store::spend::Charge {
        SessionCore::charge_for(self, route, usage, hold)
    }
    fn gate_call(
        &self,
        api: &SessionApi,
        turn_id: Option<i64>,
        route: &crate::provider::Route,
        request: &mut crate::provider::ModelRequest,
    ) -> Result<waymark_extension::api::Gate> {
        SessionCore::gate_call(self, api, turn_id, route, request)
    }
    fn tools(&self) -> &ToolRegistry {
        self.toolbox.fixed.free()
    }
    fn tool(&self, name: &str) -> Option<Arc<dyn crate::tools::Tool>> {
        self.toolbox.fixed.get(name).map(super::FoundTool::tool)
    }
    fn sandbox(&self) -> &Arc<crate::sandbox::Sandbox> {
        &self.sandbox
    }
    fn tool_env(&self) -> Arc<crate::secrets::ToolEnv> {
        SessionCore::tool_env(self)
    }
    fn slots(&self) -> &Slots {
        &self.extensions.slots
    }
    fn services(&self) -> &crate::extension::services::Services {
        &self.extensions.services
    }
    fn run_agent<'a>(
        &'a self,
        api: &'a SessionApi,
        spec: crate::extension::agent::AgentSpec,
    ) -> futures_util::future::BoxFuture<'a, Result<crate::extension::agent::AgentEnd>> {
        Box::pin(crate::agent::run_agent(self, api, spec))
    }
}
