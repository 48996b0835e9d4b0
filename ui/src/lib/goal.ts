// Goal tab figures derived from the goal's events: gauge levels, burn-down, timeline.
import type { BudgetLine_Serialize, GoalCheckState } from "../bindings";
import type { BudgetChange, EventOf, Goal, GoalWait, QueuedGoal, WireEvent } from "./types";
import { clock, day } from "./time";

export type Level = "ok" | "warn" | "danger" | "open";

/** What each reason code means, in plain words (the code itself goes in a tooltip). The
 *  same words as `GoalReason::words` in the protocol crate (the desktop's tests compare). */
export const REASON_WORDS: Record<Goal["reason"], string> = {
  created: "Set",
  resumed: "Resumed",
  budget_raised: "Resumed with a larger budget",
  edited: "Changed",
  verifier_met: "Done: the reviewer confirmed it",
  worker_proposal: "Done: the agent says it is complete",
  worker_reported: "The agent says it is blocked",
  user_requested: "Paused by you",
  no_progress: "Paused: no progress in the last turns",
  no_progress_after_completion_claim: "Paused: the agent keeps claiming it is done without progress",
  verifier_partial: "Paused: the reviewer found it partly done",
  verifier_error: "Paused: the reviewer could not check it",
  turn_error: "Paused: a turn failed",
  provider_error: "Paused: the model could not be reached",
  provider_refusal: "Paused: the model declined to answer",
  waiting: "Waiting",
  woke: "Woke from its wait",
  wait_expired: "Paused: the wait went on past its longest time",
  checks_passed: "Done: the goal's checks pass",
  checks_weakened: "Paused: the checks pass, but they were weakened",
  app_closed: "Stopped: Waymark closed",
  tokens: "Stopped: the token budget is used up",
  main_turns: "Stopped: the turn budget is used up",
  active_seconds: "Stopped: the time budget is used up",
  rate_limited: "Waiting: the provider's rate limit",
  quota_exhausted: "Stopped: the provider's quota is used up",
  cost: "Stopped: the cost budget is used up",
  spend_cap: "Waiting: today's spending cap is reached",
};

/** Who acted, in words. */
export function actorWords(actor: string): string {
  return actor === "user" ? "you" : actor === "model" ? "the agent" : actor === "verifier" ? "the reviewer" : "Waymark";
}

/** Colour band of a budget gauge: warn from 75 % used, danger from 90 % or when reached. */
export function gaugeLevel(line: BudgetLine_Serialize): Level {
  if (line.limit === null) return "open";
  if (line.reached || line.used >= line.limit * 0.9) return "danger";
  if (line.used >= line.limit * 0.75) return "warn";
  return "ok";
}

/** Fraction of the limit used, 0..1 (0 for an open budget). */
export function gaugeFraction(line: BudgetLine_Serialize): number {
  if (line.limit === null || line.limit === 0) return 0;
  return Math.min(1, line.used / line.limit);
}

/** A turn of the burn-down: `spent` what it used (tokens, or micro-dollars for the cost
 *  chart), `used` the running total; `unknown` when its cost is unknown (no price). */
export type BurnPoint = { step: number; used: number; spent: number; remaining: number | null; unknown?: boolean; turn?: number };

/** Tokens of each turn since the current goal was set (input + output, as the goal counts
 *  them), with the running total and what is left of `limit`. */
export function burnDown(events: WireEvent[], limit: number | null): BurnPoint[] {
  const start = events.findLastIndex((e) => e.type === "goal.create");
  if (start < 0) return [];
  const points: BurnPoint[] = [];
  let used = 0;
  for (const e of events.slice(start + 1)) {
    if (e.type !== "turn.finished") continue;
    const spent = e.usage.input_tokens + e.usage.output_tokens;
    used += spent;
    points.push({ step: points.length + 1, used, spent, remaining: limit === null ? null : Math.max(0, limit - used), turn: e.turn_id });
  }
  return points;
}

/** What each turn since the current goal was set cost, in micro-dollars (G-32); a turn
 *  whose model had no price counts 0 and is marked unknown. */
export function costDown(events: WireEvent[], limit: number | null): BurnPoint[] {
  const start = events.findLastIndex((e) => e.type === "goal.create");
  if (start < 0) return [];
  const points: BurnPoint[] = [];
  let used = 0;
  for (const e of events.slice(start + 1)) {
    if (e.type !== "turn.finished") continue;
    const spent = e.cost_usd == null ? 0 : Math.round(e.cost_usd * 1_000_000);
    used += spent;
    points.push({ step: points.length + 1, used, spent, remaining: limit === null ? null : Math.max(0, limit - used), unknown: e.cost_usd == null, turn: e.turn_id });
  }
  return points;
}

/** Micro-dollars as people read an amount: `$0.0123`, `$4.20`, `$1,234.50` (the app's
 *  own words, `cost::label`). */
export function money(micros: number): string {
  const usd = micros / 1_000_000;
  // Something spent never reads as nothing.
  if (micros > 0 && micros < 50) return "<$0.0001";
  if (usd < 1 && micros > 0) return `$${usd.toFixed(4)}`;
  // Grouped by hand: locale formatting would load ICU's data into the web process.
  const cents = Math.round(micros / 10_000);
  const whole = String(Math.floor(cents / 100)).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return `$${whole}.${String(cents % 100).padStart(2, "0")}`;
}

/** How a cost with no price is said, the same wherever a cost shows. */
export const NO_PRICE = "no price known for this model";

/** A cost as the gauge and the board say it: the amount; "≥" it when some calls had no
 *  price (the rest is not counted); `NO_PRICE` when none had one. */
export function costWords(micros: number, unpricedCalls: number): string {
  if (unpricedCalls === 0) return money(micros);
  return micros === 0 ? NO_PRICE : `≥ ${money(micros)}`;
}

/** Whether a cost chart would draw only zeros: every turn's model had no price. */
export function nothingPriced(points: BurnPoint[]): boolean {
  return points.length > 0 && points.every((p) => p.unknown);
}

/** Bars of the burn-down: one per turn, or, for a long goal, one per run of turns (at most
 *  `most` bars; `first` is the run's first turn, `step` its last). */
export type Bar = BurnPoint & { first: number };
export function bars(points: BurnPoint[], most = 60): Bar[] {
  const per = Math.max(1, Math.ceil(points.length / most));
  const out: Bar[] = [];
  for (let i = 0; i < points.length; i += per) {
    const run = points.slice(i, i + per);
    const last = run[run.length - 1];
    out.push({ ...last, first: run[0].step, spent: run.reduce((n, p) => n + p.spent, 0) });
  }
  return out;
}

/** A row of the goal's timeline; `turn`: the turn it is about, which "Rewind to here" goes
 *  back to the start of. */
export type TimelineEntry = { seq: number; ts: number; label: string; actor: string; tone: "good" | "bad" | "neutral"; code?: string; turn?: number };

function updateTone(e: EventOf<"goal.update">): TimelineEntry["tone"] {
  switch (e.status) {
    case "complete":
    case "active":
      return e.status === "complete" ? "good" : "neutral";
    case "blocked":
    case "budget_limited":
    case "usage_limited":
      return "bad";
    case "paused":
      return e.actor === "user" ? "neutral" : "bad";
  }
}

/** The goal's events as timeline rows, oldest first. */
export function timeline(events: WireEvent[]): TimelineEntry[] {
  const rows: TimelineEntry[] = [];
  // A change is about the turn that finished just before it; a new goal, the first after.
  let lastTurn: number | undefined;
  const firstTurnAfter = (i: number) => {
    const next = events.slice(i + 1).find((x) => x.type === "turn.finished");
    return next?.type === "turn.finished" ? next.turn_id : undefined;
  };
  for (const [i, e] of events.entries()) {
    if (e.type === "turn.finished") lastTurn = e.turn_id;
    if (e.type === "goal.create") {
      rows.push({ seq: e.seq, ts: e.ts, label: `Created: ${e.goal.objective}`, actor: e.goal.actor, tone: "neutral", turn: firstTurnAfter(i) });
    } else if (e.type === "goal.update") {
      if (e.kind === "completion" && e.status === "active") continue; // an ordinary settled turn
      let label = REASON_WORDS[e.reason] ?? e.reason.replace(/_/g, " ");
      const limit = e.usage_limit;
      if (e.kind === "lifecycle" && e.status === "usage_limited" && limit && !limit.auto_resume) label = "Automatic resume cancelled";
      else if (limit) label += limit.auto_resume ? ` · resumes at ${clock(limit.resets_at, true)}` : ` · resets at ${clock(limit.resets_at, true)}`;
      rows.push({ seq: e.seq, ts: e.ts, label, actor: e.actor, tone: updateTone(e), code: `${e.status} · ${e.reason}`, turn: lastTurn });
    } else if (e.type === "goal.clear") {
      rows.push({ seq: e.seq, ts: e.ts, label: "Cleared", actor: e.actor, tone: "neutral" });
    } else if (e.type === "goal.check") {
      const counted = e.passed != null && e.failed != null ? `, ${e.passed}/${e.passed + e.failed} tests passing` : "";
      const how = e.exit_code === 0 ? "passes" : e.exit_code != null ? `fails (exit ${e.exit_code})` : (e.note ?? "did not finish");
      const label = `${e.baseline ? "Baseline check" : "Check"} \`${e.command}\` ${how}${counted} in ${(e.duration_ms / 1000).toFixed(1)} s`;
      rows.push({ seq: e.seq, ts: e.ts, label, actor: "runtime", tone: e.exit_code === 0 ? "good" : "bad", code: e.command, turn: lastTurn });
    }
  }
  return rows;
}

/** The checks' newest results together (the baseline where a check has not run since): tests
 *  passing of tests run where the runners count them, else checks passing of checks. */
export function checksSummary(checks: GoalCheckState[]): { passed: number; total: number; unit: "tests" | "checks" } | null {
  if (!checks.length) return null;
  const latest = checks.map((c) => c.runs[c.runs.length - 1] ?? c.baseline ?? null);
  if (latest.every((r) => r && r.passed != null && r.failed != null)) {
    const passed = latest.reduce((n, r) => n + (r?.passed ?? 0), 0);
    const total = latest.reduce((n, r) => n + (r?.passed ?? 0) + (r?.failed ?? 0), 0);
    return { passed, total, unit: "tests" };
  }
  return { passed: latest.filter((r) => r?.exit_code === 0).length, total: checks.length, unit: "checks" };
}

/** The budget form as `/goal` text: an empty field removes that limit. */
export function budgetText(fields: { tokens: string; turns: string; time: string; cost: string }): string {
  const v = (t: string) => (t.trim() === "" ? "clear" : t.replace(/\s+/g, ""));
  return `tokens=${v(fields.tokens)} turns=${v(fields.turns)} time=${v(fields.time)} cost=${v(fields.cost)}`;
}

/** A queued goal's budgets as `/goal` budget text (empty: none of its own), for the edit
 *  box and the line under its objective. */
export function queuedBudgetText(q: QueuedGoal): string {
  const parts: string[] = [];
  if (q.tokens !== null) parts.push(`tokens=${q.tokens}`);
  if (q.turns !== null) parts.push(`turns=${q.turns}`);
  if (q.seconds !== null) parts.push(`time=${q.seconds % 3600 === 0 ? `${q.seconds / 3600}h` : q.seconds % 60 === 0 ? `${q.seconds / 60}m` : `${q.seconds}s`}`);
  if (q.cost_micros !== null) parts.push(`cost=$${(q.cost_micros / 1_000_000).toFixed(2)}`);
  return parts.join(" ");
}

/** The budget an edited queued goal gets from the budget text: what the text leaves out has
 *  no limit (the box showed every budget it had). */
export function wholeBudget(change: BudgetChange | null): BudgetChange {
  const c = change ?? {};
  return { tokens: c.tokens ?? "clear", turns: c.turns ?? "clear", seconds: c.seconds ?? "clear", cost: c.cost ?? "clear" };
}

/** Formats a token count compactly (12.3K, 1.2M). */
export function compact(n: number): string {
  if (n >= 1_000_000) return `${(n / 1_000_000).toFixed(1)}M`;
  if (n >= 10_000) return `${Math.round(n / 1000)}K`;
  if (n >= 1_000) return `${(n / 1000).toFixed(1)}K`;
  return String(n);
}

/** Seconds as "1h 05m", "4m 10s", "42s". */
export function duration(s: number): string {
  if (s >= 3600) return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
  if (s >= 60) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, "0")}s`;
  return `${s}s`;
}

/** What the Goal tab says of a goal stopped by a usage limit, at `now` (ms). */
export type LimitNotice = {
  /** The runtime resumes the goal by itself when the limit resets. */
  auto: boolean;
  /** Seconds until the reset (0 once it is past), or null when no reset time is known. */
  left: number | null;
  text: string;
};

export function limitNotice(goal: Goal, now: number): LimitNotice | null {
  if (goal.status !== "usage_limited") return null;
  const l = goal.usage_limit;
  const left = l ? Math.max(0, Math.ceil((l.resets_at - now) / 1000)) : null;
  const at = l ? clock(l.resets_at, true) : "";
  const resets = l && left !== null ? (left > 0 ? `The limit resets at ${at}, in ${duration(left)}` : `The limit reset at ${at}`) : "";
  const source = l && !l.from_provider ? " (the provider named no time: backoff)" : "";
  if (goal.reason === "spend_cap") {
    const when = resets ? ` ${resets}.` : "";
    const auto = l?.auto_resume ?? false;
    return { auto, left, text: `Today's spending cap (limits.daily_cost_usd) is reached: no model call starts until the next day.${when}${auto ? " The goal resumes by itself then; raise the cap and resume to go on sooner." : " Raise the cap and resume to go on."}` };
  }
  if (goal.reason === "quota_exhausted") {
    const when = resets ? ` ${resets}.` : "";
    return { auto: false, left, text: `The provider's quota or billing limit is used up.${when} A quota never resumes by itself: resume once it allows.` };
  }
  if (!l) return { auto: false, left, text: "Stopped by the provider's usage limit. Resume when you are ready." };
  if (l.auto_resume) {
    const what = left && left > 0 ? `Resumes by itself in ${duration(left)}, at ${at}` : "The limit has reset: resuming";
    return { auto: true, left, text: `${what}${source} — automatic resume ${l.auto_resumes_used + 1} of ${l.auto_resumes_max}.` };
  }
  const why = l.auto_resumes_used >= l.auto_resumes_max
    ? `No automatic resumes left (${l.auto_resumes_max} in a row allowed)`
    : "The automatic resume was cancelled";
  return { auto: false, left, text: `${resets}${source}. ${why}: resume when you are ready.` };
}

/** What a waiting goal shows at `now` (ms): what it waits for, the countdown to its time
 *  (null for a check alone), the check's newest run and when it runs next, and when the
 *  wait gives up (G-47). */
export function waitNotice(w: GoalWait, now: number): { text: string; left: number | null; check: string | null; gives: string } {
  const secs = (ms: number) => Math.max(0, Math.ceil((ms - now) / 1000));
  const left = w.until !== null && w.until <= w.deadline ? secs(w.until) : null;
  let text: string;
  if (w.check !== null) {
    text = `Waiting for \`${w.check.split("\n")[0]}\` to succeed — checked every ${w.every_seconds} s`;
    if (left !== null) text += `, or until ${clock(w.until!)} (in ${duration(left)})`;
  } else if (left !== null) {
    text = `Waiting until ${clock(w.until!)} — in ${duration(left)}`;
  } else {
    text = "Waiting";
  }
  text += ` — ${w.reason}`;
  let check: string | null = null;
  if (w.check !== null) {
    const next = secs(w.next_check);
    const c = w.last_check;
    const last = c ? `Last check ${c.passed ? "passed" : c.exit_code === null ? "did not finish" : `exit ${c.exit_code}`}${c.line ? `: ${c.line}` : ""}. ` : "Not checked yet. ";
    check = `${last}${next > 0 ? `Next check in ${duration(next)}.` : "Checking now."}`;
  }
  return { text, left, check, gives: `Gives up at ${clock(w.deadline)} ${day(w.deadline)}, then the goal pauses.` };
}

/** The goal as it stands at `now` (ms): while a turn of it runs, the time gauge counts on
 *  from the snapshot received at `at` (ms) instead of standing still until the next one. */
export function withLiveTime(goal: Goal, at: number, now: number, running: boolean): Goal {
  if (!running || goal.status !== "active") return goal;
  const line = goal.budget.active_seconds;
  const used = line.used + Math.max(0, Math.floor((now - at) / 1000));
  if (used === line.used) return goal;
  const remaining = line.limit === null ? null : Math.max(0, line.limit - used);
  return { ...goal, budget: { ...goal.budget, active_seconds: { ...line, used, remaining, reached: remaining === 0 } } };
}

/** Below this much time left, a question the goal waits on says it may outlive the budget. */
export const TIME_WARNING_SECONDS = 300;

/** What a permission question says when the goal's time budget may run out before it is
 *  answered (the call is then refused whatever the answer); null when there is time. */
export function timeNote(goal: Goal | null): string | null {
  const line = goal?.status === "active" ? goal.budget.active_seconds : null;
  if (!line || line.limit === null) return null;
  const left = Math.max(0, line.limit - line.used);
  if (left > TIME_WARNING_SECONDS) return null;
  return left === 0
    ? "The goal's time budget is used up: this call will be refused whatever you answer."
    : `The goal's time budget runs out in ${duration(left)}: answer before then, or the call is refused.`;
}

/** A goal's "done when" as the Goal tab shows it: `words` in plain terms, and the exact
 *  revision (`detail`: the plan's id, version and hash) for a details fold, when it names
 *  one. */
export type CriteriaShown = { words: string; detail: string | null };

/**
 * The criteria of a goal started by approving a plan ("the approved plan <id> revision v2
 * (sha256 <hash>) is implemented: every step of it is done: 1. …; 2. …") read as words: the
 * plan by its version, its steps left to the steps list; its id and hash for the fold. Any
 * other criteria are shown as they are.
 */
export function criteriaShown(criteria: string): CriteriaShown {
  const m = criteria.match(/^the approved plan (\S+) revision v(\d+) \(sha256 ([0-9a-f]+)\) is implemented(: every step of it is done)?/);
  if (!m) return { words: criteria, detail: null };
  const [, plan, version, sha, steps] = m;
  return {
    words: `revision v${version} of the approved plan is implemented${steps ? ", every step of it" : ""}`,
    detail: `Plan ${plan}, revision v${version}, sha256 ${sha}`,
  };
}
