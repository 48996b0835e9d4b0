//! IPC tests through Tauri's mock runtime (no window) and the bindings check.

use super::*;

/// `cargo test export_bindings` regenerates ui/src/bindings.ts; the test script then fails
/// when the committed file differs.
#[test]
fn export_bindings_ts() {
    export_bindings(&specta_builder::<tauri::Wry>()).unwrap();
    let ts = std::fs::read_to_string(BINDINGS_PATH).unwrap();
    assert!(
        ts.contains("answer: (id: string, questionnaireId: string"),
        "{ts}"
    );
    assert!(ts.contains("sessionEvent"), "{ts}");
}
