//! The one place the engine calls the extensions' hooks. Each method is one hook of
//! [`Extension`], calls the session's extensions in their order (built-ins first), and says
//! once how their answers combine:
//!
//! - **all**: every extension is called; the first error stops the rest and is returned;
//! - **every**: a yes/no that holds only when every extension says yes (each is asked, so an
//!   error from any of them is never hidden by an earlier no);
//! - **any**: true when one extension says so;
//! - **first**: the first extension that claims it answers, and no later one is asked;
//! - **least**: the smallest of the values given (a time, an amount), none when nobody gives one;
//! - **union** / **in order**: what each gives, together.
//!
//! The rest of the engine never loops over the extensions itself.

use crate::error::Result;
use crate::extension::{
    CallInfo, CallPrep, Dequeue, Extension, PromptCheck, ResultSeen, SessionApi, TurnLost,
    rewind::RewindPlan, rewind::Rewound,
};
use crate::store::{MessageRow, QuestionnaireRow, SessionRow, TurnRow, Tx};
use futures_util::future::BoxFuture;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use waymark_protocol::checkpoint::RewindScope;
use waymark_protocol::cost::Spend;
use waymark_protocol::{Answer, Intent, Op, ToolCallRecord, ToolStatus};

/// The extensions of one session, as the engine calls them.
#[derive(Clone, Copy)]
pub(crate) struct Hooks<'a>(pub(crate) &'a [Arc<dyn Extension>]);

impl<'a> Hooks<'a> {
    // --- Opening and closing --------------------------------------------------------------

    /// All, in order: the session is open, before its first op, outside any transaction.
    pub(crate) async fn after_open(self, api: &SessionApi) -> Result<()> {
        for e in self.0 {
            e.after_open(api).await?;
        }
        Ok(())
    }

    /// In order, until one refuses: a user's message before admission. The contexts the
    /// others add are joined in their order; a refusal ends the check.
    pub(crate) async fn check_prompt(self, api: &SessionApi, text: &str) -> Result<PromptCheck> {
        let mut added: Vec<String> = Vec::new();
        for e in self.0 {
            match e.check_prompt(api, text).await? {
                PromptCheck::Pass => {}
                PromptCheck::Refuse(why) => return Ok(PromptCheck::Refuse(why)),
                PromptCheck::AddContext(c) => added.push(c),
            }
        }
        Ok(if added.is_empty() {
            PromptCheck::Pass
        } else {
            PromptCheck::AddContext(added.join("\n\n"))
        })
    }

    /// Union, in order: what each says a summary of the older history must keep.
    pub(crate) async fn before_compaction(
        self,
        api: &SessionApi,
        reason: waymark_protocol::CompactReason,
    ) -> Result<Vec<String>> {
        let mut keep = Vec::new();
        for e in self.0 {
            keep.extend(e.before_compaction(api, reason).await?);
        }
        Ok(keep)
    }

    /// Union, in order: the notes each adds to a call's result before it is recorded.
    pub(crate) async fn review_result(
        self,
        api: &SessionApi,
        turn_id: i64,
        call: &ToolCallRecord,
        result: &ResultSeen<'_>,
    ) -> Result<Vec<String>> {
        let mut notes = Vec::new();
        for e in self.0 {
            notes.extend(e.review_result(api, turn_id, call, result).await?);
        }
        Ok(notes)
    }

    /// All: the session is opened, in the transaction that takes its lease.
    pub(crate) fn on_open(self, tx: &mut Tx<'_>, session_id: &str, crashed: bool) -> Result<()> {
        self.0
            .iter()
            .try_for_each(|e| e.on_open(tx, session_id, crashed))
    }

    /// All: a call whose process stopped before it was charged is charged to its turn.
    pub(crate) fn on_late_charge(self, tx: &mut Tx<'_>, turn_id: i64, spend: Spend) -> Result<()> {
        self.0
            .iter()
            .try_for_each(|e| e.on_late_charge(tx, turn_id, spend))
    }

    /// All: the session is being shut down.
    pub(crate) fn on_close(self, tx: &mut Tx<'_>, session_id: &str, waiting: bool) -> Result<()> {
        self.0
            .iter()
            .try_for_each(|e| e.on_close(tx, session_id, waiting))
    }

    /// All, after commit: the session's view may have changed.
    pub(crate) fn changed(self, api: &SessionApi) {
        self.0.iter().for_each(|e| e.changed(api));
    }

    // --- Admission and the queue ----------------------------------------------------------

    /// First: the extension that handles the intent; false when none does.
    pub(crate) fn on_intent(
        self,
        tx: &mut Tx<'_>,
        api: &SessionApi,
        intent: Intent,
    ) -> Result<bool> {
        for e in self.0 {
            if e.on_intent(tx, api, intent)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// All: a message was admitted (last in the admission transaction).
    pub(crate) fn on_admit(
        self,
        tx: &mut Tx<'_>,
        api: &SessionApi,
        message: &MessageRow,
        intent: Option<Intent>,
        created: bool,
    ) -> Result<()> {
        self.0
            .iter()
            .try_for_each(|e| e.on_admit(tx, api, message, intent, created))
    }

    /// First: the extension that expands `/name args` into a message's text.
    pub(crate) fn expand(
        self,
        api: &'a SessionApi,
        name: &'a str,
        args: &'a str,
    ) -> Option<BoxFuture<'a, Result<String>>> {
        self.0.iter().find_map(|e| e.expand(api, name, args))
    }

    /// First: the extension that owns a feature's op, and what it answered.
    pub(crate) fn handle_op(self, api: &SessionApi, op: &Op) -> Option<Result<Option<String>>> {
        self.0.iter().find_map(|e| e.handle_op(api, op))
    }

    /// First: the first extension that drops a queued message before it runs, and why.
    pub(crate) fn recheck(self, api: &SessionApi, message: &MessageRow) -> Result<Dequeue> {
        for e in self.0 {
            if let Dequeue::Drop(why) = e.recheck(api, message)? {
                return Ok(Dequeue::Drop(why));
            }
        }
        Ok(Dequeue::Run)
    }

    /// First: asks each extension in turn to queue work, and after each one that did, `look`
    /// for it; the first work found is the answer.
    pub(crate) fn next_work<T>(
        self,
        api: &SessionApi,
        mut look: impl FnMut() -> Result<Option<T>>,
    ) -> Result<Option<T>> {
        for e in self.0 {
            if e.next_work(api)?
                && let Some(found) = look()?
            {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }

    /// Least: when the session must wake by itself next, if any extension asks it to.
    pub(crate) fn wake_at(self, api: &SessionApi) -> Result<Option<i64>> {
        least(self.0.iter().map(|e| e.wake_at(api)))
    }

    // --- A turn ---------------------------------------------------------------------------

    /// All: a turn starts, in its first transaction.
    pub(crate) fn on_turn_start(
        self,
        tx: &mut Tx<'_>,
        api: &SessionApi,
        turn_id: i64,
        message: &MessageRow,
    ) -> Result<()> {
        self.0
            .iter()
            .try_for_each(|e| e.on_turn_start(tx, api, turn_id, message))
    }

    /// All, in order: outside the transaction, before the turn's first model call.
    pub(crate) async fn before_turn(
        self,
        api: &SessionApi,
        turn_id: i64,
        cancel: &CancellationToken,
    ) -> Result<()> {
        for e in self.0 {
            e.before_turn(api, turn_id, cancel).await?;
        }
        Ok(())
    }

    /// All, in order: the turn finished; each settles what it keeps of it.
    pub(crate) async fn settle(
        self,
        api: &SessionApi,
        turn_id: i64,
        cancel: &CancellationToken,
    ) -> Result<()> {
        for e in self.0 {
            e.settle(api, turn_id, cancel).await?;
        }
        Ok(())
    }

    /// Any: the session's sandbox must be probed before the turn.
    pub(crate) fn probes_sandbox(self, session: &SessionRow) -> bool {
        self.0.iter().any(|e| e.probes_sandbox(session))
    }

    /// Every: the turn is offered tools at all.
    pub(crate) fn offers_tools(self, api: &SessionApi, turn_id: i64) -> Result<bool> {
        let mut offer = true;
        for e in self.0 {
            offer &= e.offers_tools(api, turn_id)?;
        }
        Ok(offer)
    }

    /// Union: the tools no extension wants offered this turn.
    pub(crate) fn withheld_tools(
        self,
        api: &SessionApi,
        turn_id: i64,
    ) -> Result<Vec<&'static str>> {
        let mut withheld = Vec::new();
        for e in self.0 {
            withheld.extend_from_slice(e.withheld_tools(api, turn_id)?);
        }
        Ok(withheld)
    }

    /// In order: what each adds to the system prompt.
    pub(crate) fn system_prompts(self, api: &SessionApi, session: &SessionRow) -> Vec<String> {
        self.0
            .iter()
            .filter_map(|e| e.system_prompt(api, session))
            .collect()
    }

    /// Every: another model call may start (the first no ends the turn).
    pub(crate) fn may_call_model(self, api: &SessionApi, turn_id: i64, steps: u32) -> Result<bool> {
        for e in self.0 {
            if !e.may_call_model(api, turn_id, steps)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Least: what the budgets the extensions keep have left to spend, in micro-dollars.
    pub(crate) fn cost_left(self, api: &SessionApi, turn_id: Option<i64>) -> Result<Option<u64>> {
        least(self.0.iter().map(|e| e.cost_left(api, turn_id)))
    }

    /// All: each narrows how an allowed call runs ([`CallPrep`] only narrows).
    pub(crate) fn before_tool(
        self,
        api: &SessionApi,
        call: &CallInfo<'_>,
        prep: &mut CallPrep,
    ) -> Result<()> {
        self.0
            .iter()
            .try_for_each(|e| e.before_tool(api, call, prep))
    }

    /// All, in order: an allowed call is about to run (a checkpoint before a write).
    pub(crate) async fn before_run(
        self,
        api: &SessionApi,
        turn_id: i64,
        call: &ToolCallRecord,
        writes: bool,
    ) -> Result<()> {
        for e in self.0 {
            e.before_run(api, turn_id, call, writes).await?;
        }
        Ok(())
    }

    /// All: a call's result is recorded.
    pub(crate) fn after_tool(
        self,
        api: &SessionApi,
        turn_id: i64,
        call: &ToolCallRecord,
        status: ToolStatus,
    ) -> Result<()> {
        self.0
            .iter()
            .try_for_each(|e| e.after_tool(api, turn_id, call, status))
    }

    /// All: a turn is closed, in the closing transaction.
    pub(crate) fn on_turn_closed(
        self,
        tx: &mut Tx<'_>,
        turn: &TurnRow,
        recovered: bool,
    ) -> Result<()> {
        self.0
            .iter()
            .try_for_each(|e| e.on_turn_closed(tx, turn, recovered))
    }

    /// All: a turn ended without finishing (Stop, a panic, a lost lease).
    pub(crate) fn on_turn_lost(
        self,
        tx: &mut Tx<'_>,
        session_id: &str,
        why: TurnLost,
    ) -> Result<()> {
        self.0
            .iter()
            .try_for_each(|e| e.on_turn_lost(tx, session_id, why))
    }

    // --- Questions and rewind -------------------------------------------------------------

    /// All of those that take the questionnaire's kind: the user answered it.
    pub(crate) fn on_answer(
        self,
        tx: &mut Tx<'_>,
        api: &SessionApi,
        questionnaire: &QuestionnaireRow,
        answer: &Answer,
    ) -> Result<()> {
        self.0
            .iter()
            .filter(|e| e.answers().contains(&questionnaire.kind()))
            .try_for_each(|e| e.on_answer(tx, api, questionnaire, answer))
    }

    /// First: the extension that keeps checkpoints plans the rewind.
    pub(crate) fn rewind(
        self,
        api: &'a SessionApi,
        to: &'a str,
        scope: RewindScope,
    ) -> Option<BoxFuture<'a, Result<RewindPlan>>> {
        self.0.iter().find_map(|e| e.rewind(api, to, scope))
    }

    /// All: the conversation was rewound.
    pub(crate) fn on_rewound(
        self,
        tx: &mut Tx<'_>,
        api: &SessionApi,
        rewound: &Rewound,
    ) -> Result<()> {
        self.0
            .iter()
            .try_for_each(|e| e.on_rewound(tx, api, rewound))
    }
}

/// The smallest value given, each asked in order (the first error stops).
fn least<T: Ord>(answers: impl Iterator<Item = Result<Option<T>>>) -> Result<Option<T>> {
    let mut min: Option<T> = None;
    for a in answers {
        if let Some(v) = a? {
            min = Some(match min {
                Some(m) if m <= v => m,
                _ => v,
            });
        }
    }
    Ok(min)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn least_is_the_smallest_given_and_none_when_none_is() {
        assert_eq!(
            least::<i64>([Ok(None), Ok(Some(5)), Ok(Some(3)), Ok(None)].into_iter()).unwrap(),
            Some(3)
        );
        assert_eq!(
            least::<i64>([Ok(None), Ok(None)].into_iter()).unwrap(),
            None
        );
        assert!(
            least::<i64>([Ok(Some(1)), Err(crate::Error::refused("x".into()))].into_iter())
                .is_err()
        );
    }
}
