//! `waymark plan …`: the plan file, its revisions and diffs, the plans of a session, the
//! comments on them, the user's own edit, and export.

use crate::follow::{submit_without_running, submit_without_running_for};
use crate::term::{errln, out, outln};
use clap::Subcommand;
use std::path::PathBuf;
use std::process::ExitCode;
use waymark_protocol::Op;
use waymark_runtime::Runtime;

#[derive(Subcommand)]
pub(crate) enum PlanCommand {
    /// Print the current plan file (`--json`: the plan view the desktop shows: the file,
    /// its rendered HTML, every revision and the review state).
    Show {
        #[arg(long)]
        session: String,
        #[arg(long)]
        json: bool,
    },
    /// List the frozen revisions.
    Revisions {
        #[arg(long)]
        session: String,
        #[arg(long)]
        json: bool,
    },
    /// Unified diff between two revisions of the current plan (`v1 v2` or `1 2`); `--json`
    /// adds the side-by-side rows.
    Diff {
        #[arg(long)]
        session: String,
        from: String,
        to: String,
        #[arg(long)]
        json: bool,
    },
    /// The plan file rendered to sanitized HTML (what the desktop app shows).
    Render {
        #[arg(long)]
        session: String,
    },
    /// Every plan of the session (one per entry into plan mode), with how each ended.
    List {
        #[arg(long)]
        session: String,
        #[arg(long)]
        json: bool,
    },
    /// A revision of any plan, earlier ones included (default: the plan's newest).
    Read {
        #[arg(long)]
        session: String,
        #[arg(long)]
        plan: String,
        #[arg(long)]
        version: Option<u32>,
    },
    /// The comments on the current plan's revisions, each addressed, unchanged or open.
    Comments {
        #[arg(long)]
        session: String,
        #[arg(long)]
        json: bool,
    },
    /// Copy an approved revision into the workspace (default: the newest approved plan, to
    /// docs/plans/<date>-<slug>.md). Confined to the workspace; `ask` mode needs --yes.
    Export {
        #[arg(long)]
        session: String,
        #[arg(long)]
        plan: Option<String>,
        #[arg(long)]
        version: Option<u32>,
        /// Where to write it, inside the workspace.
        #[arg(long)]
        path: Option<String>,
        /// Confirm the write when the session's permission mode asks before writes.
        #[arg(long)]
        yes: bool,
    },
    /// Replace the plan with your own edit (plan mode only); the review then approves it.
    Edit {
        #[arg(long)]
        session: String,
        /// The new plan text.
        #[arg(long)]
        file: PathBuf,
    },
}

fn parse_version(v: &str) -> anyhow::Result<u32> {
    v.trim_start_matches(['v', 'V'])
        .parse()
        .map_err(|_| anyhow::anyhow!("`{v}` is not a revision number (use 1, 2… or v1, v2…)"))
}

pub(crate) async fn plan_command(
    runtime: &Runtime,
    command: PlanCommand,
) -> anyhow::Result<ExitCode> {
    match command {
        PlanCommand::Show {
            session,
            json: true,
        } => {
            crate::term::json(&runtime.plan_view(&session)?, true)?;
        }
        PlanCommand::Show {
            session,
            json: false,
        } => {
            let (path, text) = runtime.plan_file(&session)?;
            match text {
                Some(t) if !t.trim().is_empty() => out!("{t}"),
                Some(_) => errln!("{} is empty", path.display()),
                None => errln!("there is no plan file yet ({})", path.display()),
            }
        }
        PlanCommand::List { session, json } => {
            let plans = runtime.plans(&session)?;
            if json {
                crate::term::json(&plans, true)?;
            } else if plans.is_empty() {
                outln!("no plans yet: a plan starts with each entry into plan mode");
            } else {
                for p in plans {
                    outln!(
                        "{}{}  {:<17}  {} revision{}  {}  {}",
                        if p.current { "* " } else { "  " },
                        p.plan_id,
                        p.status.as_str(),
                        p.revisions,
                        if p.revisions == 1 { "" } else { "s" },
                        waymark_runtime::clock::utc_label(p.created_at),
                        p.title
                            .as_deref()
                            .map(waymark_runtime::display::escape_line)
                            .unwrap_or_default()
                    );
                }
            }
        }
        PlanCommand::Read {
            session,
            plan,
            version,
        } => {
            let version = match version {
                Some(v) => v,
                None => runtime
                    .plans(&session)?
                    .into_iter()
                    .find(|p| p.plan_id == plan)
                    .map(|p| p.revisions)
                    .filter(|n| *n > 0)
                    .ok_or_else(|| {
                        anyhow::anyhow!("this session has no revision of plan {plan}")
                    })?,
            };
            out!(
                "{}",
                runtime.plan_revision(&session, &plan, version)?.markdown
            );
        }
        PlanCommand::Comments { session, json } => {
            let comments = runtime.plan_comments(&session, None)?;
            if json {
                crate::term::json(&comments, true)?;
            } else if comments.is_empty() {
                outln!("no comments on this plan");
            } else {
                for c in comments {
                    let state = match (c.state, c.now_at) {
                        (waymark_protocol::CommentState::Unchanged, Some((a, b))) => {
                            format!("unchanged (now lines {a}-{b})")
                        }
                        (s, _) => waymark_protocol::wire::name(&s).to_string(),
                    };
                    outln!("v{} lines {}-{}  {state}", c.version, c.start, c.end);
                    for l in c.quote.lines() {
                        outln!("  > {}", waymark_runtime::display::escape_line(l));
                    }
                    outln!("  {}", waymark_runtime::display::escape_line(&c.text));
                }
            }
        }
        PlanCommand::Export {
            session,
            plan,
            version,
            path,
            yes,
        } => {
            let out = submit_without_running_for(
                runtime,
                &session,
                Op::ExportPlan {
                    plan_id: plan,
                    version,
                    path,
                    confirm: yes,
                },
            )
            .await?;
            outln!("Exported to {out}");
        }
        PlanCommand::Revisions { session, json } => {
            let revs = runtime.plan_revisions(&session)?;
            if json {
                crate::term::json(&revs, true)?;
            } else if revs.is_empty() {
                outln!("no revisions yet: a revision is frozen when the agent submits the plan");
            } else {
                for r in revs {
                    outln!(
                        "{} v{}  {} bytes  by {}{}  sha256 {}",
                        r.plan_id,
                        r.version,
                        r.bytes,
                        r.author,
                        if r.truncated { " (truncated)" } else { "" },
                        &r.sha256[..12]
                    );
                }
            }
        }
        PlanCommand::Diff {
            session,
            from,
            to,
            json,
        } => {
            let (a, b) = (parse_version(&from)?, parse_version(&to)?);
            let plan_id = runtime
                .plan_revisions(&session)?
                .last()
                .map(|r| r.plan_id.clone())
                .ok_or_else(|| anyhow::anyhow!("this session has no plan revisions yet"))?;
            let at = |version| waymark_protocol::RevisionRef {
                plan_id: plan_id.clone(),
                version,
            };
            let diff = runtime.plan_diff(&session, &at(a), &at(b))?;
            if json {
                crate::term::json(&diff, true)?;
            } else {
                out!("{}", diff.unified);
            }
        }
        PlanCommand::Edit { session, file } => {
            let text = waymark_runtime::plan::read_user_plan(&file)?;
            submit_without_running(runtime, &session, Op::EditPlan { text }).await?;
            outln!("The plan now holds your edit; approving the review implements this version.");
        }
        PlanCommand::Render { session } => {
            let (path, text) = runtime.plan_file(&session)?;
            let text = text
                .ok_or_else(|| anyhow::anyhow!("there is no plan file yet ({})", path.display()))?;
            out!("{}", waymark_runtime::plan::render::render(&text));
        }
    }
    Ok(ExitCode::SUCCESS)
}
