//! Saving an approved plan revision into the workspace (PM-28). The copy is a write like any
//! other: it stays inside the workspace, never lands in `.git/` or on an instruction file,
//! and follows the session's permission mode (refused in `read-only`, confirmed in `ask`).

use waymark_extension::SessionApi;
use waymark_extension::error::{Error, Result};
use waymark_protocol::{EventKind, PermissionMode, PlanStatus};
use waymark_store as store;
use waymark_tools::fs_policy::resolve_target;
use waymark_tools::fs_policy::{in_git_dir, is_instructions_file};

/// Writes a new file at `path` with `bytes`, never replacing one that appears meanwhile:
/// the content goes to a temp file beside it, which is then linked to the name (link fails
/// when the name exists) and removed.
fn write_new(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = waymark_tools::fs_policy::write_temp(path, bytes)?;
    let linked = std::fs::hard_link(&tmp, path);
    let _ = std::fs::remove_file(&tmp);
    linked
}

/// A plan title as a file name part: lowercase letters, digits and dashes, at most 48.
pub fn slug(title: &str) -> String {
    let mut s = String::new();
    for c in title.chars() {
        if c.is_ascii_alphanumeric() {
            s.push(c.to_ascii_lowercase());
        } else if !s.ends_with('-') && !s.is_empty() {
            s.push('-');
        }
        if s.len() >= 48 {
            break;
        }
    }
    let s = s.trim_end_matches('-').to_string();
    if s.is_empty() { "plan".into() } else { s }
}

/// Copies revision `version` of plan `plan_id` (by default the newest approved plan's
/// approved revision) to `path` in the workspace (by default
/// `docs/plans/<date>-<slug>.md`). Returns the path written, relative to the workspace.
pub(crate) fn export(
    api: &SessionApi,
    plan_id: Option<&str>,
    version: Option<u32>,
    path: Option<&str>,
    confirm: bool,
) -> Result<String> {
    let sid = api.id().to_string();
    let (session, plan, rev, text) = api.read(|c| {
        let session =
            store::sessions::get(c, &sid)?.ok_or_else(|| Error::SessionNotFound(sid.clone()))?;
        let plans = super::db::session_plans(c, &sid)?;
        let plan = match plan_id {
            Some(id) => plans
                .into_iter()
                .map(|(p, _)| p)
                .find(|p| p.id == id)
                .ok_or_else(|| Error::refused(format!("this session has no plan {id}")))?,
            None => plans
                .into_iter()
                .map(|(p, _)| p)
                .rfind(|p| p.status == PlanStatus::Approved)
                .ok_or_else(|| Error::refused("no plan of this session was approved yet".into()))?,
        };
        if plan.status != PlanStatus::Approved {
            return Err(Error::refused(format!(
                "plan {} was not approved ({}): only an approved plan is exported",
                plan.id,
                plan.status.as_str()
            )));
        }
        let revisions = super::db::revisions(c, &plan.id)?;
        // The approved revision is the plan's last: approval freezes what was under review.
        let newest = revisions
            .last()
            .ok_or_else(|| Error::Corrupt(format!("approved plan {} has no revision", plan.id)))?
            .version;
        let want = version.unwrap_or(newest);
        if want != newest {
            return Err(Error::refused(format!(
                "v{want} of plan {} was not the approved revision (v{newest} was)",
                plan.id
            )));
        }
        let rev = revisions
            .into_iter()
            .find(|r| r.version == want)
            .ok_or_else(|| Error::refused(format!("plan {} has no revision v{want}", plan.id)))?;
        let bytes = super::db::blob(c, &rev.key)?
            .ok_or_else(|| Error::Corrupt(format!("blob {} is missing", rev.key)))?;
        let text = String::from_utf8(bytes)
            .map_err(|_| Error::Corrupt(format!("blob {} is not UTF-8", rev.key)))?;
        Ok((session, plan, rev, text))
    })?;
    let raw = match path {
        Some(p) if !p.trim().is_empty() => p.trim().to_string(),
        _ => {
            let day = waymark_extension::clock::utc_label(rev.created_at);
            let title = super::review::title(&text).unwrap_or_default();
            format!("docs/plans/{}-{}.md", &day[..10], slug(&title))
        }
    };
    let workspace = api.workspace();
    let target = resolve_target(workspace, &raw).map_err(|e| Error::refused(e.0))?;
    let ws = workspace.canonicalize().map_err(|e| {
        Error::refused(format!(
            "the workspace {} cannot be read: {e}",
            workspace.display()
        ))
    })?;
    if !target.starts_with(&ws) {
        return Err(Error::refused(format!(
            "`{raw}` resolves to {}, outside the workspace ({}): a plan is exported into the workspace only",
            target.display(),
            ws.display()
        )));
    }
    let rel = target.strip_prefix(&ws).unwrap_or(&target).to_path_buf();
    if in_git_dir(&rel)
        || is_instructions_file(std::path::Path::new(&raw))
        || is_instructions_file(&target)
    {
        return Err(Error::refused(format!(
            "`{raw}` is inside `.git/` or an instruction file (AGENTS.md, CLAUDE.md): a plan is not exported there"
        )));
    }
    match session.permission_mode {
        PermissionMode::ReadOnly => {
            return Err(Error::refused(
                "the session is in read-only permission mode: nothing is written".into(),
            ));
        }
        PermissionMode::Ask if !confirm => {
            return Err(Error::NeedsConfirmation(format!(
                "the session's permission mode (ask) asks before each write: confirm writing {} (CLI: --yes)",
                rel.display()
            )));
        }
        PermissionMode::Ask | PermissionMode::AutoEdit | PermissionMode::Auto => {}
    }
    if target.is_dir() {
        return Err(Error::refused(format!("`{raw}` is a folder")));
    }
    // What is there already is looked at, never opened blindly (a FIFO would hang the
    // session) and never replaced.
    match std::fs::symlink_metadata(&target) {
        Ok(m) if !m.file_type().is_file() => {
            return Err(Error::refused(format!(
                "{} exists and is not a regular file; give another path",
                rel.display()
            )));
        }
        Ok(m) => {
            let same = m.len() == text.len() as u64
                && std::fs::read(&target).is_ok_and(|b| b == text.as_bytes());
            if !same {
                return Err(Error::refused(format!(
                    "{} already exists with other content; give another path",
                    rel.display()
                )));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            write_new(&target, text.as_bytes())
                .map_err(|e| Error::refused(format!("cannot write {}: {e}", rel.display())))?
        }
        Err(e) => {
            return Err(Error::refused(format!(
                "cannot look at {}: {e}",
                rel.display()
            )));
        }
    }
    let shown = rel.display().to_string();
    api.write(|tx| {
        Ok(tx.emit(
            api.id(),
            EventKind::PlanExported {
                plan_id: plan.id.clone(),
                version: rev.version,
                path: shown.clone(),
            },
        )?)
    })?;
    Ok(shown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_plain_and_short() {
        assert_eq!(
            slug("Add a retry to the uploader"),
            "add-a-retry-to-the-uploader"
        );
        assert_eq!(slug("../../etc/passwd"), "etc-passwd");
        assert_eq!(slug("Ünïcödé ✓"), "n-c-d");
        assert_eq!(slug(""), "plan");
        assert!(slug(&"word ".repeat(40)).len() <= 48);
    }
}
