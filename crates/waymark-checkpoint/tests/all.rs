//! Checkpoints and rewind in real sessions (the runtime, the scripted model).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
