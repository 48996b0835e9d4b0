//! Hooks: commands the user sets on session events, in Claude Code's settings shape and with
//! its tool names and fields, so hooks written for Claude Code run unchanged. A hook can only
//! narrow what the session would do: refuse a tool call, have the user asked, refuse a
//! message, or add context for the model. Hooks run with the shell's scrubbed environment in
//! a process group of their own, killed on timeout and on Stop.

pub mod covered;
mod extension;
pub mod fire;
pub mod names;
pub mod outcome;
pub mod project;
pub mod run;
pub mod sources;

pub use extension::HooksExtension;
