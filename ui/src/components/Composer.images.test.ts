import { describe, expect, it } from "vitest";
import { fireEvent, render, screen, waitFor } from "@testing-library/svelte";
import Composer from "./Composer.svelte";
import type { ImageInput } from "../bindings";
import { imageType } from "../lib/attach";

const PNG = Uint8Array.from(atob("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="), (c) => c.charCodeAt(0));

/** A paste event whose clipboard holds `files` (jsdom has no DataTransfer to build one). */
function paste(el: HTMLElement, files: File[]) {
  const items = files.map((f) => ({ kind: "file", type: f.type, getAsFile: () => f }));
  return fireEvent.paste(el, { clipboardData: { items, files, types: ["Files"] } });
}

function setup() {
  const sent: { text: string; images: ImageInput[] }[] = [];
  render(Composer, {
    running: false,
    mode: "default",
    onstop: () => {},
    onsend: async (text: string, _i: unknown, images: ImageInput[]) => (sent.push({ text, images }), true),
  });
  return { input: screen.getByTestId("composer") as HTMLTextAreaElement, sent };
}

describe("images in the composer", () => {
  it("shows a pasted image as a thumbnail, sends it with the message, then clears it", async () => {
    const { input, sent } = setup();
    await paste(input, [new File([PNG], "shot.png", { type: "image/png" })]);
    await waitFor(() => expect(screen.getAllByTestId("attachment")).toHaveLength(1));
    expect((screen.getByRole("img") as HTMLImageElement).src).toMatch(/^data:image\/png;base64,iVBORw0KGgo/);
    await fireEvent.input(input, { target: { value: "what is this?" } });
    await fireEvent.click(screen.getByTestId("send"));
    await waitFor(() => expect(sent).toHaveLength(1));
    expect(sent[0].text).toBe("what is this?");
    expect(sent[0].images).toEqual([{ name: "shot.png", data: btoa(String.fromCharCode(...PNG)) }]);
    await waitFor(() => expect(screen.queryByTestId("attachment")).toBeNull());
  });

  it("lets an image be removed before sending", async () => {
    const { input, sent } = setup();
    await paste(input, [new File([PNG], "a.png"), new File([PNG], "b.png")]);
    await waitFor(() => expect(screen.getAllByTestId("attachment")).toHaveLength(2));
    await fireEvent.click(screen.getByLabelText("Remove a.png"));
    expect(screen.getAllByTestId("attachment")).toHaveLength(1);
    await fireEvent.input(input, { target: { value: "one left" } });
    await fireEvent.click(screen.getByTestId("send"));
    await waitFor(() => expect(sent).toHaveLength(1));
    expect(sent[0].images.map((i) => i.name)).toEqual(["b.png"]);
  });

  it("refuses what is not an image by its bytes, or is over 5 MB, saying why", async () => {
    const { input } = setup();
    await paste(input, [new File(["just text"], "notes.png", { type: "image/png" })]);
    await waitFor(() => expect(screen.getByTestId("attach-error").textContent).toContain("notes.png is not a PNG, JPEG, GIF or WebP image"));
    const big = new File([new Uint8Array(6 * 1024 * 1024)], "big.png");
    await paste(input, [big]);
    await waitFor(() => expect(screen.getByTestId("attach-error").textContent).toContain("big.png is 6.0 MB; images over 5 MB are not sent"));
    expect(screen.queryByTestId("attachment")).toBeNull();
  });

  it("leaves a text paste to the text box", async () => {
    const { input } = setup();
    const e = new Event("paste", { bubbles: true, cancelable: true });
    Object.assign(e, { clipboardData: { items: [{ kind: "string", type: "text/plain", getAsFile: () => null }], files: [] } });
    input.dispatchEvent(e);
    expect(e.defaultPrevented).toBe(false);
  });

  it("types an image by its magic bytes", () => {
    expect(imageType(PNG)).toBe("image/png");
    expect(imageType(Uint8Array.from([0xff, 0xd8, 0xff, 0xe0]))).toBe("image/jpeg");
    expect(imageType(new TextEncoder().encode("GIF89a...."))).toBe("image/gif");
    expect(imageType(new TextEncoder().encode("RIFF....WEBPVP8 "))).toBe("image/webp");
    expect(imageType(new TextEncoder().encode("RIFF....WAVE"))).toBeNull();
    expect(imageType(new TextEncoder().encode("<svg>"))).toBeNull();
  });
});

describe("images dropped on the composer", () => {
  it("takes a dropped image as a thumbnail, and leaves a drop with no files alone", async () => {
    setup();
    const composer = screen.getByRole("group", { name: "Composer" });
    const file = new File([PNG], "dropped.png", { type: "image/png" });
    const over = new Event("dragover", { bubbles: true, cancelable: true });
    Object.assign(over, { dataTransfer: { types: ["Files"], items: [], files: [file] } });
    composer.dispatchEvent(over);
    expect(over.defaultPrevented).toBe(true);
    await fireEvent.drop(composer, { dataTransfer: { items: [{ kind: "file", type: "image/png", getAsFile: () => file }], files: [file], types: ["Files"] } });
    await waitFor(() => expect(screen.getAllByTestId("attachment")).toHaveLength(1));
    expect(screen.getByRole("img").getAttribute("alt")).toBe("dropped.png");
    const text = new Event("drop", { bubbles: true, cancelable: true });
    Object.assign(text, { dataTransfer: { items: [{ kind: "string", type: "text/plain", getAsFile: () => null }], files: [], types: ["text/plain"] } });
    composer.dispatchEvent(text);
    expect(text.defaultPrevented).toBe(false);
  });
});
