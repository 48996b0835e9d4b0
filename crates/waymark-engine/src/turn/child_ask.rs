//! A subagent's permission question, put to the user like the agent's own: the same
//! question, bound to the child's call (its id and digest), answered in the same dialog. The
//! agent's turn parks while it waits, its state in the store; a child's run lives in memory,
//! so it waits in place instead, reading the store for the answer (another process may give
//! it: `waymark answer`), until Stop withdraws the question or [`MAX_WAIT`] passes. A turn
//! that closes however it ends (a crash, a dropped run) withdraws what its children still
//! wait on (`record.rs`).

use crate::error::Result;
use crate::session::SessionCore;
use crate::store::{self, ToolCallRecord};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use waymark_protocol::{Answer, EventKind, PermissionQuestion, Question};

/// How often the waiting child looks for the answer.
const POLL: Duration = Duration::from_millis(100);
/// How long a child waits for an answer before its call is refused (a front end that shows
/// no question while a turn runs, an editor over ACP, would otherwise wait on it for ever).
const MAX_WAIT: Duration = Duration::from_secs(10 * 60);

/// Asks the user `asked` about the child's `call` (whose digest is `fingerprint`) and waits:
/// the answer, or `None` when Stop came first, no answer came in [`MAX_WAIT`] (the question
/// is then withdrawn), or the question went away unanswered.
pub(crate) async fn ask_and_wait(
    core: &SessionCore,
    turn_id: i64,
    (call, fingerprint): (&ToolCallRecord, String),
    mut asked: Box<PermissionQuestion>,
    cancel: &CancellationToken,
) -> Result<Option<Answer>> {
    let sid = core.id.clone();
    let qid = core.journal.ids.new_id("q");
    asked.call_id = call.id.clone();
    asked.call_sha256 = fingerprint;
    let question = Box::new(Question::Permission(*asked));
    core.write(|tx| super::record::open_question(tx, &sid, turn_id, &qid, question))?;
    let until = tokio::time::Instant::now() + MAX_WAIT;
    loop {
        match core.read(|c| Ok(store::questionnaires::get(c, &qid)?))? {
            Some(q) if q.is_pending() => {}
            Some(q) => return Ok(q.answer),
            None => return Ok(None),
        }
        tokio::select! {
            _ = cancel.cancelled() => break,
            _ = tokio::time::sleep_until(until) => break,
            _ = tokio::time::sleep(POLL) => {}
        }
    }
    withdraw(core, &sid, &qid)?;
    Ok(None)
}

/// Withdraws question `qid` if it still waits (an answer that came meanwhile stands).
fn withdraw(core: &SessionCore, sid: &str, qid: &str) -> Result<()> {
    core.write(|tx| {
        let still = store::questionnaires::get(tx.conn(), qid)?.is_some_and(|q| q.is_pending());
        if still {
            tx.withdraw_questionnaire(qid)?;
            tx.emit(
                sid,
                EventKind::QuestionnaireAnswered {
                    id: qid.to_string(),
                    kind: waymark_protocol::QuestionnaireKind::Permission,
                    answer: Answer::Withdraw,
                },
            )?;
        }
        Ok(())
    })
}
