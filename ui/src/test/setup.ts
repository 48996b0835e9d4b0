import { afterEach } from "vitest";
import { cleanup } from "@testing-library/svelte";

// Each test starts with an empty document.
afterEach(() => cleanup());

// jsdom has no layout, so no ResizeObserver (the transcript measures its rows with one):
// rows keep their estimated height.
globalThis.ResizeObserver ??= class {
  observe() {}
  unobserve() {}
  disconnect() {}
} as unknown as typeof ResizeObserver;
