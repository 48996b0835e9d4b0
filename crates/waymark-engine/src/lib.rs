//! The Waymark engine: sessions driven as a queue pair (ops in, events out), admission and
//! queue, the turn engine with its `before_tool_call` guard chain and permission guard,
//! context assembly, compaction and project instructions. It knows features only through the
//! extension API (`waymark-extension`), which it implements ([`extension::SessionHost`]);
//! the runtime (`waymark-runtime`) assembles it with the extensions, settings and providers.

mod agent;
pub mod commands;
pub mod compaction;
pub mod context;
mod hooks;
pub mod instructions;
mod open;
pub mod permission;
mod preview;
pub mod session;
mod turn;

pub use open::{Attach, LiveSession, attach};

/// Makes a provider of a model spec: the normalized spec and the provider (what the runtime
/// resolves with the settings and keys in force).
pub type Resolve = std::sync::Arc<
    dyn Fn(&str) -> Result<(String, std::sync::Arc<dyn provider::ModelProvider>)> + Send + Sync,
>;
pub use waymark_config::secrets;
pub use waymark_extension as extension;
pub use waymark_extension::{clock, error, guard, paths};
pub use waymark_protocol::display;
pub use waymark_provider as provider;
pub use waymark_sandbox as sandbox;
pub use waymark_store as store;
pub use waymark_tools as tools;

pub use clock::{Clock, IdSource, ManualClock, RandomIds, SystemClock};
pub use error::{Error, Result};
pub use session::{SessionHandle, SessionSpec};
pub use store::{HistoryItem, MessageRow, QuestionnaireRow, SessionRow, ToolCallRecord, TurnRow};
