import { describe, expect, it } from "vitest";
import { clock } from "./time";

describe("clock", () => {
  it("shows what the formatter shows, for each minute, cached or not", () => {
    const format = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit" });
    const base = new Date(2026, 10, 26, 0, 0, 0).getTime();
    for (let m = 0; m < 24 * 60; m += 7) {
      const d = new Date(base + m * 60_000 + 13_000);
      expect(clock(d.toISOString())).toBe(format.format(d));
      // Another second of the same minute, another day: the same text.
      const later = new Date(d.getTime() + 30_000 + 86_400_000 * 3);
      expect(clock(later.toISOString())).toBe(format.format(later));
    }
  });
});
