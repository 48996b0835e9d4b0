import { describe, expect, it } from "vitest";
import { fireEvent, render, screen } from "@testing-library/svelte";
import Composer from "./Composer.svelte";

function setup(history: string[]) {
  const sent: string[] = [];
  render(Composer, { running: false, mode: "default", history, onstop: () => {}, onsend: async (t: string) => (sent.push(t), true) });
  return { input: screen.getByTestId("composer") as HTMLTextAreaElement, sent };
}

const up = (el: HTMLElement) => fireEvent.keyDown(el, { key: "ArrowUp" });
const down = (el: HTMLElement) => fireEvent.keyDown(el, { key: "ArrowDown" });

describe("the composer's history", () => {
  it("goes back through what was sent with ↑, newest first, once each in a row, and forward with ↓", async () => {
    const { input } = setup(["first", "second", "second", "third"]);
    await up(input);
    expect(input.value).toBe("third");
    await up(input);
    expect(input.value).toBe("second");
    await up(input);
    expect(input.value).toBe("first");
    // The oldest: ↑ stays there.
    await up(input);
    expect(input.value).toBe("first");
    await down(input);
    await down(input);
    expect(input.value).toBe("third");
    // Past the newest: the empty composer again; ↓ there does nothing.
    await down(input);
    expect(input.value).toBe("");
    await down(input);
    expect(input.value).toBe("");
  });

  it("leaves the arrows alone in a draft or a recalled message the user changed", async () => {
    const { input } = setup(["first", "second"]);
    await fireEvent.input(input, { target: { value: "my draft" } });
    await up(input);
    expect(input.value).toBe("my draft");
    await fireEvent.input(input, { target: { value: "" } });
    await up(input);
    expect(input.value).toBe("second");
    await fireEvent.input(input, { target: { value: "second, changed" } });
    await up(input);
    await down(input);
    expect(input.value).toBe("second, changed");
    // Emptied again, ↑ starts from the newest.
    await fireEvent.input(input, { target: { value: "" } });
    await up(input);
    expect(input.value).toBe("second");
  });

  it("moves the caret inside a recalled message of several lines before moving on", async () => {
    const { input } = setup(["older", "line one\nline two"]);
    await up(input);
    expect(input.value).toBe("line one\nline two");
    // The caret on the last line: ↑ is the textarea's own.
    input.setSelectionRange(input.value.length, input.value.length);
    await up(input);
    expect(input.value).toBe("line one\nline two");
    input.setSelectionRange(0, 0);
    await up(input);
    expect(input.value).toBe("older");
  });

  it("sends a recalled message as it is, and starts again from the newest after", async () => {
    const { input, sent } = setup(["first", "second"]);
    await up(input);
    await up(input);
    await fireEvent.keyDown(input, { key: "Enter" });
    expect(sent).toEqual(["first"]);
    await up(input);
    expect(input.value).toBe("second");
  });

  it("has nothing to recall without history", async () => {
    const { input } = setup([]);
    await up(input);
    expect(input.value).toBe("");
  });
});

describe("Shift+Tab (PM-4, PM-21)", () => {
  const shiftTab = (el: HTMLElement) => fireEvent.keyDown(el, { key: "Tab", code: "Tab", shiftKey: true });
  for (const [mode, intent, chip] of [
    ["default", "plan-entry", "Next message enters Plan"],
    ["plan", "plan-exit", "Next message leaves Plan"],
  ] as const) {
    it(`in ${mode} mode arms ${intent} for the next message; again cancels it`, async () => {
      const sent: [string, string | null][] = [];
      render(Composer, { running: false, mode, onstop: () => {}, onsend: async (t: string, i: string | null) => (sent.push([t, i]), true) });
      const input = screen.getByTestId("composer") as HTMLTextAreaElement;
      await shiftTab(input);
      expect(screen.getByTestId("plan-chip").textContent).toContain(chip);
      await shiftTab(input);
      expect(screen.queryByTestId("plan-chip")).toBeNull();
      await shiftTab(input);
      await fireEvent.input(input, { target: { value: "go on" } });
      await fireEvent.keyDown(input, { key: "Enter" });
      await fireEvent.input(input, { target: { value: "and then" } });
      await fireEvent.keyDown(input, { key: "Enter" });
      await new Promise((go) => setTimeout(go, 0));
      // Armed for one message only.
      expect(sent).toEqual([["go on", intent], ["and then", null]]);
    });
  }
});
