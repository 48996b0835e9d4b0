//! The goal as front ends read it (no lease needed).

use crate::error::{Error, Result};
use crate::runtime::Runtime;
use crate::store;

impl Runtime {
    /// The session's current goal as front ends show it.
    pub fn goal(&self, id: &str) -> Result<Option<waymark_protocol::GoalSnapshot>> {
        self.store().read(|c| {
            store::sessions::get(c, id)?.ok_or_else(|| Error::SessionNotFound(id.to_string()))?;
            Ok(crate::goal::db::current_goal(c, id)?.map(|g| super::snapshot(&g)))
        })
    }
}
