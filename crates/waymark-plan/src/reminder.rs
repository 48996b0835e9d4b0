//! The soft layer of plan mode (PM-11, PM-12): a reminder on every plan turn — the full text on
//! entry, every 5th plan turn and after the user interjects, a short one otherwise — and one
//! exit reminder on the first turn after leaving.

use crate::db::PlanWrites;
use std::path::Path;
use waymark_extension::reminder::{Reminder, ReminderContext, ReminderSource};
use waymark_protocol::InteractionMode;
use waymark_sandbox::Layer;

pub(crate) struct PlanReminders;

/// Priority above ordinary reminders: plan mode's rules come first.
const PRIORITY: i32 = 100;

/// The full plan-mode reminder.
pub fn full_text(plan: &Path, missing: &[Layer], scratch: bool) -> String {
    format!(
        "PLAN MODE is on. Investigate, then write a plan; do not change anything yet.\n\
         \n\
         Allowed: reading files, listing and searching, read-only shell commands, running the project's existing builds and tests.\n\
         Not allowed: creating, modifying, deleting, publishing or sending anything, and changing git state (no commits, checkouts, stashes, resets). The one exception is the plan file at exactly this path:\n\
         {plan}\n\
         {shell}\n\
         If a tool call is denied, take another read-only route. If two different approaches to the same question are blocked, stop trying: work with the evidence you have and record the uncertainty in the plan.\n\
         \n\
         Write the plan to the file (not only in the chat) before calling ExitPlanMode. The file starts with `## Summary` (a few sentences, never empty), then as needed: goal and scope; current state and the files affected; approach and the end-to-end flow; state and failure recovery; tests and acceptance; open questions. List the work as a numbered `## Steps` section, one checkable step per item: a reviewer may check each step when the plan is implemented; a step a command can prove names it as ``check: `<command>` ``. If the project has commands that prove the whole work done (its tests, a build), list them in a `## Checks` section, inside a code block, one command per line: a goal the plan runs as is complete only when they pass. End with a `## Budget` section estimating what implementing it takes, in the form `tokens=<e.g. 80K> turns=<N> time=<e.g. 45m>`; the user may run the plan as a goal with that budget. Write these sections in plain Markdown: a section holding HTML is not read. If there are real alternatives, describe them and pass their short labels to ExitPlanMode as `options`.",
        plan = plan.display(),
        shell = shell_line(missing, scratch),
    )
}

/// The short plan-mode reminder for the turns in between.
pub fn short_text(plan: &Path, missing: &[Layer], scratch: bool) -> String {
    format!(
        "PLAN MODE is still on: read-only investigation; the only file you may write is {}. {} Call ExitPlanMode once the plan file is complete.",
        plan.display(),
        shell_line(missing, scratch)
    )
}

/// What the shell can do here: `scratch` when this machine has the scratch shell.
fn shell_line(missing: &[Layer], scratch: bool) -> String {
    if missing.is_empty() && scratch {
        format!(
            "Shell commands run in a scratch sandbox: the workspace looks writable, but every change lands in a throwaway layer over it (kept for your next command, so builds stay incremental, and dropped when plan mode ends) and the workspace itself never changes, so build and run the tests freely; .git and everything outside the workspace stay read-only, and there is no network, no unix socket and no terminal. {}",
            waymark_sandbox::reads::SUMMARY
        )
    } else if missing.is_empty() {
        format!(
            "Shell commands run in a read-only sandbox: writes outside a private temp folder fail, file permissions and times cannot change, and there is no network, no unix socket and no terminal. {}",
            waymark_sandbox::reads::SUMMARY
        )
    } else {
        let names: Vec<&str> = missing.iter().map(|l| l.describe()).collect();
        format!(
            "The shell sandbox is incomplete on this machine (missing: {}), so the user must approve every shell command: prefer the read-only file tools and use the shell only when it is worth asking.",
            names.join("; ")
        )
    }
}

/// The reminder on the first turn after plan mode ends.
pub const EXIT_TEXT: &str = "Plan mode has ended: the read-only restriction is lifted and you may change files again, within the session's permission mode. If you received an approved plan, implement exactly that plan.";

impl ReminderSource for PlanReminders {
    fn reminders(&self, cx: &ReminderContext<'_>) -> Vec<Reminder> {
        let Some(api) = cx.api else {
            return Vec::new();
        };
        let sid = cx.session.id.as_str();
        let text = match cx.session.interaction_mode {
            InteractionMode::Plan => {
                let Ok(Some(plan)) = api.read(|c| crate::db::current_plan(c, sid)) else {
                    return Vec::new();
                };
                let full = api
                    .write(|tx| tx.plan_turn_reminder(&plan.id, cx.turn_id))
                    .unwrap_or(true);
                let path = super::plan_path(api.artifacts());
                let missing = api.sandbox().probe().layers.missing();
                let settings = &api.config().sandbox;
                let scratch = settings.scratch_shell
                    && api
                        .sandbox()
                        .scratch(super::SCRATCH_OWNER, settings)
                        .is_ok();
                if full {
                    full_text(&path, &missing, scratch)
                } else {
                    short_text(&path, &missing, scratch)
                }
            }
            InteractionMode::Default => {
                let Ok(state) = api.read(|c| crate::db::exit_reminder(c, sid)) else {
                    return Vec::new();
                };
                use crate::db::ExitReminder;
                match state {
                    Some(ExitReminder::Due) => {
                        let shown = ExitReminder::ShownIn(cx.turn_id);
                        if api
                            .write(|tx| tx.set_exit_reminder(sid, Some(shown)))
                            .is_err()
                        {
                            return Vec::new();
                        }
                        EXIT_TEXT.to_string()
                    }
                    Some(ExitReminder::ShownIn(t)) if t == cx.turn_id => EXIT_TEXT.to_string(),
                    Some(ExitReminder::ShownIn(_)) | None => return Vec::new(),
                }
            }
        };
        vec![Reminder {
            priority: PRIORITY,
            source: "plan",
            text,
        }]
    }
}
