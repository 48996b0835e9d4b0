//! A run an extension asks for (`SessionApi::run_agent`): the goal's reviewer, a subagent.
//! Its messages live in memory and end with it; its calls are logged as events by its actor
//! and go one by one through the policies and the guard chain with nobody to answer them
//! (`turn::run_unattended`). Each model call is charged to the turn the run belongs to, and
//! told to the spec's meter.

use super::{Ended, Failure, Prepared, Recorder};
use crate::error::Result;
use crate::extension::SessionApi;
use crate::extension::agent::{AgentEnd, AgentRole, AgentSpec};
use crate::provider::{ModelMessage, ModelRequest, ModelResponse, ProviderError, Route, ToolSpec};
use crate::session::{FoundTool, SessionCore};
use crate::store::ToolCallRecord;
use crate::store::spend::Hold;
use crate::tools::ToolContext;
use waymark_protocol::{CallActor, ErrorInfo, ToolStatus, Usage};

/// Runs `spec` on the agent loop. A subagent gets the depth it runs at; one nested too deep
/// is refused (`nesting.rs`).
pub(crate) async fn run_agent(
    core: &SessionCore,
    api: &SessionApi,
    spec: AgentSpec,
) -> Result<AgentEnd> {
    let (actor, prefix, level) = match spec.role {
        AgentRole::Verifier => (
            CallActor::Verifier,
            "tv".to_string(),
            super::current_level(),
        ),
        AgentRole::Subagent => {
            let depth = super::depth_under(super::current_level())?;
            // An id of its own, so no two runs' calls share one, in this process or after.
            let prefix = core.journal.ids.new_id("ta");
            (CallActor::Subagent(depth), prefix, depth)
        }
    };
    // A subagent is not offered what acts on the session itself (it is refused anyway).
    let for_actor = |t: &FoundTool| match (actor, t) {
        (CallActor::Subagent(_), FoundTool::Session(s)) => s.for_subagents(),
        _ => true,
    };
    let tools = core
        .toolbox
        .fixed
        .iter()
        .filter(|t| for_actor(t))
        .map(FoundTool::tool)
        .filter(|t| (spec.tools)(t.as_ref()))
        .map(|t| ToolSpec {
            name: t.name().into(),
            description: t.description().into(),
            parameters: t.schema(),
        })
        .collect();
    let ctx = core.tool_context(spec.turn_id, &spec.cancel);
    let cancel = spec.cancel.clone();
    let mut rec = Ephemeral {
        core,
        api,
        actor,
        prefix,
        messages: spec.brief.clone(),
        tools,
        pending: Vec::new(),
        steps: 0,
        ctx,
        spec,
    };
    super::at_level(level, super::run_loop(core, api, &mut rec, &cancel)).await
}

/// The recorder of a run that keeps nothing: its messages in memory, its calls as events.
struct Ephemeral<'a> {
    core: &'a SessionCore,
    api: &'a SessionApi,
    spec: AgentSpec,
    actor: CallActor,
    prefix: String,
    messages: Vec<ModelMessage>,
    tools: Vec<ToolSpec>,
    /// The last reply's calls, until they run.
    pending: Vec<ToolCallRecord>,
    steps: u32,
    ctx: ToolContext,
}

impl Ephemeral<'_> {
    /// Charges what a model call consumed to the run's turn (and its day), and tells the
    /// meter, in one transaction.
    fn charge(&self, route: &Route, usage: Usage, hold: Option<Hold>) -> Result<()> {
        let charge = self.core.charge_for(route, &usage, hold);
        self.core.write(|tx| {
            // A subagent works for the turn: its tokens are the turn's, and count toward a
            // goal's budget with it. The reviewer's are told to its meter instead.
            match self.actor {
                CallActor::Subagent(_) => tx.add_usage(self.spec.turn_id, usage, &charge)?,
                CallActor::Main | CallActor::Verifier => {
                    tx.charge(Some(self.spec.turn_id), &charge)?
                }
            }
            match &self.spec.meter {
                Some(meter) => meter(tx, usage.total(), Some(&charge)),
                None => Ok(()),
            }
        })
    }

    /// Tells the meter that time passed with nothing charged.
    fn tick(&self) -> Result<()> {
        match &self.spec.meter {
            Some(meter) => self.core.write(|tx| meter(tx, 0, None)),
            None => Ok(()),
        }
    }
}

impl Recorder for Ephemeral<'_> {
    type Exit = AgentEnd;

    fn turn_id(&self) -> i64 {
        self.spec.turn_id
    }
    fn call_ids(&self) -> (&str, bool) {
        (&self.prefix, false)
    }
    fn shows_stream(&self) -> bool {
        false
    }
    async fn run_calls(&mut self) -> Result<Option<AgentEnd>> {
        if self.pending.is_empty() {
            return Ok(None);
        }
        let offered = &self.spec.tools;
        for call in std::mem::take(&mut self.pending) {
            // Stop ends the run before its next call, as it ends the turn.
            if self.spec.cancel.is_cancelled() {
                return self.end(Ended::Stopped).map(Some);
            }
            let (status, content) = crate::turn::run_unattended(
                self.core,
                self.api,
                self.actor,
                self.spec.turn_id,
                &call,
                &self.ctx,
                crate::turn::Unattended {
                    when_asked: &self.spec.when_asked,
                    offered: offered.as_ref(),
                    parent: self.spec.parent.as_ref(),
                    asks_user: self.spec.asks_user,
                },
            )
            .await?;
            self.messages.push(ModelMessage::ToolResult {
                call_id: call.wire().to_string(),
                name: call.name.clone(),
                content,
                is_error: status != ToolStatus::Ok,
                images: Vec::new(),
            });
        }
        self.tick()?;
        Ok(None)
    }
    fn steps(&self) -> Result<(u32, u32)> {
        Ok((self.steps, self.spec.max_steps))
    }
    async fn prepare(&mut self, step: u32) -> Result<Prepared<AgentEnd>> {
        // A subagent's calls are the turn's: an extension that ends the turn's model calls
        // (a goal's spent budget) ends the subagent's too.
        if matches!(self.actor, CallActor::Subagent(_))
            && !self
                .core
                .hooks()
                .may_call_model(self.api, self.spec.turn_id, step)?
        {
            self.tick()?;
            return Ok(Prepared::Exit(AgentEnd::Refused(ErrorInfo::new(
                "budget_spent",
                "the goal's budget is used up: the subagent makes no more model calls",
            ))));
        }
        let last = step.saturating_add(1) >= self.spec.max_steps;
        Ok(Prepared::Request(ModelRequest {
            system: self.spec.system.clone(),
            messages: self.messages.clone(),
            tools: if last && self.spec.answer_last {
                Vec::new()
            } else {
                self.tools.clone()
            },
            max_output_tokens: self.spec.max_output_tokens,
            purpose: self.spec.purpose,
        }))
    }
    fn route(&self) -> Route {
        self.spec.route.clone()
    }
    fn charge_unanswered(&mut self, route: &Route, usage: Usage, hold: Option<Hold>) -> Result<()> {
        self.charge(route, usage, hold)
    }
    async fn failed(&mut self, e: &ProviderError, _: &ModelRequest) -> Result<Failure<AgentEnd>> {
        self.tick()?;
        Ok(Failure::Exit(AgentEnd::Failed(e.to_string())))
    }
    fn record_reply(
        &mut self,
        reply: &ModelResponse,
        route: &Route,
        hold: Option<Hold>,
    ) -> Result<()> {
        self.charge(route, reply.usage, hold)?;
        self.steps = self.steps.saturating_add(1);
        if !reply.tool_calls.is_empty() {
            self.messages.push(ModelMessage::Assistant {
                text: reply.text.clone(),
                reasoning: None,
                tool_calls: reply.tool_calls.clone(),
            });
            self.pending = reply.tool_calls.clone();
        }
        Ok(())
    }
    fn end(&mut self, how: Ended) -> Result<AgentEnd> {
        self.tick()?;
        Ok(match how {
            Ended::Answered(text) => AgentEnd::Answered(text),
            Ended::Stopped => AgentEnd::Stopped,
            Ended::StepCapped => AgentEnd::StepCapped,
            Ended::Refused(info) => AgentEnd::Refused(info),
        })
    }
}
