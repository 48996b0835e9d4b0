import { describe, expect, it } from "vitest";
import { fireEvent, render, waitFor } from "@testing-library/svelte";
import Transcript from "./Transcript.svelte";
import { emptySession, type Item, type SessionState } from "../lib/session";
import type { Goal } from "../lib/types";


function session(items: Item[]): SessionState {
  return { ...emptySession("s1"), items };
}

describe("Transcript", () => {
  it("names a rewound turn by the message that started it, never by its number", () => {
    const items: Item[] = [
      { kind: "user", key: "m1", text: "Rework the draft\nwith care", source: "user", turn: 7 },
      { kind: "assistant", key: "a1", turnId: 7, text: "Reworked.", tools: [] },
      { kind: "assistant", key: "a2", turnId: 8, text: "Going on with the goal.", tools: [] },
    ];
    const { container } = render(Transcript, { state: { ...session(items), rewound: [7, 8] } });
    const folds = [...container.querySelectorAll("[data-testid=rewound-turn]")].map((f) => f.textContent?.trim());
    expect(folds[0]).toContain("Rewound: your message “Rework the draft”");
    expect(folds[1]).toContain("Rewound: “Going on with the goal.”");
    expect(folds.join(" ")).not.toMatch(/turn \d/);
  });

  it("puts only the rows near the viewport in the page, however long the transcript", () => {
    const items: Item[] = Array.from({ length: 5000 }, (_, i) => ({ kind: "user", key: `m${i}`, text: `message ${i}`, source: "user" }));
    const { container } = render(Transcript, { state: session(items) });
    const rows = container.querySelectorAll(".row");
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.length).toBeLessThan(60);
    expect(container.querySelector("[data-testid=transcript]")!.getAttribute("data-items")).toBe("5000");
  });

  it("adds a tool call's output only when it is unfolded, its raw arguments one click further", async () => {
    const items: Item[] = [
      {
        kind: "assistant",
        key: "a1",
        turnId: 1,
        text: "Reading it.",
        tools: [{ callId: "c1", name: "read_file", args: { path: "big.log" }, status: "ok", output: "LINE-ONE\nLINE-TWO", verifier: false, changes: [] }],
      },
    ];
    const { container } = render(Transcript, { state: session(items) });
    const details = container.querySelector("[data-testid=tool-call]") as HTMLDetailsElement;
    expect(details.textContent).toContain("big.log");
    expect(container.querySelector("pre.out")).toBeNull();

    details.open = true;
    await fireEvent(details, new Event("toggle"));
    expect(container.querySelector("pre.out")?.textContent).toBe("LINE-ONE\nLINE-TWO");
    expect(container.querySelector("pre.args")).toBeNull();
    await fireEvent.click(container.querySelector("[data-testid=tool-raw-toggle]")!);
    expect(container.querySelector("pre.args")?.textContent).toContain('"path": "big.log"');
    await fireEvent.click(container.querySelector("[data-testid=tool-raw-toggle]")!);

    details.open = false;
    await fireEvent(details, new Event("toggle"));
    expect(container.querySelector("pre.out")).toBeNull();
  });

  it("shows an edit's diff and a command's exit code, with paths under the workspace relative", async () => {
    const diff = "--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1 +1 @@\n-old\n+new\n";
    const items: Item[] = [
      {
        kind: "assistant",
        key: "a1",
        turnId: 1,
        text: "",
        tools: [
          { callId: "c1", name: "edit", args: { path: "/ws/src/a.rs" }, status: "ok", output: "edited", verifier: false, changes: [{ path: "src/a.rs", op: "edit", diff, note: null, resolved: "/ws/src/a.rs" }] },
          { callId: "c2", name: "bash", args: { command: "false" }, status: "error", output: "nope\n[exit code: 1]", verifier: false, changes: [] },
        ],
      },
    ];
    const { container } = render(Transcript, { state: { ...session(items), workspace: "/ws" } });
    const [edit, bash] = [...container.querySelectorAll("[data-testid=tool-call]")] as HTMLDetailsElement[];
    expect(edit.querySelector("[data-testid=tool-arg]")?.textContent).toBe("src/a.rs");
    expect(bash.querySelector("[data-testid=tool-status]")?.textContent).toBe("exit 1");
    edit.open = true;
    await fireEvent(edit, new Event("toggle"));
    const lines = [...edit.querySelectorAll("[data-testid=tool-diff] .l")].map((l) => `${l.className.replace(/svelte-\S+/g, "").trim()}|${l.textContent}`);
    expect(lines).toEqual(["l hunk|@@ -1 +1 @@", "l del|-old", "l add|+new"]);
    bash.open = true;
    await fireEvent(bash, new Event("toggle"));
    expect(bash.querySelector("[data-testid=tool-output]")?.textContent).toBe("nope");
  });
});

describe("a blocked goal's question in the transcript", () => {
  const line = { limit: null, used: 0, remaining: null, reached: false };
  const goal: Goal = { goal_id: "g1", objective: "Rename the tool", criteria: null, status: "blocked", reason: "worker_reported", actor: "model", revision: 1, budget: { tokens: line, main_turns: line, active_seconds: line }, over_budget: false, question: "Full name or short?", usage_limit: null, steps: [] };
  const items: Item[] = [{ kind: "assistant", key: "a1", turnId: 1, text: "One thing first.", tools: [] }];

  it("ends the transcript with the question and a box that answers it as the Goal tab does", async () => {
    const sent: string[] = [];
    const onreply = async (text: string) => (sent.push(text), true);
    const { container, rerender } = render(Transcript, { state: { ...session(items), goal }, onreply });
    const card = container.querySelector("[data-testid=blocked-question]") as HTMLElement;
    expect(card.textContent).toContain("Full name or short?");
    // It comes after every message: the end of the transcript, where the view follows.
    const last = [...container.querySelectorAll("[data-testid=transcript] > *")].filter((e) => !e.classList.contains("spacer")).at(-1);
    expect(last?.contains(card)).toBe(true);
    const send = container.querySelector("[data-testid=blocked-reply-send]") as HTMLButtonElement;
    expect(send.disabled).toBe(true);
    await fireEvent.input(container.querySelector("[data-testid=blocked-reply]")!, { target: { value: "The short one." } });
    await fireEvent.click(send);
    await waitFor(() => expect(sent).toEqual(["The short one."]));
    await waitFor(() => expect((container.querySelector("[data-testid=blocked-reply]") as HTMLTextAreaElement).value).toBe(""));
    // Answered, the goal is active again and the card goes.
    await rerender({ state: { ...session(items), goal: { ...goal, status: "active", reason: "resumed", actor: "user" } }, onreply });
    expect(container.querySelector("[data-testid=blocked-question]")).toBeNull();
  });

  it("keeps what was written when the reply is refused", async () => {
    const { container } = render(Transcript, { state: { ...session(items), goal }, onreply: async () => false });
    const box = container.querySelector("[data-testid=blocked-reply]") as HTMLTextAreaElement;
    await fireEvent.input(box, { target: { value: "Short." } });
    await fireEvent.click(container.querySelector("[data-testid=blocked-reply-send]")!);
    await waitFor(() => expect((container.querySelector("[data-testid=blocked-reply-send]") as HTMLButtonElement).disabled).toBe(false));
    expect(box.value).toBe("Short.");
  });

  it("asks nothing of a goal blocked without a question, or when no reply is wired", () => {
    const quiet = render(Transcript, { state: { ...session(items), goal: { ...goal, question: null } }, onreply: async () => true });
    expect(quiet.container.querySelector("[data-testid=blocked-question]")).toBeNull();
    const unwired = render(Transcript, { state: { ...session(items), goal } });
    expect(unwired.container.querySelector("[data-testid=blocked-question]")).toBeNull();
  });

  it("keeps Retry after a model switch, and offers the settings for an error whose next step is there", async () => {
    let opened = 0;
    const items: Item[] = [
      { kind: "user", key: "m1", text: "Fix the parser", source: "user" },
      { kind: "chip", key: "e1", text: "Could not reach Ollama at localhost:11434 — is it running?", tone: "error", detail: "network: could not reach http://localhost:11434/v1", next: "settings" },
      { kind: "chip", key: "e2", text: "Now on openai:gpt-4.1 · Ask before changes", tone: "system" },
    ];
    const { getByTestId, container } = render(Transcript, { state: session(items), onsettings: () => opened++ });
    expect(getByTestId("retry-bar")).toBeTruthy();
    await fireEvent.click(getByTestId("error-settings"));
    expect(opened).toBe(1);
    // The runtime's own words wait in a fold.
    const fold = getByTestId("chip-detail") as HTMLDetailsElement;
    expect(fold.open).toBe(false);
    expect(container.textContent).not.toContain("could not reach http://");
  });

  it("offers no Retry once something other than a note came after the error", () => {
    const items: Item[] = [
      { kind: "user", key: "m1", text: "Fix the parser", source: "user" },
      { kind: "chip", key: "e1", text: "Turn ended: boom", tone: "error" },
      { kind: "user", key: "m2", text: "Something else", source: "user" },
    ];
    const { queryByTestId } = render(Transcript, { state: session(items) });
    expect(queryByTestId("retry-bar")).toBeNull();
  });
});

