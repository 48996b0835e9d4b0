//! Test fixtures below the runtime, for the crates whose own tests need a store and the
//! extensions' tables but no running session (plan mode's, goals'): so their test builds
//! compile no engine and no runtime. A dev-dependency only. The runtime harness and the mock
//! model server are in `waymark-test-support`.

// Fixtures stop the test at once when the ground they prepare is missing.
#![allow(clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use waymark_extension::Extension;
use waymark_store::Store;

/// An in-memory database with the tables of `extensions` too.
pub fn store_with(extensions: &[Arc<dyn Extension>]) -> Store {
    let store = Store::open_in_memory().expect("an in-memory database opens");
    waymark_extension::migrate(&store, extensions).expect("the extensions' migrations apply");
    store
}

/// A new session in `store` (workspace `/ws`, permission mode `ask`), each with its own id.
pub fn session(store: &Store) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let id = format!("s{}", N.fetch_add(1, Ordering::Relaxed));
    store
        .write(10, |tx| {
            tx.create_session(&id, "/ws", None, waymark_protocol::PermissionMode::Ask)
        })
        .expect("a test session is created");
    id
}
