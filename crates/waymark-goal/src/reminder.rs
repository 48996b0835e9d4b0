//! The goal in every goal turn's context (G-14), and the summary turn's reminder (G-22).

use super::prompts::{SUMMARY_REMINDER, context};
use crate::db::current_goal;
use waymark_extension::reminder::{Reminder, ReminderContext, ReminderSource};

pub(crate) struct GoalReminders;

impl ReminderSource for GoalReminders {
    fn reminders(&self, cx: &ReminderContext<'_>) -> Vec<Reminder> {
        let Some(api) = cx.api else {
            return Vec::new();
        };
        let Ok(tg) = super::turn_goal::turn_goal_of(api, cx.turn_id) else {
            return Vec::new();
        };
        if tg.goal_id.is_none() {
            return Vec::new();
        }
        let text = if tg.summary {
            SUMMARY_REMINDER.to_string()
        } else {
            match api.read(|c| current_goal(c, api.id())) {
                Ok(Some(g)) => context(&g),
                _ => return Vec::new(),
            }
        };
        vec![Reminder {
            priority: 50,
            source: "goal",
            text,
        }]
    }
}
