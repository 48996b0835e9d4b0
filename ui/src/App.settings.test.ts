import { beforeAll, describe, expect, it, vi } from "vitest";
import { fireEvent, render, screen, waitFor } from "@testing-library/svelte";

// Two sessions, the first open; Settings readable. The sessions opened and created are
// recorded.
const app = vi.hoisted(() => ({ opened: [] as string[], created: [] as string[] }));
vi.mock("./bindings", async () => {
  const { mockBindings, ok, sessionView, summary } = await import("./test/bindings");
  const sessions = [summary("s1", { title: "Fix it" }), summary("s2", { title: "Write docs" })];
  const view = (id: string) => sessionView(sessions.find((s) => s.id === id));
  const config = { model: null, permission_mode: "ask", providers: {}, mcp_servers: {}, beta: { desktop_plan_mode: true, desktop_plan_mode_agent_entry: false, thread_goal: false }, goal: { verification: null, budget: { default_tokens: null, default_main_turns: null, default_active_seconds: null, grace_steps: 2 }, breaker: { repeated_reply_limit: 3 }, verifier: { repeated_not_met_limit: 3 }, usage_limit: { auto_resumes: 3 } } };
  return mockBindings({
    commands: {
      listSessions: () => ok(sessions),
      openSession: (id: string) => (app.opened.push(id), ok(view(id))),
      createSession: (ws: string) => (app.created.push(ws), ok(view("s1"))),
      goalBoard: () => ok([]),
      getSettings: () => ok({ config, keys: [], keyring_error: null }),
      mcpServers: () => ok([]),
    },
  });
});

const { default: App } = await import("./App.svelte");

beforeAll(() => {
  Object.defineProperty(window, "innerWidth", { value: 1440, configurable: true });
});

/** Finds what the window shows, waiting longer than the default: Settings and the board
 *  load when first shown, slow on a busy machine. */
const find = (id: string) => screen.findByTestId(id, {}, { timeout: 5000 });

/** The window on Settings, with an edit not saved. */
async function editing() {
  render(App);
  await find("composer");
  await fireEvent.click(screen.getByTestId("open-settings"));
  await fireEvent.click(await find("flag-goals"));
  expect(screen.getByTestId("settings-unsaved")).toBeTruthy();
  app.opened = [];
}
const session = (id: string) => screen.getAllByTestId("session").find((b) => b.dataset.sessionId === id) as HTMLElement;

describe("leaving Settings with unsaved edits", () => {
  it("asks first when a session is chosen in the sidebar, and stays on Keep editing", async () => {
    await editing();
    await fireEvent.click(session("s2"));
    expect(await find("settings-discard-confirm")).toBeTruthy();
    expect(screen.getByTestId("settings")).toBeTruthy();
    await fireEvent.click(screen.getByTestId("settings-keep-editing"));
    expect(screen.queryByTestId("settings-discard-confirm")).toBeNull();
    expect((screen.getByTestId("flag-goals") as HTMLInputElement).checked).toBe(true);
    expect(app.opened).toEqual([]);

    // Discard: the session opens.
    await fireEvent.click(session("s2"));
    await fireEvent.click(await find("settings-discard"));
    await find("composer");
    expect(screen.queryByTestId("settings")).toBeNull();
    expect(app.opened).toEqual(["s2"]);
  });

  it("asks first when Goals is chosen, and shows the board on Discard", async () => {
    await editing();
    await fireEvent.click(screen.getByTestId("open-board"));
    expect(await find("settings-discard-confirm")).toBeTruthy();
    expect(screen.queryByTestId("goal-board")).toBeNull();
    await fireEvent.click(screen.getByTestId("settings-discard"));
    expect(await find("goal-board")).toBeTruthy();
    expect(screen.queryByTestId("settings")).toBeNull();
  });

  it("asks first when a new session is started in a folder, or Settings is clicked again", async () => {
    await editing();
    await fireEvent.click(screen.getAllByTestId("new-here")[0]);
    expect(await find("settings-discard-confirm")).toBeTruthy();
    await fireEvent.click(screen.getByTestId("settings-keep-editing"));
    expect(app.created).toEqual([]);
    await fireEvent.click(screen.getByTestId("open-settings"));
    expect(await find("settings-discard-confirm")).toBeTruthy();
    await fireEvent.click(screen.getByTestId("settings-discard"));
    await waitFor(() => expect(screen.queryByTestId("settings")).toBeNull(), { timeout: 5000 });
    expect(app.created).toEqual([]);
  });
});
