//! What front ends show of the built-in extensions (no lease needed): the views over their
//! tables that the desktop returns over IPC and the CLI prints, so both show the same thing.

mod board;
mod checkpoint;
mod cost;
mod goal;
mod plan;
pub(crate) mod worktree;
