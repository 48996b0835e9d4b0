//! Test helpers shared by the crates' tests: a dev-dependency only, so no shipped crate widens
//! its API for tests and clippy and nextest see the configuration users build.

// Test helpers stop the test at once when the ground they prepare is missing.
#![allow(clippy::expect_used, clippy::unwrap_used)]

pub mod harness;
pub mod mock_server;
pub mod sandbox_layout;

pub use waymark_fixtures::{session, store_with};
