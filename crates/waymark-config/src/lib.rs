//! Waymark's settings and what is read from them, below every crate that uses them: the
//! settings file ([`Config`], checked key by key), the MCP servers it names and a project's
//! `.mcp.json` ([`mcp`]), model set-up ([`setup`]) and the providers known by name ([`catalog`]), model prices
//! ([`pricing`]), the budget syntax that settings and goals share ([`budget`]), and knowing
//! and redacting secrets ([`secrets`]). No I/O lives here.

pub mod budget;
pub mod catalog;
mod error;
pub mod hooks;
pub mod mcp;
pub mod pricing;
pub mod secrets;
pub mod settings;
pub mod setup;

pub use error::ConfigError;
pub use settings::*;
