//! `waymark`: the headless front end of the Waymark runtime. It holds no business logic: it
//! turns arguments into ops, prints the event stream and maps outcomes to exit codes
//! (0 idle, 1 error — including a run whose last turn failed, 2 usage, 3 waiting on a
//! questionnaire, 4 a goal stopped by a usage limit that resets later than `--wait-limit`
//! or never resumes by itself).

// Everything the CLI prints goes through `term` (cleaned, redacted, flushed).
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod answer;
mod checkpoint;
mod exit;
mod follow;
mod goal;
mod image;
mod limits;
mod mcp;
mod plan;
mod render;
mod term;
mod worktree;

use answer::{build_answer, form_values};
use clap::{Parser, Subcommand};
use follow::{DEFAULT_WAIT_LIMIT, drive, print_events, submit_without_running};
use goal::{GoalCommand, goal_command};
use mcp::{McpCommand, mcp_command};
use plan::{PlanCommand, plan_command};
use std::path::PathBuf;
use std::process::ExitCode;
use term::{errln, outln};
use waymark_config::Config;
use waymark_protocol::{Answer, Intent, MessageSource, Op, PermissionMode, Position};
use waymark_runtime::{Runtime, RuntimeOptions, SessionSpec, paths, sandbox};
use worktree::{WorktreeCommand, worktree_command};

#[derive(Parser)]
#[command(
    name = "waymark",
    version,
    about = "Waymark: a coding agent you stay in control of"
)]
struct Cli {
    /// Where sessions are stored (default: the platform data dir; env WAYMARK_DATA_DIR).
    #[arg(long, global = true, env = "WAYMARK_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Settings file (default: the platform config dir; env WAYMARK_CONFIG).
    #[arg(long, global = true, env = "WAYMARK_CONFIG")]
    config: Option<PathBuf>,
    /// Log level for `logs/waymark.log` in the data dir: error, warn (default), info (adds
    /// spans and durations), debug, trace, off, or a filter such as `waymark_runtime=debug` (env
    /// WAYMARK_LOG).
    #[arg(long, global = true)]
    log_level: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Admit PROMPT (slash commands too) and run the session until it is idle or waits.
    Exec {
        /// Project folder of a new session (default: the current directory).
        #[arg(long)]
        workspace: Option<PathBuf>,
        /// Continue this session instead of creating one.
        #[arg(long)]
        session: Option<String>,
        /// Model spec: openai:<model>, anthropic:<model>, ollama:<model>, scripted:<path>, <provider>[:<model>].
        #[arg(long)]
        model: Option<String>,
        /// ask | auto-edit | auto | read-only
        #[arg(long)]
        permission: Option<PermissionMode>,
        /// One JSON event per line.
        #[arg(long)]
        json: bool,
        /// The prompt enters plan mode: investigate and write a plan for approval first.
        #[arg(long)]
        plan: bool,
        /// How goal completion claims are checked (overrides the settings).
        #[arg(long, value_parser = ["none", "subagent", "evaluator"])]
        verification: Option<String>,
        /// The model's context window in tokens (overrides the settings and the known
        /// default for the model); the conversation is compacted before it fills.
        #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(1000..=10_000_000))]
        context_window: Option<u64>,
        /// When a provider's usage limit stops the goal: wait for it to reset (the goal then
        /// resumes) if that is at most this far off (`90s`, `10m`, `2h`; `0` never waits).
        /// Otherwise exit with code 4, printing when it resets.
        #[arg(long, value_name = "TIME", default_value = "10m", value_parser = parse_wait)]
        wait_limit: std::time::Duration,
        /// Work in a new git worktree of the project (branch `waymark/<NAME>`, a name made
        /// from the prompt when none is given), so the checkout stays untouched; finish it
        /// with `waymark worktree`. `/goal … worktree` asks the same.
        #[arg(long, value_name = "NAME", num_args = 0..=1, default_missing_value = "")]
        worktree: Option<String>,
        /// Attach an image (PNG, JPEG, GIF or WebP, at most 5 MB) to the message; repeat
        /// for several. The model must take images.
        #[arg(long = "image", value_name = "PATH", requires = "prompt")]
        images: Vec<PathBuf>,
        /// The message; without it, queued or parked work resumes.
        prompt: Option<String>,
    },
    /// Serve the Agent Client Protocol (version 1) on stdin and stdout, for an editor that
    /// hosts Waymark (Zed, JetBrains, Neovim, Emacs), here or through `ssh host waymark acp`.
    /// Stdout carries only the protocol; it ends when the editor closes stdin.
    Acp {
        /// Model spec of the sessions it makes (default: the settings').
        #[arg(long)]
        model: Option<String>,
        /// ask | auto-edit | auto | read-only
        #[arg(long)]
        permission: Option<PermissionMode>,
    },
    /// Plan mode: the plan file, its frozen revisions, diffs and the sanitized HTML.
    Plan {
        #[command(subcommand)]
        command: PlanCommand,
    },
    /// Thread goals: the current goal and its event timeline.
    Goal {
        #[command(subcommand)]
        command: GoalCommand,
    },
    /// MCP servers: list them with their state and tools, add or remove one.
    Mcp {
        #[command(subcommand)]
        command: McpCommand,
    },
    /// A session's git worktree: status, diff, merge into the branch it came from, discard.
    Worktree {
        #[command(subcommand)]
        command: WorktreeCommand,
    },
    /// Answer a questionnaire, then run the session on.
    Answer {
        #[arg(long)]
        session: String,
        questionnaire: String,
        /// allow_once | allow_for_session | allow_prefix | deny | approve | defer | revise | reject | withdraw;
        /// a tool server's form: accept | decline | cancel
        answer: String,
        /// With `accept`: a field of the form, `name=value` (repeatable; a list as `a,b`).
        #[arg(long = "field", value_name = "NAME=VALUE")]
        fields: Vec<String>,
        /// Message for deny, feedback for revise.
        #[arg(long)]
        text: Option<String>,
        /// The option chosen when approving a plan that offered options.
        #[arg(long)]
        option: Option<u32>,
        /// With `revise`: a comment on lines of the revision under review, `12-14:"text"` or
        /// `12:"text"` (repeatable).
        #[arg(long = "comment", value_name = "LINES:TEXT")]
        comments: Vec<String>,
        /// With `approve`: implement the plan as a goal (its budget from the plan's
        /// `## Budget`, or --budget).
        #[arg(long)]
        as_goal: bool,
        /// With `--as-goal`: the goal's budget in the /goal syntax (`tokens=50K turns=20
        /// time=2h`), instead of the plan's.
        #[arg(long, requires = "as_goal")]
        budget: Option<String>,
        /// With `approve`: implement the plan in a new session in a new git worktree of the
        /// project (branch `waymark/<NAME>`), which then runs; this session records the
        /// approval.
        #[arg(long, value_name = "NAME", num_args = 0..=1, default_missing_value = "")]
        worktree: Option<String>,
        /// Only record the answer; do not run the session.
        #[arg(long)]
        no_run: bool,
        #[arg(long)]
        json: bool,
    },
    /// List sessions.
    Sessions {
        #[arg(long)]
        json: bool,
    },
    /// Show a session: queue, questionnaires, usage.
    Show {
        #[arg(long)]
        session: String,
        #[arg(long)]
        json: bool,
    },
    /// A session's checkpoints, oldest first: id, turn, time, why, files changed since the
    /// one before.
    Checkpoints {
        #[arg(long)]
        session: String,
        #[arg(long)]
        json: bool,
    },
    /// Put the files and the conversation back as checkpoint --to had them (both unless
    /// --files or --conversation). It can be undone: it says how.
    Rewind {
        #[arg(long)]
        session: String,
        /// The checkpoint (see `waymark checkpoints`).
        #[arg(long)]
        to: String,
        /// Only the files; the conversation goes on as it is.
        #[arg(long, conflicts_with = "conversation")]
        files: bool,
        /// Only the conversation; the files stay as they are.
        #[arg(long)]
        conversation: bool,
        #[arg(long)]
        json: bool,
    },
    /// Print a session's event log, one JSON object per line.
    Events {
        #[arg(long)]
        session: String,
        /// Only events with a larger seq.
        #[arg(long, default_value_t = 0)]
        after: u64,
    },
}

/// `--wait-limit`: `0`, or a number with `s`, `m` or `h`, at most a week.
fn parse_wait(s: &str) -> anyhow::Result<std::time::Duration> {
    let t = s.trim();
    if t == "0" {
        return Ok(std::time::Duration::ZERO);
    }
    let unit = match t.chars().last() {
        Some('s') => 1,
        Some('m') => 60,
        Some('h') => 3600,
        _ => anyhow::bail!("`{s}` is not a time: write 90s, 10m, 2h or 0"),
    };
    let Ok(n) = t[..t.len() - 1].parse::<u64>() else {
        anyhow::bail!("`{s}` is not a time: write 90s, 10m, 2h or 0");
    };
    match n.checked_mul(unit) {
        Some(secs) if secs <= 7 * 24 * 3600 => Ok(std::time::Duration::from_secs(secs)),
        _ => anyhow::bail!("`{s}` is longer than the week a run may wait"),
    }
}

/// Restores the default SIGPIPE action, so `waymark events | head` ends quietly like other
/// command-line tools instead of failing on a closed pipe. An interrupted turn is closed as
/// aborted the next time the session is opened.
#[allow(unsafe_code)]
fn default_sigpipe() {
    // SAFETY: setting a signal's disposition to SIG_DFL at start-up, before any thread
    // exists, has no memory-safety implications.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// `waymark acp` writes to an editor that may go away: a closed pipe is then an error the
/// connection ends on, not a signal that kills the process before its sessions close.
#[allow(unsafe_code)]
fn ignore_sigpipe() {
    // SAFETY: setting SIGPIPE's disposition to SIG_IGN has no memory-safety implications;
    // the threads running then only see EPIPE from a write instead of the signal.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}

fn main() -> ExitCode {
    // Re-executed as the plan-mode sandbox helper: apply Landlock, then exec the command.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).and_then(|a| a.to_str()) == Some(sandbox::HELPER_ARG) {
        // The sandbox helper's streams are the command's.
        #[allow(clippy::disallowed_methods)]
        let code = sandbox::helper_main(&args[2..], &mut std::io::stdout(), &mut std::io::stderr());
        return ExitCode::from(code.clamp(0, 255) as u8);
    }
    default_sigpipe();
    // Usage errors and help go through the terminal sink too: an argument echoed back in
    // an error is shown escaped, never interpreted.
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let text = e.render().to_string();
            if e.use_stderr() {
                term::write_err(&text);
            } else {
                term::write_out(&text);
            }
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            errln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) => {
            errln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn load_config(path: Option<PathBuf>) -> anyhow::Result<Config> {
    let explicit = path.is_some();
    let path = path.unwrap_or_else(paths::default_config_file);
    Ok(waymark_runtime::settings::load(&path, explicit)?)
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let settings_path = cli
        .config
        .clone()
        .unwrap_or_else(paths::default_config_file);
    let mut config = load_config(cli.config)?;
    if let Command::Exec {
        verification,
        context_window,
        ..
    } = &cli.command
    {
        if let Some(v) = verification {
            config.goal.verification = Some(match v.as_str() {
                "none" => waymark_config::Verification::None,
                "subagent" => waymark_config::Verification::Subagent,
                _ => waymark_config::Verification::Evaluator,
            });
        }
        if let Some(n) = context_window {
            config.turn.context_tokens = Some(*n);
        }
    }
    let data_dir = cli.data_dir.unwrap_or_else(paths::default_data_dir);
    let mut opts = RuntimeOptions::new(data_dir.clone(), config);
    opts.user_instructions = waymark_runtime::instructions::user_file(&settings_path);
    opts.settings_dir = settings_path.parent().map(std::path::Path::to_path_buf);
    if let Ok(exe) = std::env::current_exe() {
        opts.sandbox_helper = Some(vec![exe.into_os_string(), sandbox::HELPER_ARG.into()]);
    }
    let runtime = Runtime::open(opts)?;
    // From here on, nothing printed shows a secret the runtime knows.
    term::use_secrets(runtime.redactor_source());
    // After the open, which creates the data dir private.
    waymark_runtime::logging::init(
        &data_dir,
        cli.log_level.as_deref(),
        runtime.redactor_source(),
    )?;
    match cli.command {
        Command::Exec {
            workspace,
            session,
            model,
            permission,
            json,
            plan,
            prompt,
            verification: _,
            context_window: _,
            wait_limit,
            worktree,
            images,
        } => {
            // Read before any session is made: a file that cannot be sent stops the run here.
            let images = image::read_all(&images)?;
            if plan && prompt.is_none() {
                anyhow::bail!("--plan needs a prompt: the message that starts the plan");
            }
            // `/goal … worktree` is `--worktree` with the goal.
            let (prompt, worktree) = match prompt
                .as_deref()
                .and_then(waymark_runtime::goal::syntax::take_worktree)
            {
                Some((rest, name)) => (Some(rest), Some(name.or(worktree).unwrap_or_default())),
                None => (prompt, worktree),
            };
            let spec = SessionSpec {
                workspace,
                model,
                permission_mode: permission,
                hold: false,
            };
            let handle = match (&session, &worktree) {
                (Some(_), Some(_)) => anyhow::bail!(
                    "--worktree starts a new session in a new worktree: it does not go with --session"
                ),
                (Some(id), None) => runtime.open_session(id, spec)?,
                (None, Some(name)) => {
                    let h = runtime.create_session_in_worktree(
                        spec,
                        Some(name.as_str()),
                        prompt.as_deref().unwrap_or("session"),
                    )?;
                    if !json {
                        outln!("{}", worktree::made_line(&runtime, h.id())?);
                    }
                    h
                }
                (None, None) => runtime.create_session(spec)?,
            };
            let op = prompt.map(|text| Op::Submit {
                text,
                source: MessageSource::User,
                position: Position::Tail,
                idempotency_key: None,
                intent: plan.then_some(Intent::PlanEntry),
                images,
            });
            drive(&runtime, handle, op, json, wait_limit).await
        }
        Command::Acp { model, permission } => {
            let options = waymark_acp::Options { model, permission };
            // An editor that goes away (a dropped SSH link) must not kill the process mid-write:
            // the write fails instead, and the sessions close as Stop would. So do SIGTERM,
            // SIGHUP and SIGINT (Ctrl-C where it was started by hand).
            ignore_sigpipe();
            let mut terminate = follow::unix_signal(tokio::signal::unix::SignalKind::terminate())?;
            let mut hangup = follow::unix_signal(tokio::signal::unix::SignalKind::hangup())?;
            let mut interrupt = follow::unix_signal(tokio::signal::unix::SignalKind::interrupt())?;
            let until = async move {
                tokio::select! {
                    _ = terminate.recv() => {}
                    _ = hangup.recv() => {}
                    _ = interrupt.recv() => {}
                }
                // A second signal while the sessions close: leave at once (everything is
                // stored as it happens).
                tokio::spawn(async move {
                    tokio::select! {
                        _ = terminate.recv() => {}
                        _ = hangup.recv() => {}
                        _ = interrupt.recv() => {}
                    }
                    std::process::exit(130);
                });
            };
            let (stdin, stdout) = term::protocol_streams();
            waymark_acp::serve_stdio(std::sync::Arc::new(runtime), options, stdin, stdout, until)
                .await
                .map_err(|e| anyhow::anyhow!("the ACP connection failed: {e}"))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Answer {
            session,
            questionnaire,
            answer,
            text,
            option,
            comments,
            as_goal,
            budget,
            worktree,
            no_run,
            json,
            fields,
        } => {
            let mut answer = build_answer(&answer, text, option, &comments, as_goal, budget)?;
            if let Some(name) = worktree {
                return answer::approve_in_worktree(
                    &runtime,
                    (&session, &questionnaire),
                    answer,
                    &name,
                    no_run,
                    json,
                )
                .await;
            }
            if let Answer::Accept { content } = &mut answer {
                *content = form_values(&fields)?;
            } else if !fields.is_empty() {
                anyhow::bail!("--field goes with `accept`");
            }
            // A form belongs to a call running now, likely in another process: the answer
            // goes through the store to that process.
            if matches!(
                answer,
                Answer::Accept { .. } | Answer::Decline | Answer::Cancel
            ) {
                runtime.answer_form(&session, &questionnaire, &answer)?;
                outln!(
                    "[answered {questionnaire}: {}; the call waiting on it goes on]",
                    answer.name()
                );
                return Ok(ExitCode::SUCCESS);
            }
            let op = Op::Answer {
                questionnaire_id: questionnaire,
                answer,
            };
            if no_run {
                submit_without_running(&runtime, &session, op).await?;
                return Ok(ExitCode::SUCCESS);
            }
            let handle = runtime.open_session(&session, SessionSpec::default())?;
            drive(&runtime, handle, Some(op), json, DEFAULT_WAIT_LIMIT).await
        }
        Command::Sessions { json } => {
            let list = runtime.list_sessions()?;
            if json {
                crate::term::json(&list, true)?;
            } else if list.is_empty() {
                outln!("no sessions yet: start one with `waymark exec \"…\"`");
            } else {
                for s in list {
                    let pending = s
                        .pending_questionnaire
                        .map(|q| format!(" · waiting on {q}"))
                        .unwrap_or_default();
                    outln!(
                        "{}  {}  {} queued{}  {}  ({})",
                        s.id,
                        s.interaction_mode.as_str(),
                        s.queued,
                        pending,
                        s.title.unwrap_or_else(|| "(untitled)".into()),
                        s.workspace
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Show { session, json } => {
            let snap = runtime.snapshot(&session)?;
            if json {
                crate::term::json(&snap, true)?;
                return Ok(ExitCode::SUCCESS);
            }
            let s = &snap.summary;
            outln!("session     {}", s.id);
            outln!("title       {}", s.title.as_deref().unwrap_or("(untitled)"));
            outln!("workspace   {}", s.workspace);
            outln!("folder      {}", snap.session_dir);
            outln!("model       {}", s.model.as_deref().unwrap_or("(none)"));
            outln!(
                "mode        {} · permissions {}",
                s.interaction_mode.as_str(),
                s.permission_mode
            );
            outln!(
                "turns       {} · tokens in {} out {}",
                snap.turns,
                snap.usage.input_tokens,
                snap.usage.output_tokens
            );
            let today = runtime.daily_spend()?;
            let cap = today
                .cap_usd
                .and_then(waymark_protocol::cost::micros)
                .map(|c| format!(" of the {} cap", waymark_protocol::cost::label(c)))
                .unwrap_or_default();
            outln!(
                "cost        {} · today {} across all sessions{cap}",
                snap.spend.label(),
                today.spend.label()
            );
            outln!("events      {}", snap.last_seq);
            outln!("messages:");
            for m in &snap.messages {
                outln!(
                    "  #{:<4} {:<13} {:<8} {}",
                    m.id,
                    m.source.as_str(),
                    m.status,
                    m.text.lines().next().unwrap_or("")
                );
            }
            for q in snap
                .questionnaires
                .iter()
                .filter(|q| q.status == waymark_protocol::QuestionnaireStatus::Pending)
            {
                outln!("{}", render::questionnaire(&s.id, q));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Plan { command } => plan_command(&runtime, command).await,
        Command::Goal { command } => goal_command(&runtime, command).await,
        Command::Mcp { command } => mcp_command(&runtime, &settings_path, command).await,
        Command::Checkpoints { session, json } => checkpoint::list(&runtime, &session, json),
        Command::Worktree { command } => worktree_command(&runtime, command),
        Command::Rewind {
            session,
            to,
            files,
            conversation,
            json,
        } => {
            let scope = match (files, conversation) {
                (true, _) => waymark_protocol::checkpoint::RewindScope::Files,
                (_, true) => waymark_protocol::checkpoint::RewindScope::Conversation,
                _ => waymark_protocol::checkpoint::RewindScope::Both,
            };
            checkpoint::rewind(&runtime, &session, to, scope, json).await
        }
        Command::Events { session, after } => {
            print_events(&runtime, &session, after, |_| true)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
