//! Admitting a message: a slash command runs at once and never reaches the model; an intent
//! applies in the same transaction; an idempotency key already used returns the message it
//! admitted.

use super::{OpOutcome, SessionCore, changed};
use crate::commands;
use crate::error::{Error, Result};
use crate::extension::SessionApi;
use crate::store;
use std::sync::Arc;
use waymark_protocol::{
    EventKind, ImageInput, Intent, MAX_IMAGES, MessageSource, Position, ToolImage,
};

/// A message as a front end submits it.
pub(super) struct Submission<'a> {
    pub text: &'a str,
    pub source: MessageSource,
    pub position: Position,
    pub key: Option<&'a str>,
    pub intent: Option<Intent>,
    /// Checked already ([`checked_images`]).
    pub images: Vec<ToolImage>,
}

/// The images of a message, checked before anything is admitted: a model that takes none is
/// refused here, before any call; each image is typed by its content, at most 5 MB, and
/// fitted to what providers take. Decoding runs off the session's thread (a few large images
/// take a second of CPU), and a decoder that panics refuses the image, never the session.
pub(super) async fn checked_images(
    core: &SessionCore,
    images: Vec<ImageInput>,
) -> Result<Vec<ToolImage>> {
    if images.is_empty() {
        return Ok(Vec::new());
    }
    if images.len() > MAX_IMAGES {
        return Err(Error::refused(format!(
            "{} images attached; a message takes at most {MAX_IMAGES}",
            images.len()
        )));
    }
    let route = core.route();
    if !route.provider.takes_images() {
        return Err(Error::refused(format!(
            "the model {} takes no images: send the message without them, or switch to a model that takes images (for a server named in the settings, set its `images` to true)",
            route.provider.describe()
        )));
    }
    tokio::task::spawn_blocking(move || {
        images
            .iter()
            .map(waymark_tools::attach::attach)
            .collect::<std::result::Result<Vec<_>, _>>()
    })
    .await
    .map_err(|_| Error::refused("an attached image could not be decoded".into()))?
    .map_err(|e| Error::refused(e.to_string()))
}

/// Writes `image` to the session folder's `images/`, named by its content's hash (once the
/// message is admitted; the history holds it either way).
fn keep_image(session_dir: &std::path::Path, image: &ToolImage) -> std::io::Result<()> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(image.data.as_bytes())
        .map_err(std::io::Error::other)?;
    let dir = session_dir.join("images");
    let ext = image.mime.trim_start_matches("image/");
    let path = dir.join(format!("{}.{ext}", store::blobs::sha256_hex(&bytes)));
    std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, &bytes))
}

/// Admits a message in one transaction: slash commands run here and never reach the model;
/// intents apply here; an idempotency key already used returns the existing message.
pub(super) fn admit(core: &Arc<SessionCore>, m: Submission<'_>) -> Result<OpOutcome> {
    let Submission {
        text,
        source,
        position,
        key,
        intent,
        images,
    } = m;
    let sid = core.id.as_str();
    let api = SessionApi::new(core.clone());
    if source == MessageSource::User
        && let Some((name, args)) = commands::parse(text)
    {
        if !images.is_empty() {
            return Err(Error::refused(format!(
                "/{name} is a command and takes no images: send them with a message"
            )));
        }
        let output = core.write(|tx| {
            let out = core.commands.run(tx, &api, name, args)?;
            tx.emit(
                sid,
                EventKind::CommandOutput {
                    command: name.to_string(),
                    text: out.clone(),
                },
            )?;
            Ok(out)
        })?;
        changed(core);
        return Ok(OpOutcome::Command { output });
    }
    let text = commands::unescape(text);
    if text.trim().is_empty() {
        return Err(Error::refused("the message is empty".into()));
    }
    let kept = images.clone();
    let out = core.write(|tx| {
        // The intent takes effect in the same transaction that admits the message (PM-6).
        if let Some(intent) = intent
            && !core.hooks().on_intent(tx, &api, intent)?
        {
            return Err(Error::refused(format!(
                "no extension of this session handles the intent {intent:?}"
            )));
        }
        let (m, created) =
            tx.admit_message_with_images(sid, source, text, position, key, images)?;
        if created {
            if source == MessageSource::User {
                // From the stored text, redacted whole: a secret cut at 80 characters would
                // no longer match and its start would show in the session list.
                let title: String = m
                    .text
                    .lines()
                    .next()
                    .unwrap_or("")
                    .chars()
                    .take(80)
                    .collect();
                tx.set_title_if_missing(sid, &title)?;
            }
            tx.touch_session(sid)?;
        }
        // Last: an extension that moves files does so once everything else succeeded.
        core.hooks().on_admit(tx, &api, &m, intent, created)?;
        Ok(OpOutcome::Admitted {
            message_id: m.id,
            created,
        })
    })?;
    for image in &kept {
        if let Err(e) = keep_image(&core.places.session_dir, image) {
            tracing::warn!("cannot keep an attached image in the session folder: {e}");
        }
    }
    Ok(out)
}
