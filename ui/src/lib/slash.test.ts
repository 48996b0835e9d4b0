import { describe, expect, it } from "vitest";
import { commandNotice, draftWords, scrubCli, SLASH_COMMANDS, windowCommand } from "./slash";
import { commandMatches } from "./complete";

// What the runtime answers, as it writes it for the terminal (ids and paths as it makes them).
const DATA = "/home/ada/.local/share/waymark";
const SID = "s-m1x2k9a100q7wz";
const PLAN = "plan-m1x2k9b200a1b2";
const PLAN_FILE = `${DATA}/sessions/${SID}/artifacts/plan.md`;

/** What no line the window shows may hold. */
function terminalFree(line: string) {
  expect(line).not.toMatch(/\bwaymark [a-z]/);
  expect(line).not.toMatch(/\b(s|cp|plan|q)-[a-z0-9]{6,}/);
  expect(line).not.toMatch(/\b[0-9a-f]{64}\b/);
  expect(line).not.toContain(DATA);
  expect(line).not.toContain("\n");
}

describe("windowCommand", () => {
  it("answers help, rewind, a bare goal, plan view and mcp in the window", () => {
    expect(windowCommand("/help")).toBe("help");
    expect(windowCommand("  /rewind  ")).toBe("rewind");
    expect(windowCommand("/rewind cp-m1x2k9a100aaaa")).toBe("rewind");
    expect(windowCommand("/goal")).toBe("goal");
    expect(windowCommand("/goal   ")).toBe("goal");
    expect(windowCommand("/plan view")).toBe("plan");
    expect(windowCommand("/mcp")).toBe("mcp");
    expect(windowCommand("/worktree")).toBe("worktree");
    // `/goal draft <words>` drafts in the Goal tab; a goal about drafts is still a goal.
    expect(windowCommand("/goal draft parser takes trailing commas")).toBe("goal-draft");
    expect(draftWords("  /goal draft   parser takes trailing commas ")).toBe("parser takes trailing commas");
    expect(windowCommand("/goal drafting the docs")).toBeNull();
  });

  it("leaves the rest to the session: a goal with words, other plan commands, prompts, escapes", () => {
    expect(windowCommand("/goal fix the build budget=50K")).toBeNull();
    expect(windowCommand("/goal pause")).toBeNull();
    expect(windowCommand("/plan on")).toBeNull();
    expect(windowCommand("/plan status")).toBeNull();
    expect(windowCommand("/compact")).toBeNull();
    expect(windowCommand("/mcp__everything__simple-prompt")).toBeNull();
    expect(windowCommand("//help")).toBeNull();
    expect(windowCommand("/usr/bin/help is odd")).toBeNull();
    expect(windowCommand("please /help")).toBeNull();
  });
});

describe("SLASH_COMMANDS", () => {
  it("names each command once, and Tab on /go takes the one ready for an objective", () => {
    const names = SLASH_COMMANDS.map((c) => c.name);
    expect(new Set(names).size).toBe(names.length);
    expect(commandMatches("/go", SLASH_COMMANDS)[0].name).toBe("/goal ");
    for (const c of SLASH_COMMANDS) terminalFree(`${c.label ?? c.name} ${c.hint}`);
  });
});

describe("scrubCli", () => {
  it("drops command lines and the clause offering one, keeping the words around them", () => {
    expect(scrubCli("/rewind takes no arguments; to rewind, run: waymark rewind --session " + SID + " --to <id>")).toBe("/rewind takes no arguments.");
    expect(scrubCli('a goal in its own worktree runs in a new session: start it with `waymark exec --worktree "/goal …"`, or Run in a new worktree in the app')).toBe(
      "a goal in its own worktree runs in a new session: start it with Run in a new worktree in the app",
    );
    expect(scrubCli('this session has no worktree of its own: it works in the project\'s checkout. Start one with `waymark exec --worktree "…"` or Run in a new worktree in the app.')).toBe(
      "this session has no worktree of its own: it works in the project's checkout. Start one with Run in a new worktree in the app.",
    );
    expect(scrubCli("Answer with /goal reply <answer> (or `waymark goal reply`).")).toBe("Answer with /goal reply <answer>.");
    // A line with no command line keeps its ending.
    expect(scrubCli("Tool servers:")).toBe("Tool servers:");
  });

  it("takes out ids and hashes and shortens absolute paths to their file name", () => {
    expect(scrubCli(`Plan mode is on (plan ${PLAN}). The plan goes to ${PLAN_FILE}.`)).toBe("Plan mode is on. The plan goes to plan.md.");
    expect(scrubCli(`the approved plan ${PLAN} revision v2 (sha256 0123456789ab) is implemented`)).toBe("the approved plan revision v2 is implemented");
    expect(scrubCli(`hash ${"ab".repeat(32)} kept`)).toBe("hash kept");
    // Words that look like ids but are none stay, and so does a command like /goal resume.
    expect(scrubCli("plan-approval is waiting (/goal resume)")).toBe("plan-approval is waiting (/goal resume)");
    // A setting key an error names stays, so the toast can offer to open it.
    expect(scrubCli("plan mode is turned off (setting beta.desktop_plan_mode)")).toBe("plan mode is turned off (setting beta.desktop_plan_mode)");
  });
});

describe("commandNotice", () => {
  it("says /plan status in a sentence, without the plan's id or file path; /plan on and off not again", () => {
    // The session's `plan.mode_changed` says those (`planModeNotice`): one line, not two.
    expect(commandNotice("plan", `Plan mode is on (plan ${PLAN}). The next messages are planned, not implemented; the plan goes to ${PLAN_FILE}.`)).toBeNull();
    expect(commandNotice("plan", "Plan mode is off. Nothing from the plan was implemented.")).toBeNull();
    const status = commandNotice("plan", `Plan mode: on\nPlan file: ${PLAN_FILE}\nPlan: ${PLAN} (awaiting_approval, 2 revisions)\nWaiting for: plan_approval (q-m1x2k9c300zz11)`);
    expect(status).toBe("Plan mode is on; the plan waits for your review (2 revisions); waiting for your review of the plan.");
    expect(commandNotice("plan", `Plan mode: off\nPlan file: ${PLAN_FILE}`)).toBe("Plan mode is off; no plan yet.");
    expect(commandNotice("plan", `Plan mode: on\nPlan file: ${PLAN_FILE}\nPlan: ${PLAN} (drafting, 0 revisions)`)).toBe("Plan mode is on; the plan is being drafted.");
    expect(commandNotice("plan", `${PLAN_FILE}:\n\n# Plan\n\n1. Do it`)).toBe("The plan shows in the Plan tab.");
    expect(commandNotice("plan", `There is no plan file yet (${PLAN_FILE}).`)).toBe("There is no plan yet.");
    terminalFree(status ?? "");
  });

  it("says nothing for a goal change the goal's own events say, and a line for the rest", () => {
    for (const said of ["Goal paused.", "Goal resumed.", "Goal cleared.", "Goal updated.", "Goal set.\nGoal: Fix it\nStatus: active (created, by user)"]) {
      expect(commandNotice("goal", said)).toBeNull();
    }
    expect(commandNotice("goal", "No goal is set. Set one with /goal <objective> (optionally budget=50K turns=20 time=2h).")).toBe("No goal is set: set one in the Goal tab.");
    const described = "Goal: Fix it\nStatus: budget_limited (tokens, by runtime)\n  tokens   1000 / 1000 (0 left) — reached\n  turns    2 / 5 (3 left)";
    expect(commandNotice("goal", described)).toBe("Goal: Fix it (budget limited)");
    expect(commandNotice("goal", "The budget is unchanged.\nGoal: Fix it\nStatus: active (created, by user)")).toBe("The budget is unchanged.");
    expect(commandNotice("goal", "Queued as the next goal; it starts when the current one completes.")).toBe("Queued as the next goal; it starts when the current one completes.");
  });

  it("names instruction files, tool servers and a worktree in words", () => {
    const instructions = `Instructions this session follows (read when it started, in this order):\n  /home/ada/.config/waymark/AGENTS.md (yours, every project): 20 bytes\n  /work/app/AGENTS.md (project): 120 bytes\nChanges to these files apply to sessions started after the change.`;
    expect(commandNotice("instructions", instructions)).toBe("This session follows 2 instruction files: AGENTS.md (yours, every project), AGENTS.md (project).");
    expect(commandNotice("mcp", "No MCP servers are configured. Add one with `waymark mcp add NAME -- COMMAND ARGS…` or `waymark mcp add NAME --url URL`.")).toBe(
      "No tool servers are set up: add one in Settings, under Tool servers.",
    );
    const servers = "everything — ready · 3 tools · npx -y @modelcontextprotocol/server-everything\n  echo — echoes\n  prompt simple-prompt — a prompt\nbroken — failed: /opt/bin/srv exited · /opt/bin/srv";
    expect(commandNotice("mcp", servers)).toBe("Tool servers: everything (ready, 3 tools), broken (failed: srv exited).");
    const worktree = `Worktree /work/app-wt on branch waymark/fix-it-ab12 (active), from main at 0123456789 in /work/app.\nWhat changed: waymark worktree --session ${SID} status (or diff)`;
    expect(commandNotice("worktree", worktree)).toBe("This session works in its own worktree, on branch waymark/fix-it-ab12 (active): Review & merge is above the transcript.");
  });

  it("turns a listing from the terminal (help, rewind) into a pointer to the window's own", () => {
    const rewind = `Checkpoints, oldest first. Rewind with: waymark rewind --session ${SID} --to <id> [--files|--conversation]\ncp-m1x2k9a100aaaa  2026-01-02 10:00:00  before turn 1  no change`;
    const help = "Commands:\n  /help                     list the commands\n  /rewind                   list the session's checkpoints (rewind to one with `waymark rewind` or Rewind to here in the app)";
    for (const [name, text] of [["rewind", rewind], ["help", help]]) {
      const line = commandNotice(name, text);
      expect(line).not.toBeNull();
      terminalFree(line ?? "");
    }
  });

  it("keeps one scrubbed line of any other command, and nothing of an empty answer", () => {
    expect(commandNotice("compact", "Summarizing the older part of the conversation now (the newest messages stay as they are).")).toBe(
      "Summarizing the older part of the conversation now (the newest messages stay as they are).",
    );
    expect(commandNotice("custom", `Saved to ${DATA}/exports/out.json\nmore lines`)).toBe("Saved to out.json");
    expect(commandNotice("compact", "  \n")).toBeNull();
  });
});
