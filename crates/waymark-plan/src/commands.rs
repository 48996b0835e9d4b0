//! `/plan on | off | status | view` (PM-5).

use waymark_protocol::{PlanModeReason, PlanStatus};

use waymark_extension::commands::{CommandContext, CommandSpec, SlashCommand};
use waymark_extension::error::{Error, Result};
use waymark_protocol::InteractionMode;
use waymark_store as store;

pub(crate) struct PlanCommand;

impl SlashCommand for PlanCommand {
    fn spec(&self) -> CommandSpec {
        CommandSpec {
            name: "plan",
            usage: "/plan on|off|status|view",
            summary: "enter or leave plan mode, show its state, print the plan file",
            details: "",
        }
    }

    fn run(&self, cx: &mut CommandContext<'_, '_>, args: &str) -> Result<String> {
        let api = cx
            .api
            .ok_or_else(|| Error::refused("/plan needs a session".into()))?;
        let path = super::plan_path(api.artifacts());
        match args.trim() {
            "on" => {
                let id = super::enter(cx.tx, api, PlanModeReason::Command)?;
                super::prepare_draft(cx.tx, api.artifacts())?;
                Ok(format!(
                    "Plan mode is on (plan {id}). The next messages are planned, not implemented; the plan goes to {}.",
                    path.display()
                ))
            }
            "off" => {
                super::leave(cx.tx, api, PlanStatus::Left, PlanModeReason::Command)?;
                Ok("Plan mode is off. Nothing from the plan was implemented.".into())
            }
            "status" | "" => {
                let session = store::sessions::get(cx.tx.conn(), cx.session_id)?
                    .ok_or_else(|| Error::SessionNotFound(cx.session_id.to_string()))?;
                let plan = crate::db::current_plan(cx.tx.conn(), cx.session_id)?;
                let mode = match session.interaction_mode {
                    InteractionMode::Plan => "on",
                    InteractionMode::Default => "off",
                };
                let mut out = format!("Plan mode: {mode}\nPlan file: {}", path.display());
                if let Some(p) = plan {
                    out.push_str(&format!(
                        "\nPlan: {} ({}, {} revision{})",
                        p.id,
                        p.status.as_str(),
                        p.revisions,
                        if p.revisions == 1 { "" } else { "s" }
                    ));
                }
                if let Some(q) = store::questionnaires::pending(cx.tx.conn(), cx.session_id)? {
                    out.push_str(&format!("\nWaiting for: {} ({})", q.kind().as_str(), q.id));
                }
                Ok(out)
            }
            "view" => match super::read_plan_file(&path, super::SNAPSHOT_LIMIT) {
                Ok(Some(r)) => {
                    let text = String::from_utf8_lossy(&r.bytes);
                    if text.trim().is_empty() && !r.is_cut() {
                        Ok(format!("{} is empty.", path.display()))
                    } else if r.is_cut() {
                        Ok(format!(
                            "{} (the first {} KiB of {} KiB):\n\n{text}",
                            path.display(),
                            r.bytes.len() / 1024,
                            r.total.div_ceil(1024)
                        ))
                    } else {
                        Ok(format!("{}:\n\n{text}", path.display()))
                    }
                }
                Ok(None) => Ok(format!("There is no plan file yet ({}).", path.display())),
                Err(e) => Ok(e.to_string()),
            },
            other => Err(Error::UnknownCommand(format!(
                "`/plan {other}` is not a plan command; use /plan on, /plan off, /plan status or /plan view"
            ))),
        }
    }
}
