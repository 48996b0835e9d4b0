//! `exec --image PATH`: each file read (at most 5 MB, checked before it is read) and sent
//! with the message. The runtime types it by its content and fits it; a model that takes no
//! images is refused there, before any call.

use base64::Engine as _;
use std::io::Read as _;
use std::path::Path;
use waymark_protocol::{ImageInput, MAX_ATTACHED_IMAGE_BYTES};

fn too_big(path: &Path, bytes: u64) -> anyhow::Error {
    anyhow::anyhow!(
        "the image {} is {:.1} MB; images over {} MB are not sent",
        path.display(),
        bytes as f64 / (1024.0 * 1024.0),
        MAX_ATTACHED_IMAGE_BYTES / (1024 * 1024)
    )
}

/// The files at `paths` as images to attach, in order.
pub(crate) fn read_all(paths: &[std::path::PathBuf]) -> anyhow::Result<Vec<ImageInput>> {
    paths.iter().map(|p| read_one(p)).collect()
}

fn read_one(path: &Path) -> anyhow::Result<ImageInput> {
    let cannot =
        |e: std::io::Error| anyhow::anyhow!("cannot read the image {}: {e}", path.display());
    let file = std::fs::File::open(path).map_err(cannot)?;
    let size = file.metadata().map_err(cannot)?.len();
    let limit = MAX_ATTACHED_IMAGE_BYTES as u64;
    if size > limit {
        return Err(too_big(path, size));
    }
    let mut bytes = Vec::new();
    // Bounded even when the file grows after its size was read.
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > limit {
        return Err(too_big(path, bytes.len() as u64));
    }
    Ok(ImageInput {
        name: path.display().to_string(),
        data: base64::engine::general_purpose::STANDARD.encode(&bytes),
    })
}
