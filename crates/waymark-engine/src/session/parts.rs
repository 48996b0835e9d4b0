//! The parts a session is made of while this process holds it, each one thing: its lease,
//! its journal (the store, clock and ids its writes and events go through), its model route,
//! its places on disk, its toolbox, the policy its calls go through and its extensions.
//! `SessionCore` holds them with the settings and the conversation.

use super::ToolList;
use crate::clock::{Clock, IdSource};
use crate::guard::ToolGuard;
use crate::store::Store;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex};
use tokio::sync::broadcast;
use waymark_protocol::{Event, InteractionMode};

/// This process's lease on the session; every write checks it is still held.
pub(crate) struct Lease {
    pub(crate) owner: String,
    /// Set once a write found the lease taken: nothing more is written.
    pub(crate) lost: AtomicBool,
}

/// Where the session's writes and events go: the store, the clock and ids they are stamped
/// with, the broadcast of committed events and the last `seq` sent.
pub(crate) struct Journal {
    pub(crate) store: Arc<Store>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) ids: Arc<dyn IdSource>,
    pub(crate) events: broadcast::Sender<Event>,
    pub(crate) last_seq: AtomicU64,
}

/// The session's places on disk, canonical.
pub(crate) struct Places {
    pub(crate) workspace: PathBuf,
    pub(crate) session_dir: PathBuf,
    pub(crate) artifacts: PathBuf,
}

/// The session's tools: the fixed ones, the extensions' session tools (by name; also in
/// `tools`), the sources whose set changes while it runs (MCP servers'), and the lists last
/// offered per interaction mode, with their size in tokens.
pub(crate) struct Toolbox {
    pub(crate) fixed: super::FixedTools,
    pub(crate) sources: Vec<Arc<dyn crate::extension::source::ToolSource>>,
    pub(crate) offered: Mutex<HashMap<InteractionMode, ToolList>>,
}

/// What every call goes through: the extensions' policies (before the guard chain, in hook
/// order), the guard chain, and the permission rules (the permission guard has them too).
pub(crate) struct Policy {
    pub(crate) policies: Vec<Arc<dyn crate::extension::policy::CallPolicy>>,
    pub(crate) guards: Vec<Arc<dyn ToolGuard>>,
    pub(crate) rules: Vec<Arc<dyn crate::extension::rules::PermissionRule>>,
}

/// The model the session's calls go to, with its spec (what they are priced by), swapped
/// whole by `Op::SetModel` and read per call; and how a spec becomes a provider (the
/// runtime's resolution: settings, keys).
pub(crate) struct ModelRoute {
    pub(crate) current: std::sync::RwLock<crate::provider::Route>,
    pub(crate) resolve: crate::Resolve,
}

/// The extensions plugged into the session, in hook order, their per-session state and what
/// they offer one another.
pub(crate) struct Plugged {
    pub(crate) all: Vec<Arc<dyn crate::extension::Extension>>,
    pub(crate) slots: crate::extension::Slots,
    pub(crate) services: Arc<crate::extension::services::Services>,
}
