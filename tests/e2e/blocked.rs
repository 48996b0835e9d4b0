//! A blocked goal's question in the transcript (issue 37): at 900×600, with the side drawer
//! closed, the question and its reply box are at the end of the transcript, and the reply
//! resumes the goal. The toast saying the goal is blocked again keeps clear of the composer,
//! the question and the side panel, and never asks to open the session that is open.

use super::*;

/// Scrolls the transcript to its end; the question card's text once the card, its reply box
/// and its button are inside the transcript's box and the window, and nothing covers the
/// button; null until then.
const CARD_IN_VIEW: &str = "\
    const t = document.querySelector('[data-testid=transcript]'); \
    const c = document.querySelector('[data-testid=blocked-question]'); \
    const b = document.querySelector('[data-testid=blocked-reply-send]'); \
    if (!t || !c || !b) return null; \
    t.scrollTop = t.scrollHeight; \
    const v = t.getBoundingClientRect(), r = c.getBoundingClientRect(), s = b.getBoundingClientRect(); \
    const inside = r.top >= v.top - 1 && r.bottom <= v.bottom + 1 && r.left >= v.left - 1 && r.right <= v.right + 1 \
        && r.bottom <= innerHeight && r.right <= innerWidth && r.top >= 0 && r.left >= 0; \
    const top = document.elementFromPoint(s.left + s.width / 2, s.top + s.height / 2); \
    return inside && top && b.contains(top) ? c.textContent : null;";

/// Where the toast saying `Goal blocked` is against the composer's dock, the question card
/// and the side panel (when shown); null while there is none.
const TOAST_PLACE: &str = "\
    const t = [...document.querySelectorAll('[data-testid=toast]')].find((e) => e.textContent.includes('Goal blocked')); \
    if (!t) return null; \
    const box = (e) => { const r = e.getBoundingClientRect(); return { left: r.left, top: r.top, right: r.right, bottom: r.bottom }; }; \
    const hit = (a, b) => a.left < b.right && a.right > b.left && a.top < b.bottom && a.bottom > b.top; \
    const toast = box(t); \
    const dock = box(document.querySelector('[data-testid=composer-dock]')); \
    const card = document.querySelector('[data-testid=blocked-card]'); \
    const side = document.querySelector('[data-testid=side-panel]'); \
    const sideBox = side && side.offsetParent !== null ? box(side) : null; \
    return { text: t.textContent, \
             overDock: hit(toast, dock), \
             overCard: card ? hit(toast, box(card)) : null, \
             overSide: sideBox ? hit(toast, sideBox) : false, \
             inWindow: toast.left >= 0 && toast.top >= 0 && toast.right <= innerWidth && toast.bottom <= innerHeight, \
             toast, dock, side: sideBox, window: [innerWidth, innerHeight] };";

/// Waits until `text` is in the transcript as the user's message (the reply box, which is
/// in the transcript too, held it before it was sent).
async fn wait_user_message(app: &App, text: &str) {
    app.wait_js(
        &format!(
            "return [...document.querySelectorAll('[data-testid=transcript] .item.user')].some((e) => e.textContent.includes({text:?})) || null"
        ),
        &format!("{text:?} as the user's message"),
    )
    .await;
}

/// Asserts that the toast raised when the goal blocked again is in the window, over none of
/// the composer, the question and the side panel, and says what is asked without sending
/// the user to the session they are looking at.
async fn assert_toast_clear(app: &App, size: &str) {
    let place = app.wait_js(TOAST_PLACE, "the goal-blocked toast").await;
    let text = place["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("keep working as an alias"),
        "at {size}: {place}"
    );
    assert!(!text.contains("Open the session"), "at {size}: {place}");
    assert_eq!(place["overDock"], false, "at {size}: {place}");
    assert_eq!(place["overCard"], false, "at {size}: {place}");
    assert_eq!(place["overSide"], false, "at {size}: {place}");
    assert_eq!(place["inWindow"], true, "at {size}: {place}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_blocked_goal_is_answered_from_the_transcript_at_900x600_with_the_drawer_closed() {
    let desk = Desk::start();
    let ws = workspace(&desk, "blocked");
    // The goal blocks on its first turn, asking which name to print; the answer resumes it,
    // and it blocks again on a second question (then on that one after each answer).
    let out = desk.exec(
        &ws,
        &script("blocked_twice.json"),
        &["/goal Rename the tool"],
    );
    ended(&out, 3);
    let id = session_of(&out);
    let app = desk.launch().await;
    // The window has the focus: an alert is said by a toast.
    desk.focus_app();
    app.open_session(&id).await;

    // 900×600: the side panel is a drawer, and it is closed.
    desk.resize(&app, 900, 600).await;
    app.el(".main.narrow").await;
    let closed = app
        .js("const p = document.querySelector('[data-testid=side-panel]'); \
             return p.hidden && p.getBoundingClientRect().width === 0 \
                 && document.querySelector('[data-testid=toggle-right]').getAttribute('aria-pressed') === 'false'")
        .await;
    assert_eq!(closed, true, "the drawer should be closed");

    // The question, with its reply box, at the end of the transcript, in view.
    let card = app
        .wait_js(CARD_IN_VIEW, "the blocked goal's question in view")
        .await;
    assert!(
        card.as_str()
            .unwrap()
            .contains("the full one or the short one"),
        "{card}"
    );
    app.shot("blocked-1-question-900x600").await;

    // Answered from there, the goal resumes: the answer is the user's message, the agent
    // works on with it, and the question goes (a new one comes in its place).
    app.type_into("[data-testid=blocked-reply]", "The short one.")
        .await;
    app.click("[data-testid=blocked-reply-send]").await;
    wait_user_message(&app, "The short one.").await;
    app.wait_text(
        "[data-testid=transcript]",
        "Using the short name, as you said.",
    )
    .await;
    let card = app
        .wait_js(
            "const c = document.querySelectorAll('[data-testid=blocked-question]'); \
             return c.length === 1 && c[0].textContent.includes('alias') ? c[0].textContent : null",
            "the next question in place of the answered one",
        )
        .await;
    assert!(
        !card
            .as_str()
            .unwrap()
            .contains("the full one or the short one"),
        "{card}"
    );
    assert!(
        app.js("return document.querySelector('[data-testid=side-panel]').hidden")
            .await
            .as_bool()
            .unwrap(),
        "the drawer stayed closed"
    );
    app.wait_js(CARD_IN_VIEW, "the next question in view").await;
    assert_toast_clear(&app, "900x600").await;
    app.shot("blocked-2-asked-again-900x600").await;
    app.wait_gone("[data-testid=toast]").await;

    // 1440×900: the side panel is a column again; the question is still at the transcript's
    // end, and answered from there, the next toast keeps clear of the panel too.
    desk.resize(&app, 1440, 900).await;
    app.wait_js(
        "const p = document.querySelector('[data-testid=side-panel]'); return (p && !p.hidden && p.getBoundingClientRect().width > 0) || null",
        "the side panel as a column",
    )
    .await;
    app.wait_js(CARD_IN_VIEW, "the question in view at 1440×900")
        .await;
    app.shot("blocked-3-question-1440x900").await;
    app.type_into("[data-testid=blocked-reply]", "Yes, keep it.")
        .await;
    app.click("[data-testid=blocked-reply-send]").await;
    wait_user_message(&app, "Yes, keep it.").await;
    app.wait_js(CARD_IN_VIEW, "the question asked again in view")
        .await;
    assert_toast_clear(&app, "1440x900").await;
    app.shot("blocked-4-asked-again-1440x900").await;
    app.close().await;
}
