import { beforeAll, describe, expect, it, vi } from "vitest";
import { fireEvent, render, screen, waitFor } from "@testing-library/svelte";

// The app with one session to open (in demo mode), and an alert the test raises.
const app = vi.hoisted(() => ({ alert: (_p: unknown) => {} }));
vi.mock("./bindings", async () => {
  const { appInfo, mockBindings, ok, sentBy, sessionView, summary } = await import("./test/bindings");
  const session = summary("s1", { title: "Fix it" });
  const view = sessionView(session);
  const config = { model: null, permission_mode: "ask", providers: {}, beta: { desktop_plan_mode: true, desktop_plan_mode_agent_entry: false, thread_goal: true }, goal: { verification: null, budget: {}, breaker: {}, verifier: {}, usage_limit: {} } };
  return mockBindings({
    commands: {
      appInfo: async () => ({ ...appInfo, demo: true }),
      listSessions: () => ok([session]),
      openSession: () => ok(view),
      getSettings: () => ok({ config, keys: [], keyring_error: null }),
    },
    events: { alertRaised: sentBy((send) => (app.alert = send)) },
  });
});

const { default: App } = await import("./App.svelte");
const { uiState } = await import("./lib/uistate");

beforeAll(() => {
  // A window wide enough for both side columns as set (jsdom's is 1024 px).
  Object.defineProperty(window, "innerWidth", { value: 1440, configurable: true });
});

const goalBlocked = { session_id: "s1", title: "Goal blocked — Fix it", body: "The agent says it is blocked. It asks: Full name or short?" };

describe("the window with a session open", () => {
  it("puts a toast at the top of the transcript's box, never over the composer or the end of the transcript", async () => {
    render(App);
    const composer = await screen.findByTestId("composer");
    app.alert(goalBlocked);
    const toast = await screen.findByTestId("toast");
    expect(toast.textContent).toContain("Goal blocked");
    // In an anchor laid over the transcript's box, before the transcript: at its top (its
    // oldest lines), while a blocked goal's question and the composer are at the bottom.
    const anchor = screen.getByTestId("toast-anchor");
    const transcript = screen.getByTestId("transcript");
    expect(toast.parentElement).toBe(anchor);
    expect(anchor.parentElement).toBe(transcript.parentElement);
    expect(anchor.compareDocumentPosition(transcript) & Node.DOCUMENT_POSITION_FOLLOWING).toBeTruthy();
    expect(screen.getByTestId("composer-dock").contains(toast)).toBe(false);
    expect(toast.compareDocumentPosition(composer) & Node.DOCUMENT_POSITION_FOLLOWING).toBeTruthy();
    expect(anchor.style.right).toBe("0px");

    // No transcript on screen (Settings): the toast belongs to the window again.
    await fireEvent.click(screen.getByTestId("open-settings"));
    await waitFor(() => expect(screen.queryByTestId("composer")).toBeNull());
    app.alert(goalBlocked);
    await waitFor(() => expect(screen.getByTestId("toast").parentElement).toBe(screen.getByTestId("shell")));
  });

  it("keeps the toast clear of the drawer open in a narrow window (the plan's buttons are there)", async () => {
    Object.defineProperty(window, "innerWidth", { value: 900, configurable: true });
    try {
      render(App);
      await screen.findByTestId("composer");
      await fireEvent.click(screen.getByTestId("toggle-right"));
      const drawer = screen.getByTestId("side-panel");
      expect(drawer.hidden).toBe(false);
      expect(drawer.classList.contains("drawer")).toBe(true);
      app.alert(goalBlocked);
      await screen.findByTestId("toast");
      // The drawer is as wide as the side panel, less 48 px of the window at most.
      const right = parseInt(document.querySelector<HTMLElement>(".main")?.style.getPropertyValue("--right") ?? "", 10);
      expect(right).toBeGreaterThan(0);
      expect(screen.getByTestId("toast-anchor").style.right).toBe(`${Math.min(right, 900 - 48)}px`);
      // Closed, the toast has the column's whole width again.
      await fireEvent.click(screen.getByTestId("toggle-right"));
      await waitFor(() => expect(screen.getByTestId("toast-anchor").style.right).toBe("0px"));
    } finally {
      Object.defineProperty(window, "innerWidth", { value: 1440, configurable: true });
    }
  });

  it("sends a new session to the setup card while no model is connected", async () => {
    render(App);
    await screen.findByTestId("composer");
    await fireEvent.click(screen.getByTestId("open-folder"));
    expect(await screen.findByTestId("setup-card")).toBeTruthy();
    expect(screen.getByTestId("toast").textContent).toContain("Connect a model first");
  });

  it("keeps the last session, the side columns' widths and a dismissed banner in the window state", async () => {
    render(App);
    await screen.findByTestId("composer");
    expect(uiState.lastSession()).toBe("s1");

    const main = document.querySelector<HTMLElement>(".main");
    const right = uiState.widths()?.right ?? 400;
    await fireEvent.keyDown(screen.getByTestId("resize-right"), { key: "ArrowLeft" });
    expect(main?.style.getPropertyValue("--right")).toBe(`${right + 16}px`);
    expect(uiState.widths()?.right).toBe(right + 16);

    await fireEvent.click(screen.getByTestId("demo-banner-dismiss"));
    expect(screen.queryByTestId("demo-banner")).toBeNull();
    expect(uiState.isDismissed("demo")).toBe(true);
  });
});
