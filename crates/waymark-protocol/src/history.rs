//! The conversation as the runtime keeps it and sends it to the model: entries of the
//! history and the tool calls the model asked for.

use crate::{MessageSource, ToolStatus};
use serde::{Deserialize, Serialize};

/// A tool call requested by the model.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ToolCallRecord {
    /// The runtime's id of the call, unique in the session (empty until the turn engine
    /// records the reply). Questionnaires, events and results name the call by it.
    pub id: String,
    /// The id the call has on the wire: the provider's own when it sent a usable, unused
    /// one, else one made up. Only ever sent back to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wire_id: Option<String>,
    pub name: String,
    pub arguments: serde_json::Value,
}

impl ToolCallRecord {
    /// A call as a provider reports it: its wire id (if it sent one), name and arguments.
    pub fn from_provider(
        wire_id: Option<String>,
        name: String,
        arguments: serde_json::Value,
    ) -> Self {
        ToolCallRecord {
            id: String::new(),
            wire_id: wire_id.filter(|w| !w.is_empty()),
            name,
            arguments,
        }
    }

    /// The id to send to the model for this call.
    pub fn wire(&self) -> &str {
        self.wire_id.as_deref().unwrap_or(&self.id)
    }
}

/// An image a tool returned (an MCP server's image content): passed to models that take
/// images and shown in the transcript. Its one-line description stays in the text result.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ToolImage {
    /// One of [`IMAGE_TYPES`].
    pub mime: String,
    /// The image, base64.
    pub data: String,
}

/// The image types passed on (those every provider with images takes).
pub const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];
/// The most images one result (or one message) passes on.
pub const MAX_IMAGES: usize = 4;
/// The largest image a user attaches, in bytes (before it is fitted).
pub const MAX_ATTACHED_IMAGE_BYTES: usize = 5 * 1024 * 1024;
/// The largest image passed on, in base64 bytes (a larger one is only described).
pub const MAX_IMAGE_BASE64: usize = 1024 * 1024;

/// One entry of the conversation.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum HistoryItem {
    User {
        text: String,
        source: MessageSource,
        /// The images the user attached, checked and fitted when admitted.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ToolImage>,
    },
    Assistant {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reasoning: Option<String>,
        #[serde(default)]
        tool_calls: Vec<ToolCallRecord>,
    },
    ToolResult {
        call_id: String,
        /// The call's wire id (see [`ToolCallRecord::wire_id`]); older rows lack it and
        /// used `call_id` on the wire.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        wire_id: Option<String>,
        name: String,
        status: ToolStatus,
        content: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ToolImage>,
    },
}

impl HistoryItem {
    /// The kind's name, as stored.
    pub fn kind(&self) -> &'static str {
        match self {
            HistoryItem::User { .. } => "user",
            HistoryItem::Assistant { .. } => "assistant",
            HistoryItem::ToolResult { .. } => "tool_result",
        }
    }
}
