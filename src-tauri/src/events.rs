//! Typed events pushed to the webview (names and payload types reach TypeScript through
//! tauri-specta, so the UI never spells an event name by hand).

use serde::{Deserialize, Serialize};
use specta::Type;
use tauri_specta::Event;

/// One runtime event of an open session, exactly as the runtime reported it.
#[derive(Debug, Clone, Serialize, Deserialize, Type, Event)]
pub struct SessionEvent(pub waymark_protocol::Event);

/// The plan file of the watched session changed on disk (or disappeared).
#[derive(Debug, Clone, Serialize, Deserialize, Type, Event)]
pub struct PlanFileChanged {
    pub session_id: String,
    /// Sanitized HTML of the new content; empty when the file is gone.
    pub html: String,
    pub markdown: Option<String>,
    /// Unix time (ms) when the change was seen, for the repaint-latency benchmark.
    pub seen_at_ms: f64,
}

/// The user asked (through a notification or a second launch) to see a session.
#[derive(Debug, Clone, Serialize, Deserialize, Type, Event)]
pub struct FocusSession {
    pub session_id: String,
}

/// A desktop notification was handed to the system (shown in the UI's status line too).
#[derive(Debug, Clone, Serialize, Deserialize, Type, Event)]
pub struct AlertRaised {
    pub session_id: String,
    pub title: String,
    pub body: String,
}
