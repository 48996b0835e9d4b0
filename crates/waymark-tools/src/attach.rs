//! An image a user attaches to a message (`exec --image`, a paste in the desktop): found to be
//! PNG, JPEG, GIF or WebP by its content, at most [`MAX_ATTACHED_IMAGE_BYTES`], decoded and
//! scaled down to what providers take. Front ends send the file's bytes as they are; this
//! check is the runtime's, so a client cannot slip past it.

use crate::image::{Fitted, fit};
use base64::Engine as _;
use waymark_protocol::{ImageInput, MAX_ATTACHED_IMAGE_BYTES, ToolImage};

/// Why an attached image is refused.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum AttachError {
    #[error("the image `{0}` is not base64")]
    NotBase64(String),
    #[error("the image `{name}` is {mb:.1} MB; images over {limit} MB are not sent", limit = MAX_ATTACHED_IMAGE_BYTES / (1024 * 1024))]
    TooBig { name: String, mb: f64 },
    #[error("`{0}` is not a PNG, JPEG, GIF or WebP image (by its content, whatever its name says)")]
    NotAnImage(String),
    #[error("the image `{name}` cannot be sent: {why}")]
    Unusable { name: String, why: String },
}

fn megabytes(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// `input` checked and fitted, as the model is sent it.
pub fn attach(input: &ImageInput) -> Result<ToolImage, AttachError> {
    let name = || input.name.clone();
    // Refused before decoding: base64 takes four characters for three bytes.
    let at_least = input.data.trim_end_matches('=').len() / 4 * 3;
    if at_least > MAX_ATTACHED_IMAGE_BYTES {
        return Err(AttachError::TooBig {
            name: name(),
            mb: megabytes(at_least),
        });
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(input.data.as_bytes())
        .map_err(|_| AttachError::NotBase64(name()))?;
    if bytes.len() > MAX_ATTACHED_IMAGE_BYTES {
        return Err(AttachError::TooBig {
            name: name(),
            mb: megabytes(bytes.len()),
        });
    }
    let mime = crate::read::image_type(&bytes).ok_or_else(|| AttachError::NotAnImage(name()))?;
    match fit(mime, &input.data) {
        Fitted::AsSent(image) | Fitted::Scaled { image, .. } => Ok(image),
        Fitted::Described(why) => Err(AttachError::Unusable { name: name(), why }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::test_picture;
    use image::ImageFormat;

    fn input(data: String) -> ImageInput {
        ImageInput {
            name: "shot.png".into(),
            data,
        }
    }

    #[test]
    fn an_image_is_typed_by_its_content_and_big_ones_are_scaled_down() {
        let jpeg = test_picture(40, 30, ImageFormat::Jpeg);
        let got = attach(&input(jpeg.clone())).unwrap();
        assert_eq!(
            got.mime, "image/jpeg",
            "named .png, but a JPEG by its bytes"
        );
        assert_eq!(got.data, jpeg);
        let big = attach(&input(test_picture(3000, 200, ImageFormat::Png))).unwrap();
        assert_ne!(big.data.len(), 0);
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&big.data)
            .unwrap();
        let dims = image::load_from_memory(&bytes).unwrap();
        assert!(dims.width() <= crate::image::MAX_SIDE, "{}", dims.width());
    }

    #[test]
    fn what_is_not_an_image_by_its_bytes_is_refused_whatever_its_name() {
        let text = base64::engine::general_purpose::STANDARD.encode(b"just some text, named .png");
        assert_eq!(
            attach(&input(text)),
            Err(AttachError::NotAnImage("shot.png".into()))
        );
        // A PNG header and nothing after it: it looks like one but does not decode.
        let header = base64::engine::general_purpose::STANDARD.encode(b"\x89PNG\r\n\x1a\n");
        assert!(matches!(
            attach(&input(header)),
            Err(AttachError::Unusable { .. })
        ));
        assert_eq!(
            attach(&input("not base64 at all!".into())),
            Err(AttachError::NotBase64("shot.png".into()))
        );
    }

    #[test]
    fn an_image_over_five_megabytes_is_refused_before_it_is_decoded() {
        let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
        bytes.resize(6 * 1024 * 1024, 0);
        let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
        let err = attach(&input(data)).unwrap_err();
        assert!(matches!(err, AttachError::TooBig { .. }), "{err:?}");
        assert!(err.to_string().contains("6.0 MB"), "{err}");
        assert!(err.to_string().contains("over 5 MB"), "{err}");
    }
}
