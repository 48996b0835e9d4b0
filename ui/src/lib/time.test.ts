import { describe, expect, it } from "vitest";
import { clock, day, when } from "./time";

describe("time labels", () => {
  const at = new Date(2026, 11, 1, 9, 5, 7).getTime();

  it("pads the clock and the date", () => {
    expect(clock(at)).toBe("09:05");
    expect(clock(at, true)).toBe("09:05:07");
    expect(day(at)).toBe("2026-12-01");
  });

  it("shows the clock for today and the date for another day", () => {
    expect(when(at, new Date(2026, 11, 1, 23, 59).getTime())).toBe("09:05");
    expect(when(at, new Date(2026, 11, 2, 0, 1).getTime())).toBe("2026-12-01");
  });
});
