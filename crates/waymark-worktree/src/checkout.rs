//! The user's checkout as a merge sees and moves it: what it is in the middle of, what of
//! it the merge must not touch (changes of the user's, by status and by content; ignored
//! files in the way), and the move itself (index, files and branch, never through a link).

use crate::error::io;
use crate::{Result, WorktreeError, at, db, git, index, refs};
use std::path::{Path, PathBuf};

/// The user's checkout at `repo` as a merge sees it: its own git folder (where its index,
/// its references and the marks of an operation in progress are), read once.
pub(crate) struct Checkout<'a> {
    repo: &'a Path,
    gitdir: PathBuf,
    pub(crate) common: PathBuf,
}

impl<'a> Checkout<'a> {
    pub(crate) fn of(repo: &'a Path) -> Result<Checkout<'a>> {
        let gitdir = git::run(repo, &["rev-parse", "--absolute-git-dir"])?;
        let common = git::run(
            repo,
            &["rev-parse", "--path-format=absolute", "--git-common-dir"],
        )?;
        Ok(Checkout {
            repo,
            gitdir: PathBuf::from(gitdir.trim()),
            common: PathBuf::from(common.trim()),
        })
    }

    /// The checkout's git folder, open: reached from the project's common one without
    /// following a link when it lies inside it (a checkout that is itself a linked worktree).
    pub(crate) fn git_dir(&self) -> Result<at::Dir> {
        match self.gitdir.strip_prefix(&self.common) {
            Ok(rel) => at::Dir::open(&self.common)?.walk(&rel.to_string_lossy(), false),
            Err(_) => at::Dir::open(&self.gitdir),
        }
    }

    pub(crate) fn index(&self) -> PathBuf {
        self.gitdir.join("index")
    }

    /// `git <args>` on the checkout's files and index, through `sealed`.
    pub(crate) fn run(&self, sealed: &git::Sealed, args: &[&str]) -> Result<String> {
        sealed.run_in(Some(self.repo), &self.index(), args)
    }

    /// The files among `files` (paths the merge writes) whose content in the checkout is
    /// not `target`'s, read from the files themselves: status trusts the index's record of
    /// each file's size and time, and the index is in a folder the agent writes (an entry
    /// given an edited file's record but the old content's id hides the edit).
    pub(crate) fn edited(
        &self,
        sealed: &git::Sealed,
        target: &str,
        files: &[String],
    ) -> Result<Vec<String>> {
        let wanted: std::collections::HashSet<&str> = files.iter().map(String::as_str).collect();
        let listed = sealed.run(&["ls-tree", "-r", "-z", "--full-tree", target])?;
        let mut regular: Vec<(&str, &str)> = Vec::new();
        let mut edited = Vec::new();
        for entry in listed.split('\0') {
            let Some((meta, path)) = entry.split_once('\t') else {
                continue;
            };
            let mut fields = meta.split(' ');
            let (Some(mode), Some("blob"), Some(id)) =
                (fields.next(), fields.next(), fields.next())
            else {
                continue;
            };
            if !wanted.contains(path) || !matches!(mode, "100644" | "100755" | "120000") {
                continue;
            }
            // A name with a line break cannot go through `--stdin-paths`: counted edited.
            if path.contains('\n') {
                edited.push(path.to_string());
                continue;
            }
            let on_disk = std::fs::symlink_metadata(self.repo.join(path));
            match (mode, on_disk) {
                ("120000", Ok(m)) if m.file_type().is_symlink() => {
                    // A link's content is its target.
                    let target =
                        std::fs::read_link(self.repo.join(path)).map_err(io(path.as_ref()))?;
                    let now = sealed.run_fed(
                        None,
                        &["hash-object", "--stdin"],
                        target.into_os_string().into_encoded_bytes(),
                    )?;
                    if now.trim() != id {
                        edited.push(path.to_string());
                    }
                }
                ("100644" | "100755", Ok(m)) if m.is_file() => regular.push((path, id)),
                // Gone or changed into something else: not the target's file.
                _ => edited.push(path.to_string()),
            }
        }
        if regular.is_empty() {
            return Ok(edited);
        }
        let mut input = regular
            .iter()
            .map(|(p, _)| *p)
            .collect::<Vec<_>>()
            .join("\n");
        input.push('\n');
        let hashed = sealed.run_fed(
            Some(self.repo),
            &["hash-object", "--no-filters", "--stdin-paths"],
            input.into_bytes(),
        )?;
        for ((path, id), now) in regular.iter().zip(hashed.lines()) {
            if now.trim() != *id {
                edited.push(path.to_string());
            }
        }
        Ok(edited)
    }

    /// What the checkout is in the middle of, if anything (a merge, a rebase…): the files
    /// git leaves while one is under way, looked for as files (a tag named `MERGE_HEAD`
    /// is not a merge in progress).
    pub(crate) fn in_progress(&self) -> Result<Option<&'static str>> {
        for (name, what) in [
            ("MERGE_HEAD", "merge"),
            ("CHERRY_PICK_HEAD", "cherry-pick"),
            ("REVERT_HEAD", "revert"),
            ("rebase-merge", "rebase"),
            ("rebase-apply", "rebase or am"),
        ] {
            let path = git::run(
                self.repo,
                &["rev-parse", "--path-format=absolute", "--git-path", name],
            )?;
            if std::fs::symlink_metadata(path.trim()).is_ok() {
                return Ok(Some(what));
            }
        }
        Ok(None)
    }

    /// The paths of the checkout that the worktree's changes would touch although the
    /// checkout ignores them (a changed path that is an ignored file or folder, lies in one,
    /// or is a folder holding one): git's merge overwrites and removes those without asking.
    pub(crate) fn ignored_in_the_way(
        &self,
        sealed: &git::Sealed,
        files: &[String],
    ) -> Result<Vec<String>> {
        let ignored = git::paths(&self.run(
            sealed,
            &[
                "ls-files",
                "-z",
                "--others",
                "--ignored",
                "--exclude-standard",
                "--directory",
            ],
        )?);
        // Untracked repositories inside the checkout: git lists none of their ignored files,
        // yet its merge overwrites them all the same. Whatever is in one counts.
        let nested = git::paths(&self.run(
            sealed,
            &[
                "ls-files",
                "-z",
                "--others",
                "--exclude-standard",
                "--directory",
            ],
        )?)
        .into_iter()
        .filter(|p| p.ends_with('/'));
        let listed: Vec<String> = ignored.into_iter().chain(nested).collect();
        Ok(files
            .iter()
            .filter(|f| listed.iter().any(|l| overlaps(f, l)))
            .cloned()
            .collect())
    }

    /// The checkout's paths with changes of the user's not committed (as `target`, the
    /// commit checked out, has them), and the files the index is told not to look at.
    pub(crate) fn dirty(&self, sealed: &git::Sealed, target: &str) -> Result<Vec<String>> {
        sealed.set_head(Some(target))?;
        let mut dirty = status_paths(&self.run(
            sealed,
            &[
                "--no-optional-locks",
                "status",
                "--porcelain=v1",
                "-z",
                "--untracked-files=all",
                // Both paths of a rename are listed anyway; finding renames would read
                // staged contents the merge's own objects do not hold.
                "--no-renames",
                // A submodule's own changes are not read: that runs git inside its
                // repository, under settings the agent can write. Its commit still counts.
                "--ignore-submodules=dirty",
            ],
        )?);
        // Files the index is told not to look at (assume-unchanged, skip-worktree) may hold
        // the user's edits that status does not show; a failed update would reset them.
        for entry in git::paths(&self.run(sealed, &["ls-files", "-v", "-z"])?) {
            if let Some((tag, path)) = entry.split_once(' ')
                && (tag.chars().all(|c| c.is_ascii_lowercase()) || tag == "S")
            {
                dirty.push(path.to_string());
            }
        }
        Ok(dirty)
    }

    /// Moves the checkout from `target` to `merged`, as `git merge --ff-only` would end but
    /// under none of the project's settings. Under git's lock on the checkout's index, a copy
    /// of the index and the files move first, by a two-tree `read-tree`, which refuses to
    /// overwrite a change of the user's, staged or not, or a file it does not track; then the
    /// branch, only if it is still at `target` (else the files move back); then the new index
    /// takes the old one's place. Staged changes to other files stay staged. Nothing is
    /// written through a link ([`index`], [`refs`]).
    pub(crate) fn fast_forward(
        &self,
        sealed: &git::Sealed,
        branch: &str,
        who: &Option<db::Identity>,
        target: &str,
        merged: &str,
    ) -> Result<()> {
        let work = sealed.scratch(&format!("checkout-index-{:016x}", fastrand::u64(..)));
        let swap =
            index::IndexSwap::begin(self.git_dir()?, work, &self.repo.display().to_string())?;
        let read = |from: &str, to: &str| {
            let args = ["read-tree", "-m", "-u", from, to];
            sealed.run_env(Some(self.repo), Some(swap.path()), &args, &[])
        };
        let out = read(target, merged)?;
        if !out.status.success() {
            return Err(WorktreeError::Git {
                command: "git read-tree -m -u".into(),
                dir: self.repo.display().to_string(),
                message: format!("{}\nNothing was changed.", git::said(&out)),
            });
        }
        let moved = refs::move_branch(
            self.repo,
            &self.common,
            &refs::BranchMove {
                branch,
                old: target,
                new: merged,
                who,
                message: "waymark: merge",
                heads: &[&self.gitdir],
            },
        );
        if let Err(e) = moved {
            let back = read(merged, target);
            let note = match back {
                Ok(b) if b.status.success() => "Nothing was changed.".to_string(),
                _ => format!(
                    "The checkout's files were partly updated to the merge {merged} and the branch {branch} was not moved: run `git checkout -- .` there to put the files back as the index has them."
                ),
            };
            return Err(WorktreeError::Git {
                command: "moving the branch".into(),
                dir: self.repo.display().to_string(),
                message: format!("{e}\n{note}"),
            });
        }
        swap.finish()
    }
}

/// Whether changing `path` touches `listed` (a path, or a folder with its `/`): the same
/// path, one inside the other, or the other way round.
pub(crate) fn overlaps(path: &str, listed: &str) -> bool {
    let l = listed.trim_end_matches('/');
    path == l
        || path.strip_prefix(l).is_some_and(|r| r.starts_with('/'))
        || l.strip_prefix(path).is_some_and(|r| r.starts_with('/'))
}

/// The paths `git status --porcelain=v1 -z` lists, both of a rename or copy.
pub(crate) fn status_paths(z: &str) -> Vec<String> {
    let mut list = Vec::new();
    let mut it = git::paths(z).into_iter();
    while let Some(entry) = it.next() {
        if entry.len() < 4 {
            continue;
        }
        let (code, path) = entry.split_at(3);
        list.push(path.to_string());
        // A rename or copy (in either column) names its source next.
        if code[..2].contains(['R', 'C'])
            && let Some(from) = it.next()
        {
            list.push(from);
        }
    }
    list
}
