//! Human-readable rendering of events: streamed text, one line per tool call, readable
//! questionnaires with the exact commands that answer them.

use crate::term::{errln, out, outln};
use serde_json::Value;
use waymark_protocol::{Event, EventKind, Question, QuestionnaireInfo, ToolStatus, TurnEndReason};

/// Prints events as they come; remembers whether a line is open after streamed text.
#[derive(Default)]
pub struct Printer {
    json: bool,
    mid_line: bool,
    streamed: bool,
    calls: std::collections::HashMap<String, String>,
    /// The agent of each subagent call not yet finished (its result does not name it).
    agents: std::collections::HashMap<String, String>,
}

/// Untrusted text (model output, commands, tool output) as the terminal may show it:
/// escapes and other control characters escaped, never interpreted.
pub(crate) fn safe(s: &str) -> String {
    waymark_runtime::display::escape_block(s)
}

fn one_line(s: &str, max: usize) -> String {
    let first = s
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let first = &waymark_runtime::display::escape_line(first);
    let more = s.lines().filter(|l| !l.trim().is_empty()).count() > 1;
    let mut out: String = first.chars().take(max).collect();
    if first.chars().count() > max || more {
        out.push('…');
    }
    out
}

/// A short description of a tool call's arguments.
pub fn call_summary(name: &str, args: &Value) -> String {
    let s = |k: &str| args.get(k).and_then(Value::as_str);
    let text = match name {
        "bash" => s("command").map(str::to_string),
        "grep" => s("pattern").map(|p| format!("/{p}/ {}", s("path").unwrap_or(""))),
        "glob" => s("pattern").map(str::to_string),
        "apply_patch" => s("patch").map(|p| {
            let files: Vec<&str> = p.lines().filter_map(|l| l.strip_prefix("+++ ")).collect();
            files.join(", ")
        }),
        _ => s("path").map(str::to_string),
    };
    one_line(&text.unwrap_or_else(|| args.to_string()), 100)
}

impl Printer {
    pub fn new(json: bool) -> Self {
        Printer {
            json,
            ..Default::default()
        }
    }

    fn end_line(&mut self) {
        if self.mid_line {
            outln!();
            self.mid_line = false;
        }
    }

    /// Learns tool-call arguments from earlier events without printing them, so results of
    /// calls made by an earlier process still show what ran.
    pub fn remember(&mut self, events: &[Event]) {
        for ev in events {
            if let EventKind::ToolCall {
                call_id,
                name,
                arguments,
                subagent,
                ..
            } = &ev.kind
            {
                self.calls
                    .insert(call_id.clone(), call_summary(name, arguments));
                if let Some(s) = subagent {
                    self.agents.insert(call_id.clone(), s.agent.clone());
                }
            }
        }
    }

    pub fn print(&mut self, ev: &Event) {
        if self.json {
            let _ = crate::term::json(ev, false);
            return;
        }
        match &ev.kind {
            EventKind::SessionStarted {
                workspace,
                model,
                permission_mode,
                interaction_mode,
                resumed,
                ..
            } => {
                outln!(
                    "● {} session {} · model {model} · permissions {permission_mode}{} · workspace {workspace}",
                    if *resumed { "resumed" } else { "new" },
                    ev.session_id,
                    if *interaction_mode == waymark_protocol::InteractionMode::Plan {
                        " · plan mode"
                    } else {
                        ""
                    }
                );
            }
            EventKind::SessionConfigured {
                model,
                permission_mode,
                ..
            } => {
                outln!("● now on model {model} · permissions {permission_mode}");
            }
            EventKind::MessageAdmitted {
                source,
                text,
                images,
                ..
            } => {
                self.end_line();
                if *source != waymark_protocol::MessageSource::User {
                    outln!("[{} message] {}", source.as_str(), one_line(text, 100));
                }
                for i in images {
                    // The base64 length, as bytes: about what was sent.
                    outln!(
                        "[image attached: {}, {} KB]",
                        i.mime,
                        i.data.len() * 3 / 4 / 1024
                    );
                }
            }
            EventKind::MessageDropped { reason, .. } => outln!("[message dropped: {reason}]"),
            EventKind::CommandOutput { text, .. } => {
                self.end_line();
                outln!("{}", safe(text));
            }
            EventKind::TurnStarted { .. } => self.streamed = false,
            EventKind::AssistantDelta { text, .. } => {
                out!("{}", safe(text));
                self.mid_line = !text.ends_with('\n');
                self.streamed = true;
            }
            EventKind::AssistantMessage { text, .. } => {
                if !self.streamed && !text.is_empty() {
                    out!("{}", safe(text));
                    self.mid_line = !text.ends_with('\n');
                }
                self.end_line();
                self.streamed = false;
            }
            // The result shows the command's output once it ends (`--json` has it live).
            EventKind::ToolOutput { .. } => {}
            EventKind::ToolProgress {
                progress,
                total,
                message,
                ..
            } => {
                self.end_line();
                let amount = match total {
                    Some(t) if *t > 0.0 => {
                        format!("{:.0}%", (progress / t * 100.0).clamp(0.0, 100.0))
                    }
                    _ => format!("{progress}"),
                };
                match message {
                    Some(m) => outln!("  … {amount} {}", one_line(m, 100)),
                    None => outln!("  … {amount}"),
                }
            }
            EventKind::ModelRetry {
                attempt,
                wait_ms,
                error,
            } => {
                self.end_line();
                outln!(
                    "[model call failed ({}); retrying in {:.1} s, attempt {}]",
                    error.code,
                    *wait_ms as f64 / 1000.0,
                    attempt + 1
                );
            }
            EventKind::ToolCall {
                call_id,
                name,
                arguments,
                subagent,
                ..
            } => {
                self.calls
                    .insert(call_id.clone(), call_summary(name, arguments));
                if let Some(s) = subagent {
                    self.agents.insert(call_id.clone(), s.agent.clone());
                }
            }
            EventKind::ToolResult {
                call_id,
                name,
                status,
                content,
                actor,
                ..
            } => {
                let agent = self.agents.remove(call_id);
                self.end_line();
                let mark = match status {
                    ToolStatus::Ok => "✓",
                    ToolStatus::Denied => "⊘",
                    ToolStatus::Error => "✗",
                };
                let detail = match status {
                    ToolStatus::Ok => String::new(),
                    ToolStatus::Denied | ToolStatus::Error => {
                        format!("  ({}: {})", status.as_str(), one_line(content, 120))
                    }
                };
                let summary = self.calls.remove(call_id).unwrap_or_default();
                // The goal's reviewer works after the turn: its calls are marked as its own.
                let who = match (actor, agent.as_deref()) {
                    (waymark_protocol::CallActor::Verifier, _) => "[reviewer] ".to_string(),
                    (waymark_protocol::CallActor::Subagent(_), Some(a)) => {
                        format!("[task:{}] ", waymark_protocol::display::escape_line(a))
                    }
                    (waymark_protocol::CallActor::Subagent(_), None) => "[subagent] ".to_string(),
                    (waymark_protocol::CallActor::Main, _) => String::new(),
                };
                outln!("  {mark} {who}{name} {summary}{detail}");
            }
            EventKind::ContextCompacted {
                before_tokens,
                after_tokens,
                ..
            } => {
                outln!(
                    "[context compacted: about {before_tokens} tokens summarized down to {after_tokens}]"
                );
            }
            EventKind::ContextElided { items, bytes, .. } => {
                outln!(
                    "[context: {items} old tool outputs ({bytes} bytes) replaced by notes to fit the model]"
                );
            }
            EventKind::TurnFinished {
                reason,
                error,
                recovered,
                ..
            } => {
                self.end_line();
                match (reason, error) {
                    (_, Some(e)) => outln!("✗ turn failed: {}: {}", e.code, safe(&e.message)),
                    (TurnEndReason::Completed, None) => {}
                    (TurnEndReason::Aborted, None) if *recovered => {
                        outln!("[an interrupted turn was closed as aborted]")
                    }
                    (r, None) => outln!("[turn ended: {}]", r.as_str()),
                }
            }
            EventKind::QuestionnaireOpened { .. }
            | EventKind::QuestionnaireUpdated { .. }
            | EventKind::QuestionnaireAnswered { .. } => {}
            EventKind::SessionIdle {} | EventKind::SessionWaiting { .. } => self.end_line(),
            EventKind::PlanModeChanged { mode, reason, .. } => {
                self.end_line();
                match mode {
                    waymark_protocol::InteractionMode::Plan => {
                        outln!(
                            "◆ plan mode: investigating read-only, writing the plan file ({reason})"
                        )
                    }
                    waymark_protocol::InteractionMode::Default => {
                        outln!("◆ left plan mode ({reason})")
                    }
                }
            }
            EventKind::PlanRevision {
                version,
                bytes,
                author,
                truncated,
                ..
            } => {
                self.end_line();
                outln!(
                    "◆ plan revision v{version} frozen ({bytes} bytes, by the {author}{})",
                    if *truncated { ", truncated" } else { "" }
                );
            }
            EventKind::PlanCommented {
                version, comments, ..
            } => {
                self.end_line();
                outln!(
                    "◆ {} comment{} on plan v{version} sent with the revise",
                    comments.len(),
                    if comments.len() == 1 { "" } else { "s" }
                );
            }
            EventKind::PlanExported { version, path, .. } => {
                self.end_line();
                outln!("◆ plan v{version} exported to {}", safe(path));
            }
            EventKind::GoalCreate { goal } => {
                self.end_line();
                outln!("◎ goal set: {}", one_line(&goal.objective, 100));
            }
            EventKind::GoalUpdate {
                status,
                reason,
                actor,
                usage_limit,
                findings,
                ..
            } => {
                self.end_line();
                let limit = usage_limit
                    .as_ref()
                    .map(|l| {
                        let then = if l.auto_resume {
                            "resumes by itself then"
                        } else {
                            "does not resume by itself"
                        };
                        format!(
                            " — the limit resets at {}; {then}",
                            waymark_runtime::clock::utc_label(l.resets_at)
                        )
                    })
                    .unwrap_or_default();
                outln!(
                    "◎ goal {} ({}, by {}){limit}",
                    status.as_str(),
                    reason.as_str(),
                    actor.as_str()
                );
                for f in findings {
                    outln!("  weakened: {}", safe(f));
                }
            }
            EventKind::GoalClear { .. } => {
                self.end_line();
                outln!("◎ goal cleared");
            }
            EventKind::GoalUpdated { .. } => {}
            EventKind::GoalCheck {
                command,
                exit_code,
                duration_ms,
                passed,
                failed,
                note,
                baseline,
                ..
            } => {
                self.end_line();
                let verdict = match exit_code {
                    Some(0) => "passes".to_string(),
                    Some(c) => format!("fails (exit {c})"),
                    None => note.clone().unwrap_or_else(|| "did not finish".into()),
                };
                let counted = match (passed, failed) {
                    (Some(p), Some(f)) => format!(", {p} passed, {f} failed"),
                    _ => String::new(),
                };
                outln!(
                    "◎ goal {} `{}` {}{} in {:.1} s",
                    if *baseline { "baseline check" } else { "check" },
                    safe(command),
                    safe(&verdict),
                    counted,
                    *duration_ms as f64 / 1000.0
                );
            }
            EventKind::GoalQueue { queue } => {
                self.end_line();
                match queue.first() {
                    Some(q) => outln!(
                        "◎ goal queue: {} waiting, next: {}",
                        queue.len(),
                        safe(&q.objective)
                    ),
                    None => outln!("◎ goal queue empty"),
                }
            }
            EventKind::SessionError { error } => {
                self.end_line();
                errln!("error: {}: {}", error.code, safe(&error.message));
            }
            EventKind::SessionRewound {
                checkpoint_id,
                files,
                rewound_turns,
                ..
            } => {
                self.end_line();
                outln!(
                    "[rewound to {checkpoint_id}: {} file(s) changed, {} turn(s) out of the conversation]",
                    files.len(),
                    rewound_turns.len()
                );
            }
            EventKind::CheckpointFailed { message, .. } => {
                self.end_line();
                errln!("warning: {}", safe(message));
            }
            EventKind::SessionNotice { text, .. } => {
                self.end_line();
                errln!("note: {}", safe(text));
            }
            EventKind::HookRan { .. } => {
                if let Some(line) = hook_line(&ev.kind) {
                    self.end_line();
                    errln!("{line}");
                }
            }
        }
    }
}

/// A tool server's form: its message (the server's words), each field, and the answers.
fn form(out: &mut String, e: &waymark_protocol::ElicitationQuestion, cmd: &dyn Fn(&str) -> String) {
    use waymark_protocol::form::FieldKind;
    // Texts are escaped by the runtime; the message is the server's, set apart as such.
    out.push_str(&format!(
        "? MCP server `{}` asks for input during `{}`:\n",
        e.server, e.tool
    ));
    for line in e.message.lines() {
        out.push_str(&format!("    │ {line}\n"));
    }
    for f in &e.fields {
        let takes = match &f.kind {
            FieldKind::Text { format, .. } => format.clone().unwrap_or_else(|| "text".into()),
            FieldKind::Number { integer: true, .. } => "whole number".into(),
            FieldKind::Number { .. } => "number".into(),
            FieldKind::Boolean => "true/false".into(),
            FieldKind::Choice {
                options, multiple, ..
            } => format!(
                "{}: {}",
                if *multiple { "some of" } else { "one of" },
                options
                    .iter()
                    .map(|o| if o.label == o.value {
                        o.value.clone()
                    } else {
                        format!("{} ({})", o.value, o.label)
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let default = f
            .default
            .as_ref()
            .map(|d| format!(", default {}", safe(&d.to_string())))
            .unwrap_or_default();
        out.push_str(&format!(
            "  {}{} ({takes}{default}){}\n",
            f.name,
            if f.required { " *" } else { "" },
            f.title
                .iter()
                .chain(f.description.iter())
                .map(|t| format!(" — {t}"))
                .collect::<String>()
        ));
    }
    out.push_str("  Answer with one of:\n");
    out.push_str(&cmd("accept --field NAME=VALUE …"));
    out.push('\n');
    out.push_str(&cmd("decline"));
    out.push('\n');
    out.push_str(&cmd("cancel"));
}

/// The readable form of a waiting questionnaire, with the commands that answer it.
pub fn questionnaire(session: &str, q: &QuestionnaireInfo) -> String {
    let cmd = |a: &str| format!("    waymark answer --session {session} {} {a}", q.id);
    let mut out = String::new();
    match &q.question {
        Question::Permission(p) => {
            // The payload's texts are escaped by the runtime; they are shown whole.
            out.push_str(&format!("? Permission needed to {}\n", p.summary));
            if let Some(command) = &p.command {
                out.push_str("  Command (in full):\n");
                for line in command.lines() {
                    out.push_str(&format!("    │ {line}\n"));
                }
            }
            for f in &p.files {
                out.push_str(&format!("  {} {}\n", f.op, f.path));
                if let Some(note) = &f.note {
                    out.push_str(&format!("    ({note})\n"));
                }
                for line in f.diff.as_deref().unwrap_or("").lines() {
                    out.push_str(&format!("    │ {line}\n"));
                }
            }
            out.push_str("  Answer with one of:\n");
            out.push_str(&format!("{}    (this call only)\n", cmd("allow_once")));
            if let Some(t) = &p.grants.session_text {
                out.push_str(&format!("{}    ({t})\n", cmd("allow_for_session")));
            }
            if let Some(t) = &p.grants.prefix_text {
                out.push_str(&format!("{}    ({t})\n", cmd("allow_prefix")));
            }
            out.push_str(&cmd("deny [--text \"why, or what to do instead\"]"));
        }
        Question::PlanApproval(r) => {
            out.push_str(&format!(
                "? The plan is ready for review (revision v{}).\n",
                r.version
            ));
            for (n, label) in r.options.iter().enumerate() {
                out.push_str(&format!("  Option {}: {}\n", n + 1, safe(label)));
            }
            // The steps a goal's reviewer would check, listed before anyone approves them.
            if r.steps.is_empty() {
                out.push_str(
                    "  Steps: none (the plan has no `## Steps` section a reviewer could check)\n",
                );
            } else {
                out.push_str(&format!(
                    "  Steps ({}), as a reviewer would check them:\n",
                    r.steps.len()
                ));
                for (n, step) in r.steps.iter().enumerate() {
                    out.push_str(&format!("    {}. {}\n", n + 1, safe(step)));
                }
            }
            if let Some(b) = &r.budget {
                out.push_str(&format!("  The plan's budget: {}\n", safe(b)));
            }
            out.push_str("  Answer with one of:\n");
            for a in [
                "approve [--option N]",
                "approve --as-goal [--budget \"tokens=50K turns=20 time=2h\"]",
                "defer",
                "revise [--text \"feedback\"] [--comment 12-14:\"comment\" …]",
                "reject",
                "withdraw",
            ] {
                out.push_str(&cmd(a));
                out.push('\n');
            }
        }
        Question::PlanEntry(e) => {
            out.push_str("? The agent asks to enter plan mode.\n");
            if let Some(reason) = &e.reason {
                out.push_str(&format!("  Why: {}\n", one_line(reason, 200)));
            }
            out.push_str("  Answer with one of:\n");
            out.push_str(&cmd("approve"));
            out.push('\n');
            out.push_str(&cmd("reject"));
        }
        Question::GoalApproval(g) => {
            out.push_str(&format!(
                "? The agent proposes a goal.\n  Objective: {}\n",
                one_line(&g.objective, 200)
            ));
            if let Some(c) = &g.criteria {
                out.push_str(&format!("  Done when: {}\n", one_line(c, 200)));
            }
            let budget: Vec<String> = [
                g.token_budget.map(|t| format!("{t} tokens")),
                g.turn_budget.map(|t| format!("{t} turns")),
                g.time_budget_seconds.map(|t| format!("{t} s")),
            ]
            .into_iter()
            .flatten()
            .collect();
            if !budget.is_empty() {
                out.push_str(&format!("  Budget: {}\n", budget.join(", ")));
            }
            out.push_str("  Answer with one of:\n");
            out.push_str(&cmd("approve"));
            out.push('\n');
            out.push_str(&cmd("reject"));
        }
        Question::Elicitation(e) => form(&mut out, e, &cmd),
        Question::ProjectServers(p) => {
            // Escaped by the runtime: each line is what would run, in full.
            out.push_str(&format!(
                "? {} asks to start {} MCP server(s); they run as you, with these commands:\n",
                p.path,
                p.servers.len()
            ));
            for s in &p.servers {
                out.push_str(&format!("  {}: {}\n", s.name, s.target));
                for line in &s.env {
                    out.push_str(&format!("    env {line}\n"));
                }
                for line in &s.headers {
                    out.push_str(&format!("    header {line}\n"));
                }
                if let Some(dir) = &s.cwd {
                    out.push_str(&format!("    in {dir}\n"));
                }
            }
            out.push_str("  They may run code from this checkout; later changes to that code are not asked about.\n");
            out.push_str("  Answer with one of (remembered for this content of the file):\n");
            out.push_str(&cmd("approve"));
            out.push('\n');
            out.push_str(&cmd("reject"));
        }
        Question::ProjectHooks(p) => {
            // Escaped by the runtime: each line is what would run, in full.
            out.push_str(&format!(
                "? The project's settings ({}) set {} hook(s); each runs as you, on its event:\n",
                p.files.join(", "),
                p.hooks.len()
            ));
            for h in &p.hooks {
                out.push_str(&format!(
                    "  {} [{}] {}  (from {})\n",
                    h.event, h.matcher, h.command, h.file
                ));
            }
            if !p.scripts.is_empty() {
                out.push_str(&format!(
                    "  The answer covers the scripts they run too: {}\n",
                    p.scripts.join(", ")
                ));
            }
            out.push_str("  None runs until you approve; a change to these files asks again. Code those scripts run in turn (a Makefile, a package's scripts) is not covered.\n");
            out.push_str("  Answer with one of (remembered for this content of the files):\n");
            out.push_str(&cmd("approve"));
            out.push('\n');
            out.push_str(&cmd("reject"));
        }
    }
    out.trim_end().to_string()
}

/// A hook's run in one line (`[hook PreToolUse] ./check.sh: blocked (exit 2, 12 ms)`).
pub(crate) fn hook_line(kind: &EventKind) -> Option<String> {
    let EventKind::HookRan {
        event,
        command,
        source,
        duration_ms,
        exit_code,
        outcome,
        ..
    } = kind
    else {
        return None;
    };
    let ended = match exit_code {
        Some(c) => format!("exit {c}"),
        None => "no exit code".to_string(),
    };
    // One line, whatever the hook printed: its words are escaped, newlines included.
    let one = |s: &str| waymark_protocol::display::escape_line(&safe(s));
    Some(format!(
        "[hook {}] {} ({}): {} ({ended}, {duration_ms} ms)",
        one(event),
        one(command),
        one(source),
        one(outcome.as_deref().unwrap_or("proceed"))
    ))
}
