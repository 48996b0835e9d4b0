import { describe, expect, it, vi } from "vitest";
import { fireEvent, render, screen } from "@testing-library/svelte";

const { default: Controls } = await import("./SessionControls.svelte");

describe("the header's model and mode pickers", () => {
  it("switch the model, or take a typed spec, and go back when the runtime refuses", async () => {
    const onmodel = vi.fn(async (spec: string) => (spec === "bad:x" ? "no provider named bad" : null));
    const onmode = vi.fn(async () => "the session is busy");
    render(Controls, { model: "scripted:/tmp/x/plan.json", mode: "ask", models: ["openai:gpt-4.1", "scripted:/tmp/x/plan.json"], onmodel, onmode });
    const picker = screen.getByTestId("model-picker") as HTMLSelectElement;
    // The session's model once, by its file name; the others after it.
    expect([...picker.options].map((o) => o.textContent)).toEqual(["Offline script (plan.json)", "openai:gpt-4.1", "Other model…"]);
    await fireEvent.change(picker, { target: { value: "openai:gpt-4.1" } });
    expect(onmodel).toHaveBeenLastCalledWith("openai:gpt-4.1");

    await fireEvent.change(screen.getByTestId("model-picker"), { target: { value: "__other__" } });
    const other = (await screen.findByTestId("model-other")) as HTMLInputElement;
    expect(document.activeElement).toBe(other);
    await fireEvent.input(other, { target: { value: "bad:x" } });
    await fireEvent.keyDown(other, { key: "Enter" });
    // Refused: the field stays for a correction.
    expect(onmodel).toHaveBeenLastCalledWith("bad:x");
    expect(screen.getByTestId("model-other")).toBeTruthy();
    await fireEvent.keyDown(other, { key: "Escape" });
    expect(screen.queryByTestId("model-other")).toBeNull();

    const mode = screen.getByTestId("mode-picker") as HTMLSelectElement;
    expect(mode.value).toBe("ask");
    await fireEvent.change(mode, { target: { value: "auto" } });
    expect(onmode).toHaveBeenCalledWith("auto");
    // The runtime refused: the picker shows the mode in force, and why beside it.
    await vi.waitFor(() => expect((screen.getByTestId("mode-picker") as HTMLSelectElement).value).toBe("ask"));
    expect(screen.getByTestId("switch-refused").textContent).toContain("the session is busy");
    await fireEvent.click(screen.getByTestId("switch-refused-dismiss"));
    expect(screen.queryByTestId("switch-refused")).toBeNull();
  });

  it("never move ahead of the store: a choice shows only once the session holds it", async () => {
    let done: (v: string | null) => void = () => {};
    const onmode = vi.fn(() => new Promise<string | null>((go) => (done = go)));
    const r = render(Controls, { model: "openai:gpt-4.1", mode: "ask", models: [], onmodel: async () => null, onmode });
    const mode = screen.getByTestId("mode-picker") as HTMLSelectElement;
    await fireEvent.change(mode, { target: { value: "auto" } });
    // Asked for, not yet stored: the picker still says what is in force, and that it is switching.
    expect(mode.value).toBe("ask");
    expect(screen.getByTestId("switch-pending").textContent).toContain("Allow everything");
    done(null);
    await vi.waitFor(() => expect(screen.queryByTestId("switch-pending")).toBeNull());
    expect(mode.value).toBe("ask");
    // The store's event arrives: now it shows, with what it means.
    await r.rerender({ mode: "auto" });
    expect(mode.value).toBe("auto");
    expect(screen.getByTestId("switch-means").textContent).toContain("without asking");
    // Another session that is in `ask` (the same value the picker had before): shown as ask.
    await r.rerender({ mode: "ask" });
    expect(mode.value).toBe("ask");
    // What a mode means is said once: switching to it again says nothing more.
    await fireEvent.click(screen.getByLabelText("Dismiss"));
    await fireEvent.change(mode, { target: { value: "auto" } });
    done(null);
    await vi.waitFor(() => expect(screen.queryByTestId("switch-pending")).toBeNull());
    expect(screen.queryByTestId("switch-means")).toBeNull();
  });
});
