//! Images a provider refused. A request carries the newest images tools returned; one the
//! provider will not take (too big for it, a format it cannot read) would fail that request
//! and every later one that carries it again. So an image refusal leaves the images of the
//! refused request out of the session's requests from then on (each result's text still
//! describes its images), and the call is sent again without them.

use crate::provider::{ModelMessage, ModelRequest, ProviderError, ProviderErrorKind};
use std::collections::HashSet;
use std::hash::{Hash as _, Hasher as _};
use std::sync::Mutex;

/// The images refused in this session, by a digest of their data.
#[derive(Default)]
pub(crate) struct Refused(Mutex<HashSet<u64>>);

fn digest(data: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    data.hash(&mut h);
    h.finish()
}

/// Whether `request` carries any image.
pub(crate) fn carries(request: &ModelRequest) -> bool {
    request.messages.iter().any(|m| match m {
        ModelMessage::ToolResult { images, .. } | ModelMessage::User { images, .. } => {
            !images.is_empty()
        }
        ModelMessage::Assistant { .. } => false,
    })
}

/// Whether `e` is the provider refusing the request over an image (a 4xx naming one).
pub(crate) fn is_refusal(e: &ProviderError) -> bool {
    e.kind == ProviderErrorKind::RequestRejected && e.message.to_lowercase().contains("image")
}

impl Refused {
    /// Leaves every image `request` carries out of later requests; how many they were.
    pub(crate) fn refuse(&self, request: &ModelRequest) -> usize {
        let mut set = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let mut n = 0;
        for m in &request.messages {
            if let ModelMessage::ToolResult { images, .. } | ModelMessage::User { images, .. } = m {
                for i in images {
                    n += usize::from(set.insert(digest(&i.data)));
                }
            }
        }
        n
    }

    /// Takes the refused images out of `request`.
    pub(crate) fn leave_out(&self, request: &mut ModelRequest) {
        let set = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if set.is_empty() {
            return;
        }
        for m in &mut request.messages {
            if let Some(images) = m.images_mut() {
                images.retain(|i| !set.contains(&digest(&i.data)));
            }
        }
    }
}
