//! An image pasted into the composer: a thumbnail that can be removed, then sent with the
//! message, shown in the transcript, and kept in the session folder.

use super::*;
use serde_json::json;

/// Pastes a 96×64 PNG drawn on a canvas into the composer, as the clipboard would hand it in.
const PASTE: &str = "const done = arguments[arguments.length - 1]; \
    const c = document.createElement('canvas'); c.width = 96; c.height = 64; \
    const g = c.getContext('2d'); const grad = g.createLinearGradient(0, 0, 96, 64); \
    grad.addColorStop(0, '#2d6cdf'); grad.addColorStop(1, '#f0a030'); g.fillStyle = grad; g.fillRect(0, 0, 96, 64); \
    g.fillStyle = '#fff'; g.font = 'bold 20px sans-serif'; g.fillText('UI', 34, 40); \
    c.toBlob((blob) => { \
      const dt = new DataTransfer(); dt.items.add(new File([blob], 'screenshot.png', { type: 'image/png' })); \
      const e = new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }); \
      document.querySelector('[data-testid=composer]').dispatchEvent(e); done(e.defaultPrevented); \
    }, 'image/png');";

#[tokio::test(flavor = "multi_thread")]
async fn a_pasted_image_shows_as_a_thumbnail_and_is_sent_with_the_message() {
    let desk = Desk::start();
    let ws = workspace(&desk, "images");
    let out = desk.exec(&ws, &script("chat.json"), &["Hello"]);
    succeeded(&out);
    let sid = session_of(&out);
    let app = desk.launch().await;
    app.el("[data-testid=session].current").await;

    // Two pasted, one removed: one thumbnail stays.
    assert_eq!(
        app.js_async(PASTE).await,
        json!(true),
        "the paste was taken"
    );
    app.el("[data-testid=attachment]").await;
    assert_eq!(app.js_async(PASTE).await, json!(true));
    app.wait_js(
        "return document.querySelectorAll('[data-testid=attachment]').length === 2 || null",
        "two thumbnails",
    )
    .await;
    app.click("[data-testid=remove-attachment]").await;
    app.wait_js(
        "return document.querySelectorAll('[data-testid=attachment]').length === 1 || null",
        "one thumbnail left",
    )
    .await;
    app.type_into("[data-testid=composer]", "What does this screen show?")
        .await;
    app.shot("images-1-thumbnail").await;

    app.click("[data-testid=send]").await;
    app.wait_gone("[data-testid=attachment]").await;
    let shown = app
        .wait_js(
            "const i = document.querySelector('[data-testid=transcript] [data-testid=message-image]'); \
             return i && i.complete && i.naturalWidth > 0 ? [i.naturalWidth, i.naturalHeight] : null",
            "the sent image in the transcript",
        )
        .await;
    assert_eq!(shown, json!([96, 64]));
    app.wait_text("[data-testid=transcript]", "What does this screen show?")
        .await;
    app.shot("images-2-sent").await;
    desk.resize(&app, 900, 600).await;
    app.shot("images-3-sent-900").await;

    // The session folder keeps the one image sent.
    let kept: Vec<_> =
        std::fs::read_dir(desk.data_dir().join("sessions").join(&sid).join("images"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    app.close().await;
}
