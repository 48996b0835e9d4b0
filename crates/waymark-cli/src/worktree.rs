//! `waymark worktree`: a session's git worktree (G-34): where it stands, its diff, merging
//! it into the branch it came from, and discarding it.

use crate::term::{errln, outln};
use clap::Subcommand;
use std::io::IsTerminal as _;
use std::process::ExitCode;
use waymark_protocol::checkpoint::PathChangeKind;
use waymark_protocol::display::escape_line;
use waymark_protocol::worktree::MergeStyle;
use waymark_runtime::Runtime;

#[derive(Subcommand)]
pub(crate) enum WorktreeCommand {
    /// The worktree, its branch and what changed in it since it started.
    Status {
        #[arg(long)]
        session: String,
        #[arg(long)]
        json: bool,
    },
    /// What a merge would bring in: the diff from where the worktree meets its branch now
    /// (where it started, unless it synced with that branch since) to what it holds now,
    /// committed or not.
    Diff {
        #[arg(long)]
        session: String,
    },
    /// Commit what the worktree holds and merge its branch into the branch it came from,
    /// with your git identity. Refused, changing nothing, on uncommitted changes to the same
    /// files in that checkout or on a conflict.
    Merge {
        #[arg(long)]
        session: String,
        /// Merge only if it brings in exactly the diff `diff` reported: its tree…
        #[arg(long, requires = "base")]
        tree: Option<String>,
        /// …and the commit it was taken from.
        #[arg(long, requires = "tree")]
        base: Option<String>,
        /// The merge's message (its first line the subject); by default the goal's objective
        /// or the session's title.
        #[arg(long)]
        message: Option<String>,
        /// Land the work as one ordinary commit (the message its whole text) instead of a
        /// merge commit.
        #[arg(long)]
        squash: bool,
        #[arg(long)]
        json: bool,
    },
    /// Remove the worktree and its branch (asks first; --yes does not).
    Discard {
        #[arg(long)]
        session: String,
        #[arg(long)]
        yes: bool,
    },
}

/// The first line the CLI prints of a session made in a worktree.
pub(crate) fn made_line(runtime: &Runtime, id: &str) -> anyhow::Result<String> {
    let Some(w) = runtime.worktree_brief(id)? else {
        return Ok(String::new());
    };
    let included = if w.included.is_empty() {
        String::new()
    } else {
        format!(
            "; copied from .worktreeinclude: {}",
            w.included
                .iter()
                .map(|p| escape_line(p))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    Ok(format!(
        "● worktree {} at {} (from {} at {}){included}",
        escape_line(&w.branch),
        escape_line(&w.path),
        escape_line(&w.base_branch),
        &w.base_commit[..w.base_commit.len().min(10)]
    ))
}

pub(crate) fn worktree_command(
    runtime: &Runtime,
    cmd: WorktreeCommand,
) -> anyhow::Result<ExitCode> {
    match cmd {
        WorktreeCommand::Status { session, json } => {
            let Some(w) = runtime.worktree(&session)? else {
                anyhow::bail!(
                    "session {session} has no worktree of its own: it works in the project's checkout"
                );
            };
            if json {
                crate::term::json(&w, true)?;
                return Ok(ExitCode::SUCCESS);
            }
            outln!(
                "worktree    {} ({})",
                escape_line(&w.path),
                w.state.as_str()
            );
            outln!("branch      {}", escape_line(&w.branch));
            outln!(
                "from        {} at {} in {}",
                escape_line(&w.base_branch),
                &w.base_commit[..w.base_commit.len().min(10)],
                escape_line(&w.repo)
            );
            if let Some(p) = &w.problem {
                outln!("problem     {}", escape_line(p));
            }
            outln!("commits     {}", w.commits);
            outln!("changed     {} file(s)", w.changed.len());
            for c in &w.changed {
                let sign = match c.change {
                    PathChangeKind::Added => '+',
                    PathChangeKind::Modified => '~',
                    PathChangeKind::Deleted => '-',
                };
                outln!("  {sign} {}", escape_line(&c.path));
            }
            Ok(ExitCode::SUCCESS)
        }
        WorktreeCommand::Diff { session } => {
            let d = runtime.worktree_diff(&session)?;
            outln!("{}", d.diff.trim_end());
            errln!(
                "from {} to tree {}: `waymark worktree --session {session} merge --base {} --tree {}` merges exactly this",
                d.base,
                d.tree,
                d.base,
                d.tree
            );
            Ok(ExitCode::SUCCESS)
        }
        WorktreeCommand::Merge {
            session,
            tree,
            base,
            message,
            squash,
            json,
        } => {
            let reviewed = tree
                .zip(base)
                .map(|(tree, base)| waymark_protocol::worktree::WorktreeReview { base, tree });
            let style = if squash {
                MergeStyle::Squash
            } else {
                MergeStyle::Merge
            };
            let done =
                runtime.worktree_merge(&session, reviewed.as_ref(), message.as_deref(), style)?;
            if json {
                crate::term::json(&done, true)?;
                return Ok(ExitCode::SUCCESS);
            }
            if let Some(c) = &done.committed {
                outln!(
                    "committed   {} (what the worktree held{})",
                    &c[..c.len().min(10)],
                    if squash {
                        ", on its own branch only"
                    } else {
                        ""
                    }
                );
            }
            outln!(
                "{:<11} into {} as {} ({} file(s))",
                if squash { "squashed" } else { "merged" },
                escape_line(&done.base_branch),
                &done.merged[..done.merged.len().min(10)],
                done.files.len()
            );
            outln!(
                "The worktree stays until you discard it: waymark worktree --session {session} discard"
            );
            Ok(ExitCode::SUCCESS)
        }
        WorktreeCommand::Discard { session, yes } => {
            // With --yes nothing needs to be read from the worktree (git could wait on what
            // the agent left there); asking shows what would go.
            let w = if yes {
                runtime.worktree_brief(&session)?
            } else {
                runtime.worktree(&session)?
            };
            let Some(w) = w else {
                anyhow::bail!("session {session} has no worktree of its own");
            };
            if !yes {
                if !std::io::stdin().is_terminal() {
                    anyhow::bail!(
                        "discarding removes {} and the branch {} with {} changed file(s): pass --yes to confirm",
                        escape_line(&w.path),
                        escape_line(&w.branch),
                        w.changed.len()
                    );
                }
                errln!(
                    "Discard {} and the branch {} ({} changed file(s), {} commit(s))? This cannot be undone. [y/N]",
                    escape_line(&w.path),
                    escape_line(&w.branch),
                    w.changed.len(),
                    w.commits
                );
                let mut answer = String::new();
                std::io::stdin().read_line(&mut answer)?;
                if !matches!(answer.trim(), "y" | "Y" | "yes") {
                    outln!("Kept.");
                    return Ok(ExitCode::SUCCESS);
                }
            }
            runtime.worktree_discard(&session)?;
            outln!(
                "Discarded {} and its branch {}.",
                escape_line(&w.path),
                escape_line(&w.branch)
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}
