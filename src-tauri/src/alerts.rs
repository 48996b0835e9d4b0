//! Desktop notifications (G-26): which runtime events deserve one, and raising it. Clicking
//! a notification brings the window forward on that session.

use waymark_config::NotificationsConfig;
use waymark_protocol::{Event, EventKind, GoalActor, GoalReason, GoalStatus, Question};

/// A notification to raise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alert {
    pub session_id: String,
    pub title: String,
    pub body: String,
}

/// Decides whether `event` needs the user's attention, as the `notifications` settings say
/// (`on`, G-44). `focused`: the main window has focus (a plan awaiting approval, or a turn
/// that finished, is then visible on screen already). `shown`: the window shows the event's
/// session. `question`: what the agent asked when it reported the goal blocked, if it did.
pub fn decide(
    event: &Event,
    session_title: &str,
    question: Option<&str>,
    focused: bool,
    shown: bool,
    on: &NotificationsConfig,
) -> Option<Alert> {
    let alert = |title: String, body: String| Alert {
        session_id: event.session_id.clone(),
        title,
        body,
    };
    match &event.kind {
        EventKind::GoalUpdate {
            status,
            reason,
            actor,
            usage_limit,
            ..
        } => {
            let (what, wanted) = match status {
                GoalStatus::Blocked => ("Goal blocked", on.goal_blocked),
                GoalStatus::BudgetLimited => ("Goal stopped: budget reached", on.budget_spent),
                // The day's spending cap is the user's own limit: reaching it is said, even
                // though the goal resumes by itself the next day (G-33).
                GoalStatus::UsageLimited if *reason == GoalReason::SpendCap => {
                    ("Goal stopped: today's spending cap", on.spending_cap)
                }
                // A limit whose resume the user just called off needs nobody's attention.
                GoalStatus::UsageLimited if *actor == GoalActor::User => return None,
                // A wait the goal resumes from by itself: said only when asked for.
                GoalStatus::UsageLimited if usage_limit.as_ref().is_some_and(|l| l.auto_resume) => {
                    ("Goal waiting: usage limit", on.usage_limit_wait)
                }
                GoalStatus::UsageLimited => ("Goal stopped: usage limit", on.usage_limit_stop),
                GoalStatus::Paused if *actor != GoalActor::User => ("Goal paused", on.goal_paused),
                GoalStatus::Complete => ("Goal complete", on.goal_complete),
                // The agent's wait is over by itself (its time, its check), not by the user.
                GoalStatus::Active if *reason == GoalReason::Woke && *actor != GoalActor::User => {
                    ("Goal woke", on.goal_woke)
                }
                GoalStatus::Paused | GoalStatus::Active => return None,
            };
            if !wanted {
                return None;
            }
            let limit = usage_limit
                .as_ref()
                .map(|l| {
                    let used_up = if l.auto_resumes_used >= l.auto_resumes_max {
                        format!(
                            ", and no automatic resumes are left ({} in a row allowed)",
                            l.auto_resumes_max
                        )
                    } else {
                        String::new()
                    };
                    format!(
                        " The limit resets at {}{used_up}.",
                        waymark_runtime::clock::utc_label(l.resets_at)
                    )
                })
                .unwrap_or_default();
            // A blocked goal's notification carries what the agent asks, so the user can
            // answer from where they are.
            let asked = match (status, question) {
                (GoalStatus::Blocked, Some(q)) if !q.trim().is_empty() => {
                    format!(" It asks: {}", one_paragraph(q, 300))
                }
                _ => String::new(),
            };
            // A toast about the session the window shows: it is in front of the user already.
            let next = if (focused && shown) || *status == GoalStatus::Complete {
                ""
            } else {
                " Open the session to decide what next."
            };
            Some(alert(
                format!("{what} — {session_title}"),
                format!("{}.{asked}{limit}{next}", reason.words()),
            ))
        }
        EventKind::QuestionnaireOpened { question, .. }
            if on.plan_awaiting_approval
                && !focused
                && matches!(**question, Question::PlanApproval(_)) =>
        {
            Some(alert(
                format!("Plan ready for review — {session_title}"),
                "The agent finished its plan and waits for your approval.".to_string(),
            ))
        }
        EventKind::TurnFinished { reason, .. } if on.turn_finished && !focused => Some(alert(
            format!("Turn finished — {session_title}"),
            format!("The turn ended ({}).", reason.as_str().replace('_', " ")),
        )),
        _ => None,
    }
}

/// Where an alert is said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// A toast in the window, which the user is looking at.
    InWindow,
    /// A desktop notification: the window is in the background.
    System,
}

/// An alert goes to the window while it has the focus, else to the desktop: one of the two,
/// so the toast never repeats a notification the user already saw.
pub fn delivery(focused: bool) -> Delivery {
    if focused {
        Delivery::InWindow
    } else {
        Delivery::System
    }
}

/// `text` as a notification server shows it literally: servers that read body markup
/// (links, sizes, colours) get it escaped, and format characters (bidi overrides,
/// zero-width ones) are spelled out instead of reordering or hiding what is said.
pub fn as_plain_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{2069}'
            | '\u{feff}' => {
                out.push_str(&format!("\\u{{{:x}}}", c as u32));
            }
            c if c.is_control() && c != '\n' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// `text` on one line, cut to `max` characters with an ellipsis.
fn one_paragraph(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        flat
    } else {
        let cut: String = flat.chars().take(max).collect();
        format!("{cut}…")
    }
}

/// Raises `alert` as a desktop notification; a click focuses the window on its session.
pub fn raise<R: tauri::Runtime>(app: &tauri::AppHandle<R>, alert: &Alert) {
    #[cfg(target_os = "linux")]
    {
        linux::raise(app.clone(), alert.clone());
    }
    #[cfg(not(target_os = "linux"))]
    {
        use tauri_plugin_notification::NotificationExt;
        let _ = app
            .notification()
            .builder()
            .title(&alert.title)
            .body(&alert.body)
            .show();
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use super::Alert;

    /// The plugin's Linux backend has no click callback, so the notification goes over D-Bus
    /// with a default action and a thread waits for the click (or the close).
    pub fn raise<R: tauri::Runtime>(app: tauri::AppHandle<R>, alert: Alert) {
        std::thread::spawn(move || {
            let shown = notify_rust::Notification::new()
                .appname("Waymark")
                .summary(&super::as_plain_text(&alert.title))
                .body(&super::as_plain_text(&alert.body))
                .action("default", "Open")
                .show();
            match shown {
                Ok(handle) => handle.wait_for_action(|action| {
                    if action == "default" {
                        crate::focus_session(&app, &alert.session_id);
                    }
                }),
                Err(e) => eprintln!("waymark: notification not shown: {e}"),
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use waymark_protocol::{BudgetLine, BudgetReport, GoalReason};

    fn goal_update(status: GoalStatus, reason: GoalReason, actor: GoalActor) -> Event {
        limited_update(status, reason, actor, None)
    }

    fn limited_update(
        status: GoalStatus,
        reason: GoalReason,
        actor: GoalActor,
        usage_limit: Option<waymark_protocol::UsageLimit>,
    ) -> Event {
        let line = BudgetLine::new(None, 0);
        Event {
            session_id: "s1".into(),
            seq: 3,
            ts: 0,
            transient: false,
            kind: EventKind::GoalUpdate {
                goal_id: "g".into(),
                kind: waymark_protocol::GoalUpdateKind::Completion,
                status,
                reason,
                actor,
                usage: Box::new(BudgetReport {
                    tokens: line,
                    main_turns: line,
                    active_seconds: line,
                    cost: line,
                    cost_unpriced_calls: 0,
                }),
                usage_limit: usage_limit.map(Box::new),
                findings: Box::default(),
            },
        }
    }

    /// `decide` with the default switches.
    fn on_defaults(
        event: &Event,
        title: &str,
        question: Option<&str>,
        focused: bool,
        shown: bool,
    ) -> Option<Alert> {
        decide(
            event,
            title,
            question,
            focused,
            shown,
            &NotificationsConfig::default(),
        )
    }

    /// G-44: each switch turned off silences its alert, and only its own; the ones off by
    /// default (a usage-limit wait, each turn) say nothing until turned on.
    #[test]
    fn g_44_a_switch_turned_off_gives_no_alert() {
        use GoalActor::*;
        let paused = goal_update(GoalStatus::Paused, GoalReason::NoProgress, Runtime);
        let done = goal_update(GoalStatus::Complete, GoalReason::VerifierMet, Runtime);
        let mut on = NotificationsConfig::default();
        assert!(decide(&paused, "Fix CI", None, false, false, &on).is_some());
        on.goal_paused = false;
        assert!(decide(&paused, "Fix CI", None, false, false, &on).is_none());
        assert!(decide(&done, "Fix CI", None, false, false, &on).is_some());
        on.goal_complete = false;
        assert!(decide(&done, "Fix CI", None, false, false, &on).is_none());
        let finished = Event {
            session_id: "s1".into(),
            seq: 4,
            ts: 0,
            transient: false,
            kind: EventKind::TurnFinished {
                turn_id: 1,
                reason: waymark_protocol::TurnEndReason::Completed,
                usage: Default::default(),
                steps: 1,
                error: None,
                recovered: false,
                cost_usd: None,
            },
        };
        assert!(decide(&finished, "Fix CI", None, false, false, &on).is_none());
        on.turn_finished = true;
        let a = decide(&finished, "Fix CI", None, false, false, &on).unwrap();
        assert_eq!(a.title, "Turn finished — Fix CI");
        // Not while the user is looking at the window.
        assert!(decide(&finished, "Fix CI", None, true, true, &on).is_none());
        let waiting = limited_update(
            GoalStatus::UsageLimited,
            GoalReason::RateLimited,
            System,
            Some(waymark_protocol::UsageLimit {
                resets_at: 0,
                from_provider: false,
                auto_resume: true,
                auto_resumes_used: 0,
                auto_resumes_max: 3,
            }),
        );
        assert!(on_defaults(&waiting, "Fix CI", None, false, false).is_none());
        on.usage_limit_wait = true;
        assert!(decide(&waiting, "Fix CI", None, false, false, &on).is_some());
        // A goal that woke from the agent's wait by itself: on by default; the user's own
        // "Wake now" is never announced back to them.
        let woke = goal_update(GoalStatus::Active, GoalReason::Woke, Runtime);
        let a = on_defaults(&woke, "Ship it", None, false, false).unwrap();
        assert!(a.title.starts_with("Goal woke"), "{}", a.title);
        assert!(
            on_defaults(
                &goal_update(GoalStatus::Active, GoalReason::Woke, User),
                "Ship it",
                None,
                false,
                false
            )
            .is_none()
        );
        assert!(
            on_defaults(
                &goal_update(GoalStatus::Active, GoalReason::Waiting, Model),
                "Ship it",
                None,
                false,
                false
            )
            .is_none()
        );
        on.goal_woke = false;
        assert!(decide(&woke, "Ship it", None, false, false, &on).is_none());
    }

    #[test]
    fn goal_states_that_need_the_user_raise_one_alert() {
        use GoalActor::*;
        let cases = [
            (GoalStatus::Blocked, GoalReason::NoProgress, Runtime, true),
            (GoalStatus::BudgetLimited, GoalReason::Tokens, Runtime, true),
            (
                GoalStatus::UsageLimited,
                GoalReason::QuotaExhausted,
                System,
                true,
            ),
            (GoalStatus::Paused, GoalReason::AppClosed, System, true),
            (GoalStatus::Paused, GoalReason::UserRequested, User, false),
            (GoalStatus::Active, GoalReason::Resumed, User, false),
            // Done is worth saying too (G-44, on by default).
            (GoalStatus::Complete, GoalReason::VerifierMet, Model, true),
        ];
        for (status, reason, actor, expected) in cases {
            let a = on_defaults(
                &goal_update(status, reason, actor),
                "Fix CI",
                None,
                true,
                false,
            );
            assert_eq!(a.is_some(), expected, "{status:?} {reason:?} {actor:?}");
            if let Some(a) = a {
                assert_eq!(a.session_id, "s1");
                assert!(a.title.ends_with("Fix CI"), "{}", a.title);
            }
        }
    }

    /// A blocked goal's notification says what the agent asks (on one line, cut when long)
    /// and why, in words; other states carry no question.
    #[test]
    fn a_blocked_goal_notification_carries_the_question() {
        let blocked = goal_update(
            GoalStatus::Blocked,
            GoalReason::WorkerReported,
            GoalActor::Model,
        );
        let a = on_defaults(
            &blocked,
            "Rename",
            Some("Full name\nor short?"),
            true,
            false,
        )
        .unwrap();
        assert_eq!(
            a.body,
            "The agent says it is blocked. It asks: Full name or short? Open the session to decide what next."
        );
        let long = "why ".repeat(200);
        let a = on_defaults(&blocked, "Rename", Some(&long), true, false).unwrap();
        assert!(
            a.body.contains('…') && a.body.chars().count() < 400,
            "{}",
            a.body
        );
        let paused = goal_update(
            GoalStatus::Paused,
            GoalReason::NoProgress,
            GoalActor::Runtime,
        );
        let a = on_defaults(&paused, "Rename", Some("stale question"), true, false).unwrap();
        assert!(!a.body.contains("stale"), "{}", a.body);
        assert!(a.body.starts_with("Paused: no progress"), "{}", a.body);
    }

    /// A toast about the session the window shows says what happened, but never to open
    /// that session; a notification, or a toast about another session, still does.
    #[test]
    fn an_alert_about_the_session_on_screen_never_asks_to_open_it() {
        let blocked = goal_update(
            GoalStatus::Blocked,
            GoalReason::WorkerReported,
            GoalActor::Model,
        );
        let on_screen =
            on_defaults(&blocked, "Rename", Some("Full or short?"), true, true).unwrap();
        assert_eq!(
            on_screen.body,
            "The agent says it is blocked. It asks: Full or short?"
        );
        let spent = goal_update(
            GoalStatus::BudgetLimited,
            GoalReason::Tokens,
            GoalActor::Runtime,
        );
        let on_screen = on_defaults(&spent, "Rename", None, true, true).unwrap();
        assert!(
            !on_screen.body.contains("Open the session"),
            "{}",
            on_screen.body
        );
        for (focused, shown) in [(true, false), (false, true), (false, false)] {
            let a = on_defaults(&spent, "Rename", None, focused, shown).unwrap();
            assert!(
                a.body.ends_with("Open the session to decide what next."),
                "focused {focused}, shown {shown}: {}",
                a.body
            );
        }
    }

    /// What a hostile model asks cannot style or link a notification, nor hide or reorder
    /// its words.
    #[test]
    fn a_notification_shows_the_question_as_plain_text() {
        let shown =
            as_plain_text("<a href=\"https://x\">y</a> & <b>bold</b>\u{202e}gnp.exe\u{200b}");
        assert_eq!(
            shown,
            "&lt;a href=\"https://x\"&gt;y&lt;/a&gt; &amp; &lt;b&gt;bold&lt;/b&gt;\\u{202e}gnp.exe\\u{200b}"
        );
        assert!(!shown.contains('<') && !shown.contains('\u{202e}'));
    }

    #[test]
    fn a_usage_limit_alerts_only_when_the_goal_will_not_resume_by_itself() {
        let limit = |auto_resume, used| waymark_protocol::UsageLimit {
            resets_at: 1_796_137_445_000,
            from_provider: true,
            auto_resume,
            auto_resumes_used: used,
            auto_resumes_max: 3,
        };
        let rate = |actor, l| {
            on_defaults(
                &limited_update(GoalStatus::UsageLimited, GoalReason::RateLimited, actor, l),
                "Long job",
                None,
                true,
                false,
            )
        };
        assert_eq!(rate(GoalActor::Runtime, Some(limit(true, 1))), None);
        assert_eq!(
            rate(GoalActor::User, Some(limit(false, 1))),
            None,
            "the user cancelled it"
        );
        let capped = rate(GoalActor::Runtime, Some(limit(false, 3))).expect("an alert");
        assert!(capped.title.starts_with("Goal stopped: usage limit"));
        assert!(
            capped.body.contains("2026-12-01 15:04:05 UTC")
                && capped
                    .body
                    .contains("no automatic resumes are left (3 in a row allowed)"),
            "{}",
            capped.body
        );
        assert!(
            rate(GoalActor::Runtime, None).is_some(),
            "no reset time known"
        );
        // The day's spending cap is said although the goal resumes by itself (G-33).
        let cap = on_defaults(
            &limited_update(
                GoalStatus::UsageLimited,
                GoalReason::SpendCap,
                GoalActor::Runtime,
                Some(waymark_protocol::UsageLimit {
                    from_provider: false,
                    ..limit(true, 0)
                }),
            ),
            "Long job",
            None,
            true,
            false,
        )
        .expect("an alert at the spending cap");
        assert!(
            cap.title.starts_with("Goal stopped: today's spending cap"),
            "{}",
            cap.title
        );
    }

    #[test]
    fn plan_approval_alerts_only_when_the_window_is_not_focused() {
        let ev = Event {
            session_id: "s2".into(),
            seq: 9,
            ts: 0,
            transient: false,
            kind: EventKind::QuestionnaireOpened {
                id: "q1".into(),
                question: Box::new(Question::PlanApproval(
                    waymark_protocol::PlanApprovalQuestion {
                        plan_id: "p".into(),
                        version: 1,
                        key: "k".into(),
                        sha256: "x".into(),
                        bytes: 1,
                        truncated: false,
                        path: "plan.md".into(),
                        options: Vec::new(),
                        budget: None,
                        steps: Vec::new(),
                        checks: Vec::new(),
                    },
                )),
            },
        };
        assert!(on_defaults(&ev, "t", None, true, false).is_none());
        assert!(
            on_defaults(&ev, "t", None, false, false)
                .unwrap()
                .title
                .starts_with("Plan ready")
        );
    }
}
