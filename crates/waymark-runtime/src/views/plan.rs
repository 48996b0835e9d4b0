//! The plan as front ends read it: the file, the revision under review, every revision and
//! the diff between two (no lease needed). The desktop returns these views over IPC and the
//! CLI prints them, so both show the same thing.

use crate::error::{Error, Result};
use crate::paths;
use crate::runtime::Runtime;
use crate::store;
use std::path::PathBuf;
use waymark_protocol::{
    PlanComment, PlanDiff, PlanRevisionInfo, PlanRevisionText, PlanSummary, PlanView, ReviewState,
    RevisionRef,
};

/// The largest plan file [`Runtime::plan_file`] reads whole.
pub use crate::plan::PLAN_FILE_CAP;

impl Runtime {
    /// Where the plan file of a session is (whether or not it exists).
    pub fn plan_path(&self, id: &str) -> Result<PathBuf> {
        self.store()
            .view(|c| store::sessions::get(c, id))?
            .ok_or_else(|| Error::SessionNotFound(id.to_string()))?;
        Ok(crate::plan::plan_path(&paths::artifacts_dir(
            &paths::session_dir(&self.options().data_dir, id),
        )))
    }

    /// The plan file of a session and its current content (`None` if there is no file),
    /// known secrets redacted. Refused when the file is not a regular file or is larger than
    /// [`PLAN_FILE_CAP`].
    pub fn plan_file(&self, id: &str) -> Result<(PathBuf, Option<String>)> {
        let path = self.plan_path(id)?;
        // Regular files only: a FIFO in its place is refused, not waited on.
        let text = crate::plan::read_plan_file(&path, PLAN_FILE_CAP)
            .map_err(|e| Error::refused(e.to_string()))?
            .map(|r| {
                if r.is_cut() {
                    Err(Error::refused(format!(
                        "{} is {} MiB; plan files larger than {} MiB are not read",
                        path.display(),
                        r.total / (1024 * 1024),
                        PLAN_FILE_CAP / (1024 * 1024)
                    )))
                } else {
                    // Whatever a shell put in the file, known secrets are not shown.
                    let text = String::from_utf8_lossy(&r.bytes);
                    Ok(self.redactor().redact(&text).into_owned())
                }
            })
            .transpose()?;
        Ok((path, text))
    }

    /// The plan revision a pending review would approve, and whether the plan file has
    /// changed since it was submitted (approving implements the submitted revision, not
    /// the file). `None` when no review is pending.
    pub fn plan_under_review(&self, id: &str) -> Result<Option<ReviewState>> {
        let pending = self
            .store()
            .view(|c| store::questionnaires::pending(c, id))?
            .and_then(|q| match q.question {
                waymark_protocol::Question::PlanApproval(review) => Some(review),
                _ => None,
            });
        let Some(review) = pending else {
            return Ok(None);
        };
        let (plan_id, version) = (review.plan_id.as_str(), review.version);
        let frozen = self.plan_revision_text(id, Some(plan_id), version)?;
        let live =
            crate::plan::read_plan_file(&self.plan_path(id)?, crate::plan::SNAPSHOT_LIMIT + 4)
                .ok()
                .flatten()
                .map(|r| {
                    let text = String::from_utf8_lossy(&r.bytes).into_owned();
                    let (snap, _) = crate::plan::snapshot_of(&text, r.total);
                    self.store().redactor().redact(&snap).into_owned()
                });
        Ok(Some(ReviewState {
            plan_id: plan_id.to_string(),
            version,
            file_changed: live.as_deref() != Some(frozen.as_str()),
        }))
    }

    /// Every frozen revision of every plan of the session, oldest first.
    pub fn plan_revisions(&self, id: &str) -> Result<Vec<PlanRevisionInfo>> {
        let rows = self.store().view(|c| {
            store::sessions::get(c, id)?.ok_or_else(|| Error::SessionNotFound(id.to_string()))?;
            crate::plan::db::session_revisions(c, id)
        })?;
        Ok(rows
            .into_iter()
            .map(|r| PlanRevisionInfo {
                plan_id: r.plan_id,
                version: r.version,
                sha256: r.sha256,
                bytes: u32::try_from(r.bytes).unwrap_or(u32::MAX),
                author: r.author,
                truncated: r.truncated,
                created_at: r.created_at,
            })
            .collect())
    }

    /// The Plan tab: the live file rendered (secrets redacted, capped), every revision, and
    /// the review state.
    pub fn plan_view(&self, id: &str) -> Result<PlanView> {
        let path = self.plan_path(id)?;
        let live = crate::plan::live_plan(&path, &self.store().redactor());
        Ok(PlanView {
            path: path.display().to_string(),
            html: live.html,
            markdown: live.markdown,
            revisions: self.plan_revisions(id)?,
            review: self.plan_under_review(id)?,
            plans: self.plans(id)?,
            comments: self.plan_comments(id, None)?,
        })
    }

    /// Every plan of the session, oldest first, with how it ended (PM-26).
    pub fn plans(&self, id: &str) -> Result<Vec<PlanSummary>> {
        self.store().view(|c| {
            store::sessions::get(c, id)?.ok_or_else(|| Error::SessionNotFound(id.to_string()))?;
            let current = crate::plan::db::current_plan(c, id)?.map(|p| p.id);
            let mut out = Vec::new();
            for (p, ended_at) in crate::plan::db::session_plans(c, id)? {
                let newest = crate::plan::db::revisions(c, &p.id)?.pop();
                // A damaged blob costs the title, not the list.
                let title = newest
                    .and_then(|r| crate::plan::db::blob(c, &r.key).ok().flatten())
                    .and_then(|b| crate::plan::review::title(&String::from_utf8_lossy(&b)));
                out.push(PlanSummary {
                    current: current.as_deref() == Some(p.id.as_str()),
                    plan_id: p.id,
                    status: p.status,
                    revisions: p.revisions,
                    title,
                    created_at: p.created_at,
                    ended_at,
                });
            }
            Ok(out)
        })
    }

    /// The comments on a plan's revisions (the current plan's by default), each with where
    /// its passage stands in the plan's newest revision (PM-25).
    pub fn plan_comments(&self, id: &str, plan_id: Option<&str>) -> Result<Vec<PlanComment>> {
        let plan_id = match plan_id {
            Some(p) => p.to_string(),
            None => match self
                .store()
                .view(|c| crate::plan::db::current_plan(c, id))?
            {
                Some(p) => p.id,
                None => return Ok(Vec::new()),
            },
        };
        let (rows, newest) = self.store().view(|c| {
            Ok::<_, crate::error::Error>((
                crate::plan::db::plan_comments(c, &plan_id)?,
                crate::plan::db::revisions(c, &plan_id)?
                    .pop()
                    .map(|r| r.version),
            ))
        })?;
        // A damaged newest revision leaves the comments open rather than the view broken.
        let newest_text = match newest {
            Some(v) if rows.iter().any(|r| r.version < v) => {
                self.plan_revision_text(id, Some(&plan_id), v).ok()
            }
            _ => None,
        };
        Ok(rows
            .into_iter()
            .map(|r| {
                let later = newest_text.as_deref().filter(|_| newest > Some(r.version));
                let (state, now_at) = crate::plan::review::state(&r.quote, r.comment.start, later);
                PlanComment {
                    id: r.id,
                    plan_id: r.plan_id,
                    version: r.version,
                    start: r.comment.start,
                    end: r.comment.end,
                    quote: r.quote,
                    text: r.comment.text,
                    state,
                    now_at,
                }
            })
            .collect())
    }

    /// One revision of any plan of the session, to read: its Markdown and sanitized HTML.
    pub fn plan_revision(&self, id: &str, plan_id: &str, version: u32) -> Result<PlanRevisionText> {
        let markdown = self.plan_revision_text(id, Some(plan_id), version)?;
        Ok(PlanRevisionText {
            plan_id: plan_id.to_string(),
            version,
            html: crate::plan::render::render(&markdown),
            markdown,
        })
    }

    /// The diff from one revision to another (of any plan of the session).
    pub fn plan_diff(&self, id: &str, from: &RevisionRef, to: &RevisionRef) -> Result<PlanDiff> {
        let old = self.plan_revision_text(id, Some(&from.plan_id), from.version)?;
        let new = self.plan_revision_text(id, Some(&to.plan_id), to.version)?;
        Ok(PlanDiff {
            unified: crate::plan::render::unified_diff(
                &old,
                &new,
                &format!("v{}", from.version),
                &format!("v{}", to.version),
            ),
            rows: crate::plan::render::side_by_side(&old, &new),
        })
    }

    /// The content of revision `version` of the session's current plan (or of `plan_id`).
    pub fn plan_revision_text(
        &self,
        id: &str,
        plan_id: Option<&str>,
        version: u32,
    ) -> Result<String> {
        self.store().view(|c| {
            let plan_id = match plan_id {
                Some(p) => p.to_string(),
                None => crate::plan::db::current_plan(c, id)?
                    .map(|p| p.id)
                    .ok_or_else(|| Error::refused("this session has no plan yet".into()))?,
            };
            // Only this session's plans.
            if !crate::plan::db::session_plans(c, id)?
                .iter()
                .any(|(p, _)| p.id == plan_id)
            {
                return Err(Error::refused(format!(
                    "this session has no plan {plan_id}"
                )));
            }
            let rev = crate::plan::db::revisions(c, &plan_id)?
                .into_iter()
                .find(|r| r.version == version)
                .ok_or_else(|| {
                    Error::refused(format!("plan {plan_id} has no revision v{version}"))
                })?;
            let bytes = crate::plan::db::blob(c, &rev.key)?
                .ok_or_else(|| Error::Corrupt(format!("blob {} is missing", rev.key)))?;
            String::from_utf8(bytes)
                .map_err(|_| Error::Corrupt(format!("blob {} is not UTF-8", rev.key)))
        })
    }
}
