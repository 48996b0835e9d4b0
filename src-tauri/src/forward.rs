//! Following a session to the window: each event to the page (of a session the window does
//! not show, only what the lists show), the alerts the settings call for, and memory given
//! back when the session rests. All through the runtime's client seam.

use crate::alerts;
use crate::events::{AlertRaised, SessionEvent};
use crate::host::Host;
use std::sync::atomic::Ordering;
use tauri_specta::Event as _;
use waymark_protocol::Event;
use waymark_runtime::client::{Follow, Progress, Settled};

/// The events that change what the session list or the Goals board shows of a session (its
/// title, mode and model, whether it needs the user, its goal and what it spent): of a
/// session the window does not show, only these go to the page.
pub(crate) const LISTED_EVENTS: &[&str] = &[
    "session.started",
    "session.configured",
    "session.idle",
    "session.waiting",
    "session.error",
    "message.admitted",
    "turn.finished",
    "questionnaire.opened",
    "questionnaire.answered",
    "plan.mode_changed",
    "goal.create",
    "goal.update",
    "goal.clear",
    "goal.updated",
];

fn concerns_the_lists(kind: &waymark_protocol::EventKind) -> bool {
    LISTED_EVENTS.contains(&kind.type_name())
}

/// Where a followed session goes: the app's window, or what a test records.
pub trait Surface: Send + 'static {
    /// The app's state, once the app has it.
    fn host(&self) -> Option<&Host>;
    /// Sends an event to the page.
    fn send(&self, event: Event);
    /// Shows an alert in the window, which has the focus.
    fn show(&self, alert: AlertRaised);
    /// Hands an alert to the system's notifications.
    fn notify(&self, alert: &alerts::Alert);
    /// The session came to rest, as the client seam says.
    fn settled(&self, settled: &Settled);
}

impl<R: tauri::Runtime> Surface for tauri::AppHandle<R> {
    fn host(&self) -> Option<&Host> {
        use tauri::Manager;
        self.try_state::<Host>().map(|s| s.inner())
    }
    fn send(&self, event: Event) {
        let _ = SessionEvent(event).emit(self);
    }
    fn show(&self, alert: AlertRaised) {
        let _ = alert.emit(self);
    }
    fn notify(&self, alert: &alerts::Alert) {
        alerts::raise(self, alert);
    }
    fn settled(&self, _: &Settled) {
        // A session at rest (idle, waiting on the user, its goal stopped or waiting)
        // allocates nothing for a while: what it freed goes back to the system.
        crate::memory::TRIM.request();
    }
}

/// Follows a session through the client seam for as long as the window lives: pushes its
/// events to the page, raises the notifications they call for, and says when the session
/// comes to rest.
pub async fn forward(surface: impl Surface, mut follow: Follow) {
    loop {
        let progress = match surface.host() {
            Some(host) => follow.next(&host.runtime.goal_of()).await,
            None => follow.next(&|_| Ok(None)).await,
        };
        let event = match progress {
            Ok(Progress::Event(e)) => e,
            Ok(Progress::Settled(s)) => {
                surface.settled(&s);
                continue;
            }
            // The UI reloads from the log when it sees a gap in `seq`.
            Ok(Progress::Lagged(_)) => continue,
            Ok(Progress::Closed) => break,
            Err(e) => {
                eprintln!("waymark: a session's goal could not be read: {e}");
                continue;
            }
        };
        let host = surface.host();
        let focused = host
            .as_ref()
            .is_some_and(|h| h.focused.load(Ordering::Relaxed));
        let shown = host.as_ref().is_some_and(|h| h.shows(&event.session_id));
        // Which events alert: the settings as they are now (a switch saved takes at once).
        let on = host
            .as_ref()
            .map(|h| h.runtime.config().notifications.clone())
            .unwrap_or_default();
        // Named as the session is called now (its title may have come with its first message).
        let alert = alerts::decide(&event, "", None, focused, shown, &on).and_then(|_| {
            let host = host.as_ref()?;
            let title = host.title(&event.session_id);
            // What a blocked goal asks (read only for an alert that is raised).
            let question = host
                .runtime
                .goal(&event.session_id)
                .ok()
                .flatten()
                .and_then(|g| g.question);
            alerts::decide(&event, &title, question.as_deref(), focused, shown, &on)
        });
        // Said once, where the user is: in the window while it has the focus, else by the
        // system's notification (never both).
        match alert.map(|a| (alerts::delivery(focused), a)) {
            Some((alerts::Delivery::InWindow, alert)) => {
                // The page shows text as text; format characters (bidi overrides) a model
                // wrote into its question are spelled out, as in a notification.
                surface.show(AlertRaised {
                    session_id: alert.session_id,
                    title: waymark_protocol::display::escape_block(&alert.title),
                    body: waymark_protocol::display::escape_block(&alert.body),
                });
            }
            Some((alerts::Delivery::System, alert)) => surface.notify(&alert),
            None => {}
        }
        // Of a session the window does not show, only what the session list and the Goals
        // board show is sent: the page has no use for the rest (it reads the log when it
        // opens the session), and with twenty goals running the rest is most of the traffic.
        if !concerns_the_lists(&event.kind)
            && host.as_ref().is_some_and(|h| !h.shows(&event.session_id))
        {
            continue;
        }
        surface.send(event);
    }
}
