import { beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { fireEvent, render, screen, waitFor } from "@testing-library/svelte";
import { KEYS } from "./lib/keys";

// A session whose second turn is still running, open in the window; Stop is recorded.
const app = vi.hoisted(() => ({ stopped: [] as string[] }));
vi.mock("./bindings", async () => {
  const { mockBindings, ok, sessionLog, sessionView, summary, usage } = await import("./test/bindings");
  const session = summary("s-m1x2k9a100q7wz");
  const { ev } = sessionLog(session.id);
  const events = [
    ev("message.admitted", { message_id: 1, source: "user", text: "Add a greeting", position: "tail" }),
    ev("turn.started", { turn_id: 1, message_id: 1 }),
    ev("assistant.message", { turn_id: 1, text: "Done.", tool_calls: [], usage }),
    ev("turn.finished", { turn_id: 1, reason: "completed", usage, steps: 1 }),
    // Sent as text, not as a command: recalled escaped again.
    ev("message.admitted", { message_id: 2, source: "user", text: "/tmp is full", position: "tail" }),
    ev("turn.started", { turn_id: 2, message_id: 2 }),
  ];
  const view = sessionView(session, events, 2);
  return mockBindings({
    commands: {
      listSessions: () => ok([session]),
      openSession: () => ok(view),
      stop: (id: string) => {
        app.stopped.push(id);
        return ok(null);
      },
    },
  });
});

const { default: App } = await import("./App.svelte");

beforeAll(() => {
  Object.defineProperty(window, "innerWidth", { value: 1440, configurable: true });
});

beforeEach(() => {
  app.stopped.length = 0;
});

async function opened(): Promise<HTMLTextAreaElement> {
  render(App);
  const composer = (await screen.findByTestId("composer")) as HTMLTextAreaElement;
  await screen.findByTestId("stop");
  return composer;
}

describe("the window's keys", () => {
  it("Escape stops the running turn from the composer or from no field", async () => {
    const composer = await opened();
    await fireEvent.keyDown(composer, { key: "Escape" });
    expect(app.stopped).toEqual(["s-m1x2k9a100q7wz"]);
    await fireEvent.keyDown(document.body, { key: "Escape" });
    expect(app.stopped).toHaveLength(2);
  });

  it("Escape leaves a field that uses it, an open list and the sheet alone", async () => {
    const composer = await opened();
    // The search box of the session list: Escape is the field's.
    await fireEvent.keyDown(screen.getByTestId("session-search"), { key: "Escape" });
    // The completion list takes Escape first.
    await fireEvent.input(composer, { target: { value: "/go" } });
    await screen.findByTestId("completion");
    await fireEvent.keyDown(composer, { key: "Escape" });
    await waitFor(() => expect(screen.queryByTestId("completion")).toBeNull());
    // The sheet too.
    await fireEvent.keyDown(document.body, { key: "?" });
    const sheet = await screen.findByTestId("shortcuts");
    await fireEvent.keyDown(sheet, { key: "Escape" });
    await waitFor(() => expect(screen.queryByTestId("shortcuts")).toBeNull());
    // Held with Ctrl, it is another key.
    await fireEvent.keyDown(document.body, { key: "Escape", ctrlKey: true });
    expect(app.stopped).toEqual([]);
  });

  it("? lists every key the window handles, Escape among them", async () => {
    await opened();
    await fireEvent.keyDown(document.body, { key: "?", shiftKey: true });
    const sheet = await screen.findByTestId("shortcuts");
    const shown = [...sheet.querySelectorAll("[data-testid=shortcuts-keys] dd")].map((dd) => dd.textContent);
    expect(shown).toEqual(Object.values(KEYS).map((k) => k.what));
    expect(sheet.textContent).toContain("Stop the running turn");
    expect([...sheet.querySelectorAll("[data-testid=shortcuts-keys] kbd")].map((k) => k.textContent)).toEqual(expect.arrayContaining(["Esc", "Ctrl+N", "Shift+Tab", "A", "R", "↑", "?"]));
  });

  it("↑ in the empty composer recalls what was sent in this session, ↓ goes back", async () => {
    const composer = await opened();
    await fireEvent.keyDown(composer, { key: "ArrowUp" });
    expect(composer.value).toBe("//tmp is full");
    await fireEvent.keyDown(composer, { key: "ArrowUp" });
    expect(composer.value).toBe("Add a greeting");
    await fireEvent.keyDown(composer, { key: "ArrowDown" });
    expect(composer.value).toBe("//tmp is full");
    await fireEvent.keyDown(composer, { key: "ArrowDown" });
    expect(composer.value).toBe("");
  });
});
