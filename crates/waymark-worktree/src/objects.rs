//! The objects a review or merge reads, copied from the project's object store into a private
//! one and each checked against its name on the way; and the objects a merge made, copied back.
//!
//! The agent writes the project's object store (its commits in the worktree go there), and
//! git never checks a stored object against its name when it reads one. A loose object
//! rewritten under its old name (a blob of the reviewed tree, made to hold other bytes after
//! the review) would have the merge write content the user never saw, under the very ids the
//! review showed. So review and merge read from a folder of their own: git packs the objects
//! named from the project's store and `index-pack` names each by the hash of what it holds, so
//! an object whose content does not match its name arrives under another name, the one asked
//! for is missing, and the review or merge stops before it shows or writes anything.

use crate::error::io;
use crate::git::{self, Sealed, Store};
use crate::{Result, WorktreeError};
use std::path::Path;

/// What one review or merge reads.
pub(crate) struct Needed<'a> {
    /// Commits read as objects (parents of the commits made, merge bases).
    pub commits: &'a [&'a str],
    /// Trees read whole, every folder of them (the reviewed tree, the target's).
    pub trees: &'a [&'a str],
    /// Pairs of trees whose changed files are read (diff, three-way merge).
    pub changes: &'a [(&'a str, &'a str)],
}

/// Most missing objects named in an error.
const NAMED_MAX: usize = 5;

impl Sealed {
    /// Copies `needed` from the project's store into a private one, checking every object
    /// against its name, and has every later call read that one alone. Refused, naming what
    /// is wrong, when an object is missing from the project's store or does not hold what its
    /// name says.
    pub(crate) fn seal_objects(&mut self, needed: &Needed) -> Result<()> {
        let mut ids: Vec<String> = needed.commits.iter().map(|c| c.to_string()).collect();
        ids.extend(needed.trees.iter().map(|t| t.to_string()));
        for tree in needed.trees {
            // Folders only: a submodule's commit (also listed) is in another repository.
            let listed = self.run_on(
                Store::Project,
                &[
                    "ls-tree",
                    "-r",
                    "-d",
                    "-z",
                    "--format=%(objecttype) %(objectname)",
                    tree,
                ],
            )?;
            ids.extend(
                git::paths(&listed)
                    .iter()
                    .filter_map(|l| l.strip_prefix("tree "))
                    .map(str::to_string),
            );
        }
        for (a, b) in needed.changes {
            let raw = self.run_on(
                Store::Project,
                &[
                    "diff-tree",
                    "-r",
                    "-z",
                    "--no-renames",
                    "--no-commit-id",
                    a,
                    b,
                ],
            )?;
            ids.extend(changed_blobs(&raw));
        }
        ids.sort();
        ids.dedup();
        let private = self.dir.join("objects");
        std::fs::create_dir_all(private.join("pack")).map_err(io(&private))?;
        self.copy(Store::Project, Store::Only(&private), &ids)?;
        let missing = self.missing(Store::Only(&private), &ids)?;
        if !missing.is_empty() {
            return Err(self.damaged(named(&missing)));
        }
        // Each commit's tree, read from its checked copy, must be one of the trees copied
        // (the trees were named from the project's copy, which may have changed since).
        for commit in needed.commits {
            let of = format!("{commit}^{{tree}}");
            let tree = self.run_on(Store::Only(&private), &["rev-parse", "--verify", &of])?;
            if !needed.trees.contains(&tree.trim()) {
                return Err(self.damaged(commit.to_string()));
            }
        }
        self.private = Some(private);
        self.copied = ids;
        Ok(())
    }

    /// Copies into the project's store what a merge brings that it lacks: every object made
    /// in the private store (the commits and trees a merge made, merged file contents),
    /// whether the project's store has one of that name or not (`index-pack` compares the
    /// two, so one the agent planted under a name it foresaw, a merged file's, stops the
    /// merge), and every one copied in that it does not have (what git recorded of the
    /// worktree's files, kept out of the project's store until now). The pack is made in the
    /// sealed folder and put into the project's `objects/pack` through folders opened without
    /// following a link.
    pub(crate) fn publish_objects(&self) -> Result<()> {
        let Some(private) = &self.private else {
            return Ok(());
        };
        let all = self.run_on(
            Store::Only(private),
            &[
                "cat-file",
                "--batch-all-objects",
                "--batch-check=%(objectname)",
            ],
        )?;
        let (copied, made): (Vec<String>, Vec<String>) = all
            .lines()
            .map(str::to_string)
            .partition(|id| self.copied.binary_search(id).is_ok());
        let mut out = made;
        out.extend(self.missing(Store::Only(&self.shared), &copied)?);
        if out.is_empty() {
            return Ok(());
        }
        let staging = self.dir.join("outgoing");
        std::fs::create_dir_all(staging.join("pack")).map_err(io(&staging))?;
        self.copy(Store::Only(private), Store::Beside(&staging), &out)?;
        self.place_packs(&staging.join("pack"))
    }

    /// Puts the pack files in `from` into the project's `objects/pack`, each written into a
    /// new file there and renamed into place, the index last (git uses a pack once its index
    /// is there).
    fn place_packs(&self, from: &Path) -> Result<()> {
        let common = self.shared.parent().unwrap_or(&self.shared);
        let packs = crate::at::Dir::open(common)?.walk("objects/pack", true)?;
        let mut names: Vec<String> = std::fs::read_dir(from)
            .map_err(io(from))?
            .flatten()
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .filter(|n| n.starts_with("pack-"))
            .collect();
        names.sort_by_key(|n| n.ends_with(".idx"));
        for name in names {
            let path = from.join(&name);
            let content = std::fs::read(&path).map_err(io(&path))?;
            let temp = format!("tmp_waymark_{:016x}", fastrand::u64(..));
            if !packs.create(&temp, &content)? {
                return Err(self.damaged(format!("{} (taken)", packs.path_of(&temp).display())));
            }
            if let Err(e) = packs.rename(&temp, &name) {
                let _ = packs.remove(&temp);
                return Err(e);
            }
        }
        Ok(())
    }

    fn damaged(&self, ids: String) -> WorktreeError {
        WorktreeError::DamagedObjects {
            repo: self.shared.display().to_string(),
            ids,
        }
    }

    /// Packs `ids` from the store `from` and has `index-pack` take the pack into `to`,
    /// naming each object by its content.
    fn copy(&self, from: Store<'_>, to: Store<'_>, ids: &[String]) -> Result<()> {
        let pack = self.scratch("transfer.pack");
        let file = std::fs::File::create(&pack).map_err(io(&pack))?;
        let mut input = ids.join("\n");
        input.push('\n');
        let c = self.command_on(from, None, None, &["pack-objects", "--stdout", "-q"]);
        let feed = crate::run::Io::FeedInto {
            input: input.into_bytes(),
            to: file,
        };
        let packed = crate::run::run_io(c, &self.dir, feed)
            .and_then(|(out, _)| git::ok(&self.dir, &["pack-objects"], out).map(|_| ()));
        let taken = packed.and_then(|()| {
            let file = std::fs::File::open(&pack).map_err(io(&pack))?;
            let c = self.command_on(to, None, None, &["index-pack", "--stdin"]);
            let (out, _) = crate::run::run_io(
                c,
                &self.dir,
                crate::run::Io::Files {
                    from: Some(file),
                    to: None,
                },
            )?;
            git::ok(&self.dir, &["index-pack", "--stdin"], out).map(|_| ())
        });
        let _ = std::fs::remove_file(&pack);
        taken.map_err(|e| match e {
            WorktreeError::Git { message, .. } if message.contains("COLLISION") => {
                self.damaged(message)
            }
            e => e,
        })
    }

    /// Which of `ids` the store `store` does not hold.
    fn missing(&self, store: Store<'_>, ids: &[String]) -> Result<Vec<String>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut input = ids.join("\n");
        input.push('\n');
        let c = self.command_on(
            store,
            None,
            None,
            &["cat-file", "--batch-check=%(objectname)"],
        );
        let (out, _) = crate::run::run_io(c, &self.dir, crate::run::Io::Feed(input.into_bytes()))?;
        let text = git::ok(&self.dir, &["cat-file", "--batch-check"], out)?;
        Ok(text
            .lines()
            .filter_map(|l| l.strip_suffix(" missing"))
            .map(str::to_string)
            .collect())
    }

    /// `git <args>` on the objects of `store`, which must succeed: its standard output.
    fn run_on(&self, store: Store<'_>, args: &[&str]) -> Result<String> {
        let c = self.command_on(store, None, None, args);
        let (out, _) = crate::run::run(c, &self.dir, None)?;
        git::ok(&self.dir, args, out)
    }
}

/// The blob ids, old and new, of a `diff-tree -r -z` listing (submodules' commits and the
/// zero id of an added or deleted side left out).
fn changed_blobs(raw: &str) -> Vec<String> {
    let mut ids = Vec::new();
    for entry in raw.split('\0').filter(|e| e.starts_with(':')) {
        let fields: Vec<&str> = entry[1..].split(' ').collect();
        let [old_mode, new_mode, old, new, ..] = fields.as_slice() else {
            continue;
        };
        for (mode, id) in [(old_mode, old), (new_mode, new)] {
            if *mode != "160000" && id.bytes().any(|b| b != b'0') {
                ids.push(id.to_string());
            }
        }
    }
    ids
}

/// Up to [`NAMED_MAX`] ids, then how many more.
fn named(ids: &[String]) -> String {
    let mut s: Vec<String> = ids.iter().take(NAMED_MAX).cloned().collect();
    if ids.len() > NAMED_MAX {
        s.push(format!("and {} more", ids.len() - NAMED_MAX));
    }
    s.join(", ")
}

#[cfg(test)]
mod tests {
    #[test]
    fn changed_blobs_skip_submodules_and_absent_sides() {
        let z = "0".repeat(40);
        let (a, b, s) = ("a".repeat(40), "b".repeat(40), "c".repeat(40));
        let raw = format!(
            ":100644 100644 {a} {b} M\0f\0:000000 100644 {z} {b} A\0g\0:160000 160000 {s} {s} M\0sub\0"
        );
        assert_eq!(super::changed_blobs(&raw), [a, b.clone(), b]);
    }
}
