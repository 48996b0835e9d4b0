//! Integration tests of waymark-runtime: one binary, modules under `suite/`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed test

mod suite;
