//! Integration tests of waymark-core: one binary, modules under `suite/`.

mod suite;
