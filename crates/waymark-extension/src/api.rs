//! The session as extensions see it: [`SessionApi`], a cheap handle over the engine's
//! [`SessionHost`]. The engine implements the host; extensions only ever hold the handle, so
//! nothing of the engine's session state is theirs to touch.

use crate::agent::{AgentEnd, AgentSpec};
use crate::clock::Clock;
use crate::error::Result;
use crate::services::Services;
use futures_util::future::BoxFuture;
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use waymark_config::Config;
use waymark_protocol::{EventKind, MessageSource, Position};
use waymark_provider::ModelProvider;
use waymark_store::{HistoryItem, Tx};
use waymark_tools::ToolRegistry;

/// The whole conversation: each item with the turn it belongs to.
pub type History = [(Option<i64>, HistoryItem)];

/// What a closure handed to the host returned; a host that did not run it had nothing to
/// run it on (the session is shutting down).
fn ran<T>(out: Option<T>) -> Result<T> {
    out.ok_or(crate::Error::SessionClosed)
}

/// What the engine offers extensions of one session. Object-safe, so the handle can wrap it;
/// extensions call the typed wrappers on [`SessionApi`].
pub trait SessionHost: Send + Sync {
    fn id(&self) -> &str;
    /// The settings in force now.
    fn config(&self) -> Arc<Config>;
    fn clock(&self) -> &Arc<dyn Clock>;
    /// A fresh id with `prefix`.
    fn new_id(&self, prefix: &str) -> String;
    fn workspace(&self) -> &Path;
    fn session_dir(&self) -> &Path;
    fn artifacts(&self) -> &Path;
    /// One lease-fenced transaction running `f` once; its events are broadcast after commit.
    fn write_with(&self, f: &mut dyn FnMut(&mut Tx<'_>) -> Result<()>) -> Result<()>;
    /// Runs `f` once on a read connection.
    fn read_with(&self, f: &mut dyn FnMut(&rusqlite::Connection) -> Result<()>) -> Result<()>;
    /// Streams an event that is not logged.
    fn transient(&self, kind: EventKind);
    /// The session's event stream from now on (what is committed, and transient events).
    fn subscribe(&self) -> tokio::sync::broadcast::Receiver<waymark_protocol::Event>;
    /// Runs `f` once on the whole conversation.
    fn history_with(&self, f: &mut dyn FnMut(&History)) -> Result<()>;
    /// The session's model now (the user may switch it between two calls).
    fn provider(&self) -> Arc<dyn ModelProvider>;
    /// The model spec of [`SessionHost::provider`] (`openai:gpt-4.1`).
    fn model_spec(&self) -> String;
    /// The session's model now with its spec, read together (one call's route).
    fn route(&self) -> waymark_provider::Route;
    /// A route to the model `spec` names (`provider:model`), resolved as a switch would be
    /// (for a call on another model: the evaluator's `goal.evaluator_model`).
    fn route_for(&self, spec: &str) -> Result<waymark_provider::Route>;
    /// What one call with `usage` that went by `route` is charged now (G-31), replacing the
    /// hold `hold` taken for it.
    fn charge_for(
        &self,
        route: &waymark_provider::Route,
        usage: &waymark_protocol::Usage,
        hold: Option<waymark_store::spend::Hold>,
    ) -> waymark_store::spend::Charge;
    /// Whether model call `request` of turn `turn_id` may start now, and within what: see
    /// [`SessionApi::gate_call`].
    fn gate_call(
        &self,
        api: &SessionApi,
        turn_id: Option<i64>,
        route: &waymark_provider::Route,
        request: &mut waymark_provider::ModelRequest,
    ) -> Result<Gate>;
    /// The session's free tools (those that run with their call alone).
    fn tools(&self) -> &ToolRegistry;
    /// The session's own tool called `name` (a free one or one that works on the session; not
    /// a tool source's), as the guards see it.
    fn tool(&self, name: &str) -> Option<Arc<dyn waymark_tools::Tool>>;
    /// The session's shell sandbox.
    fn sandbox(&self) -> &Arc<waymark_sandbox::Sandbox>;
    /// The environments tool processes start with.
    fn tool_env(&self) -> Arc<waymark_config::secrets::ToolEnv>;
    /// The extensions' typed state of this session.
    fn slots(&self) -> &Slots;
    /// What the extensions offer one another.
    fn services(&self) -> &Services;
    /// Runs `spec` on the engine's agent loop, the one the session's turns run on.
    fn run_agent<'a>(
        &'a self,
        api: &'a SessionApi,
        spec: AgentSpec,
    ) -> BoxFuture<'a, Result<AgentEnd>>;
    /// Asks the idle session to look for work again now (something an extension ran in the
    /// background finished): its extensions' `next_work` and `wake_at` are asked again.
    fn poke(&self);
}

/// The session as extensions see it: its identity, settings, paths, the store (through
/// lease-fenced transactions), its event stream and typed state slots.
#[derive(Clone)]
pub struct SessionApi {
    host: Arc<dyn SessionHost>,
}

impl SessionApi {
    pub fn new(host: Arc<dyn SessionHost>) -> SessionApi {
        SessionApi { host }
    }

    /// The session's event stream from now on. A listener that holds this handle keeps the
    /// session's state alive: end it when the session closes.
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<waymark_protocol::Event> {
        self.host.subscribe()
    }
    pub fn id(&self) -> &str {
        self.host.id()
    }
    /// The settings in force now.
    pub fn config(&self) -> Arc<Config> {
        self.host.config()
    }
    pub fn now_ms(&self) -> i64 {
        self.host.clock().now_ms()
    }
    pub fn clock(&self) -> &Arc<dyn Clock> {
        self.host.clock()
    }
    /// A fresh id with `prefix`.
    pub fn new_id(&self, prefix: &str) -> String {
        self.host.new_id(prefix)
    }
    pub fn workspace(&self) -> &Path {
        self.host.workspace()
    }
    pub fn session_dir(&self) -> &Path {
        self.host.session_dir()
    }
    pub fn artifacts(&self) -> &Path {
        self.host.artifacts()
    }
    /// One lease-fenced transaction; its events are broadcast after commit.
    pub fn write<T>(&self, f: impl FnOnce(&mut Tx<'_>) -> Result<T>) -> Result<T> {
        let mut f = Some(f);
        let mut out = None;
        self.host.write_with(&mut |tx| {
            if let Some(f) = f.take() {
                out = Some(f(tx)?);
            }
            Ok(())
        })?;
        ran(out)
    }
    pub fn read<T>(&self, f: impl FnOnce(&rusqlite::Connection) -> Result<T>) -> Result<T> {
        let mut f = Some(f);
        let mut out = None;
        self.host.read_with(&mut |c| {
            if let Some(f) = f.take() {
                out = Some(f(c)?);
            }
            Ok(())
        })?;
        ran(out)
    }
    /// Streams an event that is not logged.
    pub fn transient(&self, kind: EventKind) {
        self.host.transient(kind)
    }
    /// Runs `f` on the whole conversation.
    pub fn with_history<T>(&self, f: impl FnOnce(&[(Option<i64>, HistoryItem)]) -> T) -> Result<T> {
        let mut f = Some(f);
        let mut out = None;
        self.host.history_with(&mut |h| {
            if let Some(f) = f.take() {
                out = Some(f(h));
            }
        })?;
        ran(out)
    }
    /// The session's model now (the user may switch it between two calls).
    pub fn provider(&self) -> Arc<dyn ModelProvider> {
        self.host.provider()
    }
    /// The model spec of [`SessionApi::provider`].
    pub fn model_spec(&self) -> String {
        self.host.model_spec()
    }
    /// The price of the session's model by the settings in force, if it has one.
    pub fn model_price(&self) -> Option<waymark_config::pricing::Price> {
        self.route().price(&self.config().pricing)
    }
    /// The session's model now with its spec, read together: what one call goes by, is held
    /// to the limits by ([`SessionApi::gate_call`]) and is charged by.
    pub fn route(&self) -> waymark_provider::Route {
        self.host.route()
    }
    /// A route to the model `spec` names (see [`SessionHost::route_for`]).
    pub fn route_for(&self, spec: &str) -> Result<waymark_provider::Route> {
        self.host.route_for(spec)
    }
    /// What one call with `usage` that went by `route` is charged now (G-31), replacing the
    /// hold `hold` taken for it by [`SessionApi::gate_call`].
    pub fn charge_for(
        &self,
        route: &waymark_provider::Route,
        usage: &waymark_protocol::Usage,
        hold: Option<waymark_store::spend::Hold>,
    ) -> waymark_store::spend::Charge {
        self.host.charge_for(route, usage, hold)
    }
    /// Whether model call `request` of turn `turn_id` may start now (G-33): refused when
    /// the daily spending cap or a goal's cost budget is reached or the call's input would
    /// pass it, or when a spending limit is set and the model has no price. When it may, its
    /// `max_output_tokens` may have been cut to what the limits in force can still pay for,
    /// and under a limit its most possible cost is held against the day until the call is
    /// charged (the charge takes the hold; a call that never went out releases it).
    pub fn gate_call(
        &self,
        turn_id: Option<i64>,
        route: &waymark_provider::Route,
        request: &mut waymark_provider::ModelRequest,
    ) -> Result<Gate> {
        self.host.gate_call(self, turn_id, route, request)
    }
    /// The session's free tools (those that run with their call alone).
    pub fn tools(&self) -> &ToolRegistry {
        self.host.tools()
    }
    /// The session's own tool called `name` (a free one or one that works on the session; not
    /// a tool source's), as the guards see it.
    pub fn tool(&self, name: &str) -> Option<Arc<dyn waymark_tools::Tool>> {
        self.host.tool(name)
    }
    /// The session's shell sandbox.
    pub fn sandbox(&self) -> &Arc<waymark_sandbox::Sandbox> {
        self.host.sandbox()
    }
    /// The environments tool processes start with.
    pub fn tool_env(&self) -> Arc<waymark_config::secrets::ToolEnv> {
        self.host.tool_env()
    }
    /// Queues a message at the tail in `tx` (logged as `message.admitted`); a `key` already
    /// used in the session returns the existing message and queues nothing. Returns the
    /// message id.
    pub fn enqueue(
        &self,
        tx: &mut Tx<'_>,
        source: MessageSource,
        text: &str,
        key: Option<&str>,
    ) -> Result<i64> {
        Ok(tx
            .admit_message(self.id(), source, text, Position::Tail, key)?
            .0
            .id)
    }

    /// See [`SessionHost::poke`].
    pub fn poke(&self) {
        self.host.poke()
    }

    /// The session's value of type `T` (created with `T::default()` on first use).
    pub fn state<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        self.host.slots().get::<T>()
    }

    /// The service of type `S` another extension offers, if one does.
    pub fn service<S: ?Sized + 'static>(&self) -> Option<Arc<S>> {
        self.host.services().get::<S>()
    }

    /// Runs an agent that is not the session's turn (the goal's reviewer, a subagent) on
    /// the engine's agent loop: see [`crate::agent`]. A subagent nested too deep is refused.
    pub async fn run_agent(&self, spec: AgentSpec) -> Result<AgentEnd> {
        self.host.run_agent(self, spec).await
    }
}

/// Typed per-session state of extensions, one value per type.
#[derive(Default)]
pub struct Slots(Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>);

impl Slots {
    fn get<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let slot = map
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Arc::new(T::default()));
        match slot.clone().downcast::<T>() {
            Ok(v) => v,
            // The map is keyed by the type, so this is a bug in the slots themselves: a fresh
            // default would silently lose the extension's state, so it stops here instead.
            Err(_) => panic!(
                "the state slot of {} holds a value of another type",
                std::any::type_name::<T>()
            ),
        }
    }
}

#[cfg(test)]
mod slot_tests {
    use super::*;

    #[test]
    fn a_slot_keeps_its_state_and_a_wrong_type_is_never_a_fresh_default() {
        let slots = Slots::default();
        *slots.get::<Mutex<u32>>().lock().unwrap() = 7;
        assert_eq!(*slots.get::<Mutex<u32>>().lock().unwrap(), 7);
        // A value of another type under the key (what the slots never do themselves).
        slots
            .0
            .lock()
            .unwrap()
            .insert(TypeId::of::<Mutex<u64>>(), Arc::new(String::from("wrong")));
        let got = std::panic::catch_unwind(|| slots.get::<Mutex<u64>>());
        assert!(got.is_err(), "a wrong-typed slot gave a fresh default");
    }
}

/// What [`SessionApi::gate_call`] says of a model call.
#[derive(Debug)]
pub enum Gate {
    /// It may go. Under a spending limit its most possible cost is held against the day:
    /// the call's charge takes the hold, and a call that never went out releases it
    /// (`Tx::release`).
    Go(Option<waymark_store::spend::Hold>),
    /// It may not start: why.
    Refused(waymark_protocol::ErrorInfo),
}
