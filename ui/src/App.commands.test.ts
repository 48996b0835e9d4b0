import { beforeAll, describe, expect, it, vi } from "vitest";
import { fireEvent, render, screen, waitFor } from "@testing-library/svelte";
import type { WireEvent } from "./lib/types";

// A session of two turns, open in the window. What it submits is recorded; `/plan on` is
// answered as the runtime answers it (its text written for the terminal), and its events
// come through the session-event listener the test keeps.
const S = "s-m1x2k9a100q7wz";
const PLAN = "plan-m1x2k9b200a1b2";
const PLAN_ON = `Plan mode is on (plan ${PLAN}). The next messages are planned, not implemented; the plan goes to /home/ada/.local/share/waymark/sessions/${S}/artifacts/plan.md.`;
const app = vi.hoisted(() => ({ push: (_e: unknown) => {}, submitted: [] as string[], seq: 8 }));
vi.mock("./bindings", async () => {
  const { mockBindings, ok, sentBy, twoTurnSession } = await import("./test/bindings");
  const { at, session, view } = twoTurnSession();
  const cp = (turn: number, minutes: number) => ({ id: `cp-m1x2k9a1${turn}0abcd`, turn, time: at + minutes * 60_000, trigger: "turn_start", changed: [] });
  const config = { model: null, permission_mode: "ask", providers: {}, mcp_servers: {}, beta: { desktop_plan_mode: true, desktop_plan_mode_agent_entry: false, thread_goal: true }, goal: { verification: null, budget: {}, breaker: {}, verifier: {}, usage_limit: {} } };
  return mockBindings({
    commands: {
      listSessions: () => ok([session]),
      openSession: () => ok(view),
      getSettings: () => ok({ config, keys: [], keyring_error: null }),
      mcpServers: () => ok([]),
      checkpoints: () => ok([cp(1, 0), cp(2, 5)]),
      rewindPreview: () => ok({ checkpoint: cp(1, 0), files: [], turns: [1, 2] }),
      submit: (_id: string, text: string) => {
        app.submitted.push(text);
        return ok({ kind: "command", output: "Plan mode is on (plan plan-m1x2k9b200a1b2). The next messages are planned, not implemented; the plan goes to /home/ada/plan.md." });
      },
    },
    events: { sessionEvent: sentBy((send) => (app.push = send)) },
  });
});

const { default: App } = await import("./App.svelte");

beforeAll(() => {
  Object.defineProperty(window, "innerWidth", { value: 1440, configurable: true });
});

/** Types `text` in the composer and presses Enter; the composer empties, unless the command
 *  leaves the page it is on. */
async function command(text: string, leaves = false) {
  const composer = (await screen.findByTestId("composer")) as HTMLTextAreaElement;
  await fireEvent.input(composer, { target: { value: text } });
  await fireEvent.keyDown(composer, { key: "Enter" });
  if (leaves) await waitFor(() => expect(screen.queryByTestId("composer")).toBeNull());
  else await waitFor(() => expect(composer.value).toBe(""));
}

/** What the window shows holds no command line, id or absolute path. */
function noTerminalText() {
  const shown = document.body.textContent ?? "";
  expect(shown).not.toMatch(/\bwaymark [a-z]/);
  expect(shown).not.toMatch(/\b(s|cp|plan)-[a-z0-9]{6,}/);
  expect(shown).not.toContain("/home/ada");
}

describe("slash commands in the window", () => {
  it("/help, /goal, /rewind and /mcp are answered by the window itself, never sent", async () => {
    render(App);
    await screen.findByTestId("composer");

    await command("/help");
    const sheet = await screen.findByTestId("shortcuts");
    expect(screen.getByTestId("shortcuts-commands").textContent).toContain("/rewind");
    expect(sheet.textContent).toContain("Ctrl+K");
    await fireEvent.keyDown(sheet, { key: "Escape" });
    await waitFor(() => expect(screen.queryByTestId("shortcuts")).toBeNull());

    expect(screen.getByTestId("tab-plan").getAttribute("aria-selected")).toBe("true");
    await command("/goal");
    await waitFor(() => expect(screen.getByTestId("tab-goal").getAttribute("aria-selected")).toBe("true"));

    await command("/rewind");
    await waitFor(() => expect(screen.getAllByTestId("rewind-point")).toHaveLength(2));
    const points = screen.getAllByTestId("rewind-point").map((b) => b.textContent?.replace(/\s+/g, " ").trim());
    expect(points[0]).toMatch(/^Before your message “Make it say good morning” (2026-01-02 )?09:35$/);
    expect(points[1]).toMatch(/^Before your message “Add a greeting” (2026-01-02 )?09:30$/);
    noTerminalText();
    await fireEvent.click(screen.getAllByTestId("rewind-point")[1]);
    const title = await screen.findByTestId("rewind-title");
    expect(title.textContent).toBe("Rewind to before your message “Add a greeting”?");
    expect(screen.queryByTestId("rewind-list")).toBeNull();
    await fireEvent.click(await screen.findByTestId("rewind-cancel"));

    await command("/mcp", true);
    const servers = await screen.findByTestId("settings-tool-servers");
    await waitFor(() => expect(document.activeElement).toBe(servers));

    expect(app.submitted).toEqual([]);
    expect(screen.queryByTestId("toast")).toBeNull();
  });

  it("/plan on goes to the session and comes back as one line in words, with no toast", async () => {
    app.submitted.length = 0;
    render(App);
    await screen.findByTestId("composer");
    await command("/plan on");
    expect(app.submitted).toEqual(["/plan on"]);
    const ev = (type: string, body: object) => ({ session_id: S, seq: ++app.seq, ts: 0, transient: false, type, ...body }) as unknown as WireEvent;
    app.push(ev("plan.mode_changed", { mode: "plan", reason: "command" }));
    app.push(ev("command.output", { command: "plan", text: PLAN_ON }));
    // Both events are in by the time the first line shows (each is applied as it comes).
    await waitFor(() => expect(screen.getByTestId("transcript").textContent).toContain("Plan mode"));
    const plan = screen.getAllByTestId("chip").filter((c) => c.classList.contains("plan"));
    expect(plan).toHaveLength(1);
    expect(plan[0].textContent).toMatch(/^Plan mode (is )?on/);
    expect(screen.queryByTestId("toast")).toBeNull();
    noTerminalText();
  });
});
