//! What a checkpoint left out, so a restore to it leaves that alone: the paths it noted
//! (files too big or unreadable, folders it could not list or was told to skip) and what
//! its own ignore files ignore. Without this, something ignored then (or too big then)
//! would look like something that came since, and go.

use crate::walk::{Rules, ignored, rules_of};
use crate::{Entry, Result, Store};
use gix_object::tree::EntryKind;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// The largest ignore file of a checkpoint read back.
const MAX_IGNORE_BLOB: usize = 1024 * 1024;

pub(crate) struct Keeper {
    /// Noted paths, workspace-relative.
    noted: Vec<String>,
    rules: Rules,
}

impl Keeper {
    /// What checkpoint `tree` (its paths `files`) left out, with `left_out` the paths it
    /// noted.
    pub(crate) fn of(
        store: &Store,
        files: &BTreeMap<String, Entry>,
        left_out: &[String],
    ) -> Result<Keeper> {
        let mut found: Vec<(usize, String, Arc<ignore::gitignore::Gitignore>)> = Vec::new();
        for (path, e) in files {
            let (dir, name) = path.rsplit_once('/').unwrap_or(("", path.as_str()));
            if name != ".gitignore"
                || !matches!(e.kind, EntryKind::Blob | EntryKind::BlobExecutable)
            {
                continue;
            }
            let data = store.read(&e.id, gix_object::Kind::Blob)?;
            if data.len() > MAX_IGNORE_BLOB {
                continue;
            }
            if let Some(g) = rules_of(Path::new(dir), &data) {
                let depth = if dir.is_empty() {
                    0
                } else {
                    dir.matches('/').count() + 1
                };
                found.push((depth, dir.to_string(), g));
            }
        }
        // Shallow first: the deepest rule that speaks decides, as in the walk.
        found.sort_by_key(|(d, _, _)| *d);
        Ok(Keeper {
            noted: left_out.iter().filter(|p| !p.is_empty()).cloned().collect(),
            rules: found.into_iter().map(|(_, dir, g)| (dir, g)).collect(),
        })
    }

    /// Whether `path` (or a folder it is in) is something the checkpoint left out.
    pub(crate) fn keeps(&self, path: &str) -> bool {
        let under = |n: &String| path == n || path.starts_with(&format!("{n}/"));
        if self.noted.iter().any(under) {
            return true;
        }
        if self.rules.is_empty() {
            return false;
        }
        let mut at = 0;
        while let Some(i) = path[at..].find('/') {
            if ignored(&self.rules, &path[..at + i], true) {
                return true;
            }
            at += i + 1;
        }
        ignored(&self.rules, path, false)
    }
}
