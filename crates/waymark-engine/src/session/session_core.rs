//! The session core: what a session is while this process holds its lease, shared by the
//! actor and the running turn. It is made of parts (`parts.rs`: lease, journal, places,
//! toolbox, policy) with the settings, the model route, the extensions and the conversation.

use super::FoundTool;
use super::history::{Conversation, HistoryCache};
use crate::commands::CommandRegistry;
use crate::context::ReminderSource;
use crate::error::{Error, Result};
use crate::extension::SessionApi;
use crate::provider::ModelProvider;
use crate::store::{self, Tx};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use waymark_config::Config;
use waymark_protocol::{Event, EventKind};

/// Everything a turn needs, shared between the actor and the running turn.
pub(crate) struct SessionCore {
    pub id: String,
    pub(crate) lease: super::parts::Lease,
    pub(crate) journal: super::parts::Journal,
    /// The settings; replaced whole when the runtime applies new ones, read per use so a change applies
    /// from the next check on.
    pub(crate) config: std::sync::RwLock<Arc<Config>>,
    /// The model route: a switch applies from the next model call on.
    pub(crate) model: super::parts::ModelRoute,
    pub(crate) toolbox: super::parts::Toolbox,
    pub(crate) policy: super::parts::Policy,
    pub reminders: Vec<Arc<dyn ReminderSource>>,
    pub commands: CommandRegistry,
    pub(crate) places: super::parts::Places,
    /// The conversation as loaded so far; topped up from the store before each model call,
    /// so a call reads only the rows added since the last one.
    pub history: Conversation,
    /// The sandboxed shell of plan mode and the verifier.
    pub sandbox: Arc<crate::sandbox::Sandbox>,
    /// The environment tool processes are derived from.
    pub process_env: Arc<Vec<(std::ffi::OsString, std::ffi::OsString)>>,
    /// The extensions plugged into the session, their state and services.
    pub(crate) extensions: super::parts::Plugged,
    /// The project instructions the session started with (the system prompt carries them).
    pub instructions: String,
    /// `/compact` was typed: compact before the next model call.
    pub compact_requested: Arc<std::sync::atomic::AtomicBool>,
    /// Something an extension ran in the background finished: the idle session looks for
    /// work again ([`SessionHost::poke`]).
    pub poked: tokio::sync::Notify,
}

impl SessionCore {
    pub(crate) fn new_config(config: Config) -> std::sync::RwLock<Arc<Config>> {
        std::sync::RwLock::new(Arc::new(config))
    }

    /// What a tool of turn `turn_id` runs with before its call is decided (no sandbox, no
    /// call id yet); Stop is `cancel`.
    pub(crate) fn tool_context(
        &self,
        turn_id: i64,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> crate::tools::ToolContext {
        let turn = &self.config().turn;
        crate::tools::ToolContext {
            workspace: self.places.workspace.clone(),
            session_dir: self.places.session_dir.clone(),
            artifacts: self.places.artifacts.clone(),
            cancel: cancel.clone(),
            output_limit: turn.tool_output_limit as usize,
            timeouts: crate::tools::Timeouts::from_config(turn),
            turn_id,
            call_id: String::new(),
            sandbox: None,
            protected: Default::default(),
            live: None,
            redactor: None,
            env: self.tool_env(),
        }
    }

    /// The session's model now, with its spec: one call's route.
    pub fn route(&self) -> crate::provider::Route {
        match self.model.current.read() {
            Ok(r) => r.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// The session's model now.
    pub fn provider(&self) -> Arc<dyn ModelProvider> {
        self.route().provider
    }

    pub(super) fn set_provider(&self, spec: String, provider: Arc<dyn ModelProvider>) {
        let route = crate::provider::Route { spec, provider };
        match self.model.current.write() {
            Ok(mut r) => *r = route,
            Err(poisoned) => *poisoned.into_inner() = route,
        }
    }

    /// The model spec the session's calls go to now.
    pub fn model_spec(&self) -> String {
        self.route().spec
    }

    /// What one call with `usage` that went by `route` is charged, by the prices in force
    /// (G-31): its cost, or `None` when the model has no price; it replaces the hold `hold`
    /// taken for the call by [`SessionCore::gate_call`].
    pub(crate) fn charge_for(
        &self,
        route: &crate::provider::Route,
        usage: &waymark_protocol::Usage,
        hold: Option<store::spend::Hold>,
    ) -> store::spend::Charge {
        store::spend::Charge {
            micros: route
                .price(&self.config().pricing)
                .map(|p| p.cost_micros(usage)),
            day: crate::clock::local_day(self.journal.clock.now_ms()),
            hold,
        }
    }

    /// Takes hold `hold` off its day: its call never went out, or was not billed.
    pub(crate) fn release(&self, hold: Option<store::spend::Hold>) -> Result<()> {
        match hold {
            Some(h) => self.write(|tx| Ok(tx.release(h).map(drop)?)),
            None => Ok(()),
        }
    }

    /// Whether the next model call, `request` (of turn `turn_id`, if any), may start, and
    /// within what (G-33): while a spending limit is set (`limits.daily_cost_usd`, or a goal's
    /// cost budget an extension reports through [`Extension::cost_left`]), a call to a model
    /// without a price is refused, since nothing could hold it to the limit; a call is refused
    /// once the day's cap or the goal's budget is reached or when its input alone would pass
    /// what one has left; its output (`max_output_tokens`) is cut to what the tightest limit
    /// can still pay for; and its most possible cost (input and bounded output) is held
    /// against the day until it is charged, so every process's limits see it in flight, and
    /// a process killed mid-call leaves it counted.
    ///
    /// [`Extension::cost_left`]: crate::extension::Extension::cost_left
    pub(crate) fn gate_call(
        &self,
        api: &SessionApi,
        turn_id: Option<i64>,
        route: &crate::provider::Route,
        request: &mut crate::provider::ModelRequest,
    ) -> Result<waymark_extension::Gate> {
        use waymark_extension::Gate;
        use waymark_protocol::cost;
        let config = self.config();
        let cap = config
            .limits
            .daily_cost_usd
            .map(|c| cost::micros(c).unwrap_or(u64::MAX));
        // What a goal's budget has left, by the extensions that keep one.
        let goal_left = self.hooks().cost_left(api, turn_id)?;
        if cap.is_none() && goal_left.is_none() {
            return Ok(Gate::Go(None));
        }
        let Some(price) = route.price(&config.pricing) else {
            let names: Vec<&str> = [
                cap.map(|_| "today's spending cap (limits.daily_cost_usd)"),
                goal_left.map(|_| "the goal's cost budget"),
            ]
            .into_iter()
            .flatten()
            .collect();
            let shown = waymark_protocol::display::escape_line(&route.spec);
            let mut info = waymark_protocol::ErrorInfo::new(
                "unpriced_model",
                format!(
                    "the model `{shown}` has no price, so {} cannot hold its calls: no call is sent to it while a spending limit is set. Give it a price in the settings: `pricing` with the key `{shown}` (or a pattern that matches it, with `*`), and input_per_mtok and output_per_mtok in USD per million tokens; or switch to a priced model.",
                    names.join(" and "),
                ),
            );
            info.setting = Some("pricing".into());
            return Ok(Gate::Refused(info));
        };
        let tokens = request.estimated_tokens();
        let input = price.cost_micros(&waymark_protocol::Usage {
            input_tokens: tokens,
            ..Default::default()
        });
        // A call that could not even pay for its input and one token of output is not sent:
        // it could only pass the limit.
        let one_token = price.output_per_mtok.ceil().max(0.0) as u64;
        let unaffordable = |left: u64| input.saturating_add(one_token) > left;
        // A goal's budget, spent or not: no call of a goal's turn or of its reviewer goes past
        // it (the extension reports no budget for the summary turn, the one call allowed past
        // it, G-22). The goal settles as `budget_limited(cost)`.
        if let Some(left) = goal_left
            && unaffordable(left)
        {
            return Ok(Gate::Refused(waymark_protocol::ErrorInfo::new(
                "cost_budget",
                if left == 0 {
                    "the goal's cost budget is spent: no further model call is made for it. Raise the budget to go on.".to_string()
                } else {
                    format!(
                        "the next model call would pass the goal's cost budget: its input alone (about {tokens} tokens) costs about {}, and {} of the budget is left. Raise the budget to go on.",
                        cost::label(input),
                        cost::label(left)
                    )
                },
            )));
        }
        // The day's part is read and held in one write transaction: two sessions (or
        // processes) checking at the same moment are taken one after the other, each seeing
        // what the other holds.
        let now = self.journal.clock.now_ms();
        let day = crate::clock::local_day(now);
        let sid = self.id.clone();
        let per_token = price.output_per_mtok.max(0.0);
        let max_output = &mut request.max_output_tokens;
        let decided = self.write(|tx| {
            // Calls of the turn in flight beside this one (subagents side by side) may still
            // spend what they hold: the goal's budget has that much less for this one.
            let goal_left = match (goal_left, turn_id) {
                (Some(left), Some(t)) => {
                    Some(left.saturating_sub(store::spend::held_for_turn(tx.conn(), t)?))
                }
                (left, _) => left,
            };
            if let Some(left) = goal_left
                && unaffordable(left)
            {
                return Ok(Err(waymark_protocol::ErrorInfo::new(
                    "cost_budget",
                    format!(
                        "the next model call would pass the goal's cost budget: {} of it is left once the calls already under way are paid for, and this call's input alone costs about {}. Raise the budget to go on.",
                        cost::label(left),
                        cost::label(input)
                    ),
                )));
            }
            let mut tightest = goal_left;
            if let Some(cap) = cap {
                let spent = store::spend::day(tx.conn(), &day)?.micros;
                let left = cap.saturating_sub(spent);
                if left == 0 {
                    return Ok(Err(self.cap_reached(
                        now,
                        format!(
                            "today's spending cap is reached: {} of {} spent on model calls across all sessions (limits.daily_cost_usd). No model call starts until the next day, or raise the cap in the settings.",
                            cost::label(spent),
                            cost::label(cap)
                        ),
                    )));
                }
                if unaffordable(left) {
                    return Ok(Err(self.cap_reached(
                        now,
                        format!(
                            "the next model call would pass today's spending cap: its input alone (about {tokens} tokens) costs about {}, and {} of the cap is left (limits.daily_cost_usd). No model call starts until the next day, or raise the cap in the settings.",
                            cost::label(input),
                            cost::label(left)
                        ),
                    )));
                }
                tightest = Some(tightest.map_or(left, |g| g.min(left)));
            }
            // The output is what a call can still be held to: no more tokens than the
            // tightest limit can pay for once the input is paid.
            if per_token > 0.0
                && let Some(left) = tightest
            {
                let affordable = left.saturating_sub(input) as f64 / per_token;
                let bound = affordable.floor().clamp(1.0, f64::from(u32::MAX)) as u32;
                *max_output = (*max_output).min(bound);
            }
            // The most the call can cost: its input at the input price and every output token
            // it may write.
            let most = input.saturating_add(
                (f64::from(*max_output) * per_token)
                    .ceil()
                    .min(u64::MAX as f64) as u64,
            );
            if most == 0 {
                return Ok(Ok(None));
            }
            Ok(Ok(Some(tx.hold(&sid, turn_id, &day, most)?)))
        })?;
        Ok(match decided {
            Ok(hold) => Gate::Go(hold),
            Err(refused) => Gate::Refused(refused),
        })
    }

    /// The error of a call the daily cap stops: code `spend_cap`, the setting, and when the
    /// day ends.
    fn cap_reached(&self, now: i64, message: String) -> waymark_protocol::ErrorInfo {
        let mut info = waymark_protocol::ErrorInfo::new("spend_cap", message);
        info.setting = Some("limits.daily_cost_usd".into());
        info.resets_in_ms = Some(crate::clock::until_local_midnight(now));
        info
    }

    /// The settings in force now.
    pub fn config(&self) -> Arc<Config> {
        match self.config.read() {
            Ok(c) => c.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// The session's extensions, as the engine calls their hooks.
    pub(crate) fn hooks(&self) -> crate::hooks::Hooks<'_> {
        crate::hooks::Hooks(&self.extensions.all)
    }

    pub(crate) fn set_config(&self, config: Config) {
        match self.config.write() {
            Ok(mut c) => *c = Arc::new(config),
            Err(poisoned) => *poisoned.into_inner() = Arc::new(config),
        }
        // The tools offered depend on the settings (beta flags): list them again.
        self.toolbox
            .offered
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// One transaction, fenced by the lease (a process that lost it writes nothing); its
    /// events are broadcast after commit.
    pub fn write<T>(&self, f: impl FnOnce(&mut Tx<'_>) -> Result<T>) -> Result<T> {
        if self.lease.lost.load(Ordering::Relaxed) {
            return Err(self.lease_error());
        }
        let written = self.journal.store.write(self.journal.clock.now_ms(), |tx| {
            tx.check_lease(&self.id, &self.lease.owner)?;
            f(tx)
        });
        let (value, events) = match written {
            Err(e @ Error::LeaseLost { .. }) => {
                self.lease.lost.store(true, Ordering::Relaxed);
                return Err(e);
            }
            other => other?,
        };
        for e in events {
            self.journal.last_seq.store(e.seq, Ordering::Relaxed);
            let _ = self.journal.events.send(e);
        }
        Ok(value)
    }

    fn lease_error(&self) -> Error {
        let pid = self
            .read(|c| Ok(store::sessions::lease(c, &self.id)?))
            .ok()
            .flatten()
            .map(|l| l.pid)
            .unwrap_or(0);
        Error::LeaseLost {
            id: self.id.clone(),
            pid,
        }
    }

    /// The environments tool processes start with, under the settings in force.
    pub(crate) fn tool_env(&self) -> Arc<crate::secrets::ToolEnv> {
        Arc::new(crate::secrets::ToolEnv::build(
            &self.process_env,
            &self.config(),
        ))
    }

    /// Streams an event that is not written to the log (secrets redacted, as in the log).
    pub fn transient(&self, kind: EventKind) {
        if let EventKind::SessionError { error } = &kind {
            tracing::warn!(code = %error.code, "{}", error.message);
        }
        let kind = match crate::store::redact_event(&self.journal.store.redactor(), kind) {
            Ok((_, k)) => k,
            Err(_) => return,
        };
        let _ = self.journal.events.send(Event {
            session_id: self.id.clone(),
            seq: self.journal.last_seq.load(Ordering::Relaxed),
            ts: self.journal.clock.now_ms(),
            transient: true,
            kind,
        });
    }

    pub fn read<T>(&self, f: impl FnOnce(&rusqlite::Connection) -> Result<T>) -> Result<T> {
        self.journal.store.read(f)
    }

    /// The tool the model calls by `name`: a fixed one, else a tool source's (with the
    /// handle it runs with).
    pub fn find_tool(&self, name: &str) -> Option<FoundTool> {
        if let Some(t) = self.toolbox.fixed.get(name) {
            return Some(t.clone());
        }
        self.toolbox
            .sources
            .iter()
            .find_map(|s| s.find(&self.id, name))
            .map(FoundTool::Session)
    }

    /// The conversation cache, after reading the rows added since last time.
    pub(crate) fn history_cache(&self) -> Result<std::sync::MutexGuard<'_, HistoryCache>> {
        self.history.cache(&self.journal.store, &self.id)
    }

    /// Forgets the loaded history (after a compaction); see [`Conversation::reset`].
    pub(crate) fn reset_history(&self) {
        self.history.reset()
    }

    /// The next request's size in tokens: the history's running total plus `fixed` (system
    /// prompt, reminders, tools), corrected by what the provider reported last time. Costs
    /// the same for any length of history.
    /// Returns the raw estimate and the corrected one.
    pub(crate) fn context_estimate(&self, fixed: u64) -> Result<(u64, u64)> {
        let cache = self.history_cache()?;
        let raw = cache.total.saturating_add(fixed);
        Ok((raw, (raw as f64 * cache.ratio()) as u64))
    }

    /// Learns from a reply how our estimate of a request compares with what the provider
    /// reported; see [`Conversation::observe_input`].
    pub(crate) fn observe_input(&self, estimated: u64, reported: u64) {
        self.history.observe_input(estimated, reported)
    }

    /// After a provider refused a request as too long: estimate higher from now on.
    pub(crate) fn underestimated(&self) {
        self.history.underestimated()
    }

    /// Runs `f` on the whole conversation, after reading the rows added since last time.
    pub fn with_history<T>(
        &self,
        f: impl FnOnce(&[(Option<i64>, store::HistoryItem)]) -> T,
    ) -> Result<T> {
        Ok(f(&self.history_cache()?.items))
    }

    /// Like [`Self::with_history`], without reading the store again unless `reload`: for a
    /// caller that has just read it (nothing was written since).
    pub(crate) fn with_history_loaded<T>(
        &self,
        reload: bool,
        f: impl FnOnce(&[(Option<i64>, store::HistoryItem)]) -> T,
    ) -> Result<T> {
        if reload {
            return self.with_history(f);
        }
        Ok(self.history.with_loaded(f))
    }

    /// Whether the conversation already used `wire_id` for a call.
    pub(crate) fn wire_id_used(&self, wire_id: &str) -> Result<bool> {
        Ok(self.history_cache()?.wire_ids.contains(wire_id))
    }
}

/// Tells every extension its view may have changed (after commit).
pub(crate) fn changed(core: &Arc<SessionCore>) {
    core.hooks().changed(&SessionApi::new(core.clone()));
}
