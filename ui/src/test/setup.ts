import { afterEach } from "vitest";
import { cleanup } from "@testing-library/svelte";

// Each test starts with an empty document.
afterEach(() => cleanup());
