import { beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { fireEvent, render, screen, waitFor } from "@testing-library/svelte";

// A session of two turns, open in the window. A rewind is answered as the runtime answers it:
// the command goes through and its `session.rewound` follows, with a new checkpoint that
// undoes it (Undo is a rewind to that one).
const app = vi.hoisted(() => ({ push: (_e: unknown) => {}, rewinds: [] as [string, string][], seq: 8, undos: 0 }));
vi.mock("./bindings", async () => {
  const { mockBindings, ok, sentBy, twoTurnSession } = await import("./test/bindings");
  const { id: S, at, session, view } = twoTurnSession();
  const cp = (turn: number) => ({ id: `cp-turn${turn}`, turn, time: at, trigger: "turn_start", changed: [] });
  return mockBindings({
    commands: {
      listSessions: () => ok([session]),
      openSession: () => ok(view),
      checkpoints: () => ok([cp(1), cp(2)]),
      rewindPreview: (_id: string, turn: number) => ok({ checkpoint: cp(turn), files: [{ path: "greet.sh", op: "revert", diff: null, note: null }], turns: [turn] }),
      rewind: (_id: string, to: string, scope: string) => {
        app.rewinds.push([to, scope]);
        const undo = `cp-undo${++app.undos}`;
        const back = to.startsWith("cp-undo");
        app.push({ session_id: S, seq: ++app.seq, ts: at, transient: false, type: "session.rewound", checkpoint_id: to, undo_checkpoint_id: undo, scope, rewound_turns: back ? [] : [2], files: [{ path: "greet.sh", op: "revert" }] });
        return ok(null);
      },
    },
    events: { sessionEvent: sentBy((send) => (app.push = send)) },
  });
});

const { default: App } = await import("./App.svelte");

beforeAll(() => {
  Object.defineProperty(window, "innerWidth", { value: 1440, configurable: true });
});
// Each test opens the session anew: its events go on from the view's last.
beforeEach(() => {
  app.seq = 8;
  app.undos = 0;
  app.rewinds.length = 0;
});

/** Opens the preview of a rewind to before the second message, and rewinds with `scope`. */
async function rewindSecondTurn(button: "rewind-both" | "rewind-files-only") {
  const here = await waitFor(() => {
    const b = screen.getAllByTestId("rewind-here").find((x) => x.dataset.turn === "2");
    expect(b).toBeTruthy();
    return b as HTMLElement;
  });
  await fireEvent.click(here);
  await fireEvent.click(await screen.findByTestId(button));
  await waitFor(() => expect(screen.queryByTestId("rewind-dialog")).toBeNull());
}

describe("rewinding in the window", () => {
  it("puts the rewound message back in the composer; Undo then reads Undone, with no second Undo", async () => {
    render(App);
    const composer = (await screen.findByTestId("composer")) as HTMLTextAreaElement;
    await rewindSecondTurn("rewind-both");
    const banner = await screen.findByTestId("undo-rewind-banner");
    expect(banner.textContent).toContain("Rewound: 1 file changed, 1 turn out of the conversation.");
    expect(banner.textContent).toContain("Your message is back in the composer");
    await waitFor(() => expect(composer.value).toBe("Make it say good morning"));

    await fireEvent.click(screen.getByTestId("undo-rewind"));
    expect(app.rewinds).toEqual([["cp-turn2", "both"], ["cp-undo1", "both"]]);
    await waitFor(() => expect(screen.getByTestId("undo-rewind-banner").dataset.state).toBe("undone"));
    expect(screen.getByTestId("undo-rewind-banner").querySelector("span")?.textContent).toBe("Undone.");
    expect(screen.queryByTestId("undo-rewind")).toBeNull();
    // The message is back in the conversation, so no longer waits in the composer.
    await waitFor(() => expect(composer.value).toBe(""));
  });

  it("keeps a draft in the composer, and offers the rewound message instead", async () => {
    render(App);
    const composer = (await screen.findByTestId("composer")) as HTMLTextAreaElement;
    await fireEvent.input(composer, { target: { value: "My half-written idea" } });
    await rewindSecondTurn("rewind-both");
    const banner = await screen.findByTestId("undo-rewind-banner");
    expect(banner.textContent).toContain("Your draft stays in the composer.");
    expect(composer.value).toBe("My half-written idea");
    await fireEvent.click(screen.getByTestId("rewind-put-back"));
    await waitFor(() => expect(composer.value).toBe("Make it say good morning"));
    expect(screen.queryByTestId("rewind-put-back")).toBeNull();
    expect(screen.getByTestId("undo-rewind-banner").textContent).toContain("Your message is back in the composer");
  });

  it("leaves the composer alone when only the files were rewound", async () => {
    render(App);
    const composer = (await screen.findByTestId("composer")) as HTMLTextAreaElement;
    await rewindSecondTurn("rewind-files-only");
    const banner = await screen.findByTestId("undo-rewind-banner");
    expect(banner.textContent).not.toContain("composer");
    expect(composer.value).toBe("");
  });
});
