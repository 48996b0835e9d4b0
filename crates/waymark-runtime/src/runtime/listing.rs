//! What front ends list and read of sessions (no lease needed): the session list with what
//! each waits on, search, a session's snapshot and view, its instructions, questions and
//! logged events, and its workspace's files for `@` in the composer.

use super::Runtime;
use crate::error::{Error, Result};
use crate::paths;
use crate::store;
use std::path::Path;
use waymark_protocol::{Event, SessionSnapshot, SessionSummary};

/// The longest text [`Runtime::search_sessions`] looks for, in characters.
const MAX_SEARCH: usize = 200;

/// The most sessions one search returns.
const SEARCH_LIMIT: usize = 200;

/// Why session `s` waits on the user, in words: an open review or question, or a goal that
/// is blocked or paused.
fn needs_you(c: &rusqlite::Connection, s: &SessionSummary) -> Result<Option<String>> {
    use waymark_protocol::{GoalStatus, QuestionnaireKind};
    if let Some(q) = &s.pending_questionnaire {
        let kind = store::questionnaires::get(c, q)?.map(|q| q.kind());
        return Ok(Some(
            match kind {
                Some(QuestionnaireKind::PlanApproval) => "A plan waits for your review",
                Some(QuestionnaireKind::Permission) => "A tool call waits for your permission",
                Some(QuestionnaireKind::Elicitation) => "A tool server asks for your input",
                Some(QuestionnaireKind::ProjectServers) => {
                    "The project asks to start its tool servers"
                }
                Some(QuestionnaireKind::ProjectHooks) => "The project asks to run its hooks",
                _ => "A question waits for your answer",
            }
            .to_string(),
        ));
    }
    Ok(
        match crate::goal::db::current_goal(c, &s.id)?.map(|g| g.status) {
            Some(GoalStatus::Blocked) => Some("The goal is blocked: the agent needs you".into()),
            Some(GoalStatus::Paused) => Some("The goal is paused".into()),
            Some(GoalStatus::BudgetLimited) => Some("The goal used up its budget".into()),
            _ => None,
        },
    )
}

impl Runtime {
    /// Files of session `id`'s workspace whose path holds `query`, for `@` in the composer
    /// (at most `limit`; the project's ignore rules apply; hidden files and private places
    /// are left out).
    pub fn workspace_files(&self, id: &str, query: &str, limit: usize) -> Result<Vec<String>> {
        let (_, ws, sd) = self.stored(id)?;
        let sandbox = crate::sandbox::Sandbox::new(
            self.opts.sandbox_helper.clone(),
            (self.opts.env)(crate::sandbox::FORCE_ENV),
            sd.join("sandbox-tmp"),
            self.read_scope(&ws, &paths::artifacts_dir(&sd)),
        );
        let protected = sandbox.protected(&self.config().sandbox.read_allow);
        Ok(crate::tools::mention::workspace_files(
            &ws,
            query,
            limit.min(200),
            &protected,
        ))
    }

    /// All sessions, newest activity first.
    pub fn list_sessions(&self) -> Result<Vec<SessionSummary>> {
        let mut list = self.store.view(store::sessions::list)?;
        self.store.view(|c| {
            // One unreadable row leaves its session without a badge, not the list empty.
            let trees = waymark_worktree::db::on_disk(c).unwrap_or_default();
            for s in &mut list {
                s.needs_you = needs_you(c, s).unwrap_or(None);
                if let Some(w) = trees.iter().find(|w| w.session_id == s.id) {
                    s.worktree = Some(w.branch.clone());
                    // The same folder in the checkout the worktree stands for.
                    let inside = Path::new(&s.workspace)
                        .strip_prefix(&w.path)
                        .unwrap_or(Path::new(""));
                    // (At the checkout's top, `inside` is empty, and joining it would add a
                    // trailing `/` that no other session of the project has.)
                    let project = if inside.as_os_str().is_empty() {
                        Path::new(&w.repo).to_path_buf()
                    } else {
                        Path::new(&w.repo).join(inside)
                    };
                    s.project = Some(project.display().to_string());
                }
            }
            Ok::<_, Error>(())
        })?;
        Ok(list)
    }

    /// The sessions whose messages hold `query` (trimmed; ASCII letters of either case): the
    /// user's messages and the agent's replies. At most 200 ids, newest activity first. A
    /// blank query finds nothing; one longer than 200 characters is refused.
    pub fn search_sessions(&self, query: &str) -> Result<Vec<String>> {
        let query = query.trim();
        if query.is_empty() {
            return Ok(Vec::new());
        }
        let n = query.chars().count();
        if n > MAX_SEARCH {
            return Err(Error::refused(format!(
                "a search is at most {MAX_SEARCH} characters; this one has {n}"
            )));
        }
        Ok(self
            .store
            .view(|c| store::sessions::search(c, query, SEARCH_LIMIT))?)
    }

    /// Everything `show` prints about a session.
    pub fn snapshot(&self, id: &str) -> Result<SessionSnapshot> {
        self.store.view(|c| {
            let summary = store::sessions::list(c)?
                .into_iter()
                .find(|s| s.id == id)
                .ok_or_else(|| Error::SessionNotFound(id.to_string()))?;
            let (turns, usage) = store::turns::totals(c, id)?;
            let spend = store::spend::session(c, id)?;
            Ok(SessionSnapshot {
                summary,
                session_dir: paths::session_dir(&self.opts.data_dir, id)
                    .display()
                    .to_string(),
                messages: store::messages::list(c, id)?,
                questionnaires: store::questionnaires::list(c, id)?
                    .iter()
                    .map(|q| q.info())
                    .collect(),
                turns,
                usage,
                spend,
                cost_usd: spend.usd(),
                last_seq: store::events::last_seq(c, id)?,
            })
        })
    }

    /// An open session as a front end shows it: the snapshot, the newest `newest` logged
    /// events (older pages through [`Runtime::events`]) and the goal.
    pub fn session_view(&self, id: &str, newest: u64) -> Result<waymark_protocol::SessionView> {
        let snapshot = self.snapshot(id)?;
        let after = snapshot.last_seq.saturating_sub(newest);
        let events = self.events(id, after, newest)?;
        Ok(waymark_protocol::SessionView {
            complete: after == 0,
            goal: self.goal(id)?,
            goal_queue: self.goal_queue(id)?,
            snapshot,
            events,
            instructions: self.instructions(id)?.map(|i| i.files).unwrap_or_default(),
        })
    }

    /// The project instructions a session took when it started (None: it started before
    /// Waymark read them).
    pub fn instructions(&self, id: &str) -> Result<Option<crate::instructions::Instructions>> {
        Ok(self.store.view(|c| store::sessions::instructions(c, id))?)
    }

    /// One questionnaire of a session, as front ends show it.
    pub fn questionnaire(
        &self,
        id: &str,
        questionnaire_id: &str,
    ) -> Result<Option<waymark_protocol::QuestionnaireInfo>> {
        Ok(self
            .store
            .view(|c| store::questionnaires::get(c, questionnaire_id))?
            .filter(|q| q.session_id == id)
            .map(|q| q.info()))
    }

    /// Logged events of a session after `after`.
    pub fn events(&self, id: &str, after: u64, limit: u64) -> Result<Vec<Event>> {
        self.store.view(|c| {
            if store::sessions::get(c, id)?.is_none() {
                return Err(Error::SessionNotFound(id.to_string()));
            }
            Ok(store::events::list(c, id, after, limit)?)
        })
    }

    /// The newest `limit` logged events of one type, oldest first.
    pub fn recent_events_of_type(
        &self,
        id: &str,
        type_name: &str,
        limit: u64,
    ) -> Result<Vec<Event>> {
        Ok(self
            .store
            .view(|c| store::events::recent_of_type(c, id, type_name, limit))?)
    }
}
