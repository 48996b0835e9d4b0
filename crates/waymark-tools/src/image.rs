//! An image a tool returns (a file `read_file` reads, a tool server's) as a model is sent it. Each image is decoded first, within limits,
//! with the `image` crate: one that is not what it says (a header and nothing else, a JPEG
//! called a PNG) or that will not decode is only described, and one too big for a provider
//! (a side over [`MAX_SIDE`], more base64 than [`MAX_IMAGE_BASE64`]) is scaled down to fit,
//! or described when it is too big even to decode here. A provider that refused an image would
//! refuse every later request that carries it.

use base64::Engine as _;
use image::{DynamicImage, ImageFormat, ImageReader, Limits};
use std::io::Cursor;
use waymark_protocol::{IMAGE_TYPES, MAX_IMAGE_BASE64, ToolImage};

/// The longest side an image is passed on with; a bigger one is scaled down to it.
pub const MAX_SIDE: u32 = 2048;

/// The most pixels decoded to scale an image down (about 6,000 × 4,000): a bigger one is
/// only described, so one image cannot take hundreds of megabytes.
pub const MAX_DECODED_PIXELS: u64 = 24_000_000;

/// What became of an image.
#[derive(Debug, Clone, PartialEq)]
pub enum Fitted {
    /// Passed on as the server sent it.
    AsSent(ToolImage),
    /// Scaled down from `from` (width, height) to fit, and passed on.
    Scaled { image: ToolImage, from: (u32, u32) },
    /// Not passed on: why, in a few words.
    Described(String),
}

/// The format a type names.
fn format_of(mime: &str) -> Option<ImageFormat> {
    match mime {
        "image/png" => Some(ImageFormat::Png),
        "image/jpeg" => Some(ImageFormat::Jpeg),
        "image/gif" => Some(ImageFormat::Gif),
        "image/webp" => Some(ImageFormat::WebP),
        _ => None,
    }
}

/// A reader of `bytes` as `format`, held to limits a little above what is decoded here.
fn reader(bytes: &[u8], format: ImageFormat) -> ImageReader<Cursor<&[u8]>> {
    let mut r = ImageReader::with_format(Cursor::new(bytes), format);
    let mut limits = Limits::default();
    limits.max_image_width = Some(65_535);
    limits.max_image_height = Some(65_535);
    // RGBA at the pixel budget, and the decoder's own buffers beside it.
    limits.max_alloc = Some(MAX_DECODED_PIXELS * 4 + 64 * 1024 * 1024);
    r.limits(limits);
    r
}

/// The image `data` (base64 of type `mime`) as a model may be sent it.
pub fn fit(mime: &str, data: &str) -> Fitted {
    if !IMAGE_TYPES.contains(&mime) {
        return Fitted::Described("a type models do not take".into());
    }
    let Some(format) = format_of(mime) else {
        return Fitted::Described("a type models do not take".into());
    };
    let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(data) else {
        return Fitted::Described("its data is not base64".into());
    };
    let sniffed = ImageReader::new(Cursor::new(&bytes[..]))
        .with_guessed_format()
        .ok()
        .and_then(|r| r.format());
    if sniffed != Some(format) {
        return Fitted::Described(format!("its data is not a {mime} image"));
    }
    let (w, h) = match reader(&bytes, format).into_dimensions() {
        Ok(d) => d,
        Err(e) => return Fitted::Described(format!("it does not decode ({e})")),
    };
    if w == 0 || h == 0 {
        return Fitted::Described(format!("it has no pixels ({w}×{h})"));
    }
    if u64::from(w) * u64::from(h) > MAX_DECODED_PIXELS {
        return Fitted::Described(format!(
            "{w}×{h} pixels, too large to scale down here (at most {} million pixels)",
            MAX_DECODED_PIXELS / 1_000_000
        ));
    }
    // Decoded whole even when it fits, so a truncated or damaged image is caught here.
    let decoded = match reader(&bytes, format).decode() {
        Ok(img) => img,
        Err(e) => return Fitted::Described(format!("it does not decode ({e})")),
    };
    if w <= MAX_SIDE && h <= MAX_SIDE && data.len() <= MAX_IMAGE_BASE64 {
        return Fitted::AsSent(ToolImage {
            mime: mime.to_string(),
            data: data.to_string(),
        });
    }
    match scaled(&decoded, format) {
        Some(image) => Fitted::Scaled {
            image,
            from: (w, h),
        },
        None => Fitted::Described(format!("{w}×{h} pixels, too big to send even scaled down")),
    }
}

/// `img` scaled to fit [`MAX_SIDE`] and re-encoded within [`MAX_IMAGE_BASE64`]: as PNG when
/// it was one (or a GIF) and that fits, else as JPEG, smaller and smaller until it fits.
fn scaled(img: &DynamicImage, was: ImageFormat) -> Option<ToolImage> {
    let lossless = matches!(was, ImageFormat::Png | ImageFormat::Gif);
    for side in [MAX_SIDE, MAX_SIDE / 2, MAX_SIDE / 4] {
        let small = img.resize(side, side, image::imageops::FilterType::Triangle);
        if lossless && let Some(png) = encode(&small, None) {
            return Some(png);
        }
        for quality in [85u8, 70] {
            if let Some(jpeg) = encode(&small, Some(quality)) {
                return Some(jpeg);
            }
        }
    }
    None
}

/// `img` as PNG (`quality` none) or JPEG, base64, when that fits [`MAX_IMAGE_BASE64`].
fn encode(img: &DynamicImage, quality: Option<u8>) -> Option<ToolImage> {
    let mut buf = Vec::new();
    let mime = match quality {
        None => {
            img.write_to(Cursor::new(&mut buf), ImageFormat::Png).ok()?;
            "image/png"
        }
        Some(q) => {
            // JPEG has no transparency: what was see-through is drawn on black.
            let rgb = DynamicImage::ImageRgb8(img.to_rgb8());
            rgb.write_with_encoder(image::codecs::jpeg::JpegEncoder::new_with_quality(
                &mut buf, q,
            ))
            .ok()?;
            "image/jpeg"
        }
    };
    let data = base64::engine::general_purpose::STANDARD.encode(&buf);
    (data.len() <= MAX_IMAGE_BASE64).then(|| ToolImage {
        mime: mime.into(),
        data,
    })
}

/// An image of `w`×`h` in `format`, base64: a smooth pattern, as a screenshot or a photo
/// is. For tests, here and in the crates that pass images on.
#[doc(hidden)]
pub fn test_picture(w: u32, h: u32, format: ImageFormat) -> String {
    let img = image::RgbImage::from_fn(w, h, |x, y| {
        image::Rgb([
            (x / 8 % 256) as u8,
            (y / 8 % 256) as u8,
            ((x + y) / 16 % 256) as u8,
        ])
    });
    let mut buf = Vec::new();
    // Writing an in-memory RGB image to a buffer cannot fail for these formats; an empty
    // picture would fail the test that uses it.
    let _ = DynamicImage::ImageRgb8(img).write_to(Cursor::new(&mut buf), format);
    base64::engine::general_purpose::STANDARD.encode(&buf)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn picture(w: u32, h: u32, format: ImageFormat) -> String {
        test_picture(w, h, format)
    }

    /// The red-team's images: a 16000×16000 WebP, a 9000×9000 JPEG, a PNG that is only a
    /// header, a JPEG called a PNG, and garbage. None reaches a model as it was.
    #[test]
    fn fake_and_oversized_images_are_described_never_passed() {
        // Only headers: what the old check read and let through.
        let png_header = {
            let mut h = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
            h.extend_from_slice(&400u32.to_be_bytes());
            h.extend_from_slice(&300u32.to_be_bytes());
            h.extend_from_slice(&[8, 2, 0, 0, 0]);
            base64::engine::general_purpose::STANDARD.encode(h)
        };
        let webp_huge = {
            // A lossless WebP header claiming 16000×16000.
            let (w, h) = (16_000u32 - 1, 16_000u32 - 1);
            let bits = w | (h << 14);
            let mut vp8l = vec![0x2f];
            vp8l.extend_from_slice(&bits.to_le_bytes());
            vp8l.extend_from_slice(&[0; 16]);
            let mut f = b"RIFF".to_vec();
            f.extend_from_slice(&(4 + 8 + vp8l.len() as u32).to_le_bytes());
            f.extend_from_slice(b"WEBPVP8L");
            f.extend_from_slice(&(vp8l.len() as u32).to_le_bytes());
            f.extend_from_slice(&vp8l);
            base64::engine::general_purpose::STANDARD.encode(f)
        };
        let jpeg_huge = {
            // A JPEG whose frame header says 9000×9000, with no data behind it.
            let mut j = vec![0xff, 0xd8, 0xff, 0xc0, 0x00, 0x11, 0x08];
            j.extend_from_slice(&9000u16.to_be_bytes());
            j.extend_from_slice(&9000u16.to_be_bytes());
            j.extend_from_slice(&[3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1, 0xff, 0xd9]);
            base64::engine::general_purpose::STANDARD.encode(j)
        };
        let jpeg = picture(20, 10, ImageFormat::Jpeg);
        for (mime, data, why) in [
            ("image/png", png_header.as_str(), "does not decode"),
            ("image/webp", webp_huge.as_str(), "too large to scale down"),
            // zune-jpeg wants more than a frame header before it names the size.
            ("image/jpeg", jpeg_huge.as_str(), "does not decode"),
            ("image/png", jpeg.as_str(), "not a image/png image"),
            ("image/png", "not base64!", "not base64"),
            ("image/svg+xml", "PHN2Zz4=", "a type models do not take"),
        ] {
            match fit(mime, data) {
                Fitted::Described(d) => assert!(d.contains(why), "{mime}: {d}"),
                other => panic!("{mime} passed on: {other:?}"),
            }
        }
    }

    #[test]
    fn a_big_real_image_is_scaled_down_to_fit_and_a_small_one_passes_as_sent() {
        let small = picture(64, 48, ImageFormat::Png);
        assert_eq!(
            fit("image/png", &small),
            Fitted::AsSent(ToolImage {
                mime: "image/png".into(),
                data: small.clone()
            })
        );
        let big = picture(2600, 900, ImageFormat::Jpeg);
        let Fitted::Scaled { image, from } = fit("image/jpeg", &big) else {
            panic!("not scaled");
        };
        assert_eq!(from, (2600, 900));
        assert!(image.data.len() <= MAX_IMAGE_BASE64);
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&image.data)
            .unwrap();
        let back = image::load_from_memory(&bytes).unwrap();
        assert!(back.width() <= MAX_SIDE && back.height() <= MAX_SIDE);
        assert_eq!(back.width(), MAX_SIDE, "the aspect is kept");
    }
}
