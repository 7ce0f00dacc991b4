import { describe, expect, it } from "vitest";
import { describeEvery, formatDuration, parseEvery } from "./backups";

describe("backup schedule", () => {
  it("takes a whole number and a unit, empty for none, and nothing else", () => {
    expect(parseEvery(" 6h ")).toBe("6h");
    expect(parseEvery("6 h")).toBe("6h");
    expect(parseEvery("")).toBeNull();
    expect(parseEvery("0d")).toBeUndefined();
    expect(parseEvery("1w")).toBeUndefined();
    expect(parseEvery("1.5h")).toBeUndefined();
  });

  it("says how often for people", () => {
    expect(describeEvery("1d")).toBe("every day");
    expect(describeEvery("6h")).toBe("every 6 hours");
    expect(describeEvery(null)).toBe("never");
  });

  it("formats a duration", () => {
    expect(formatDuration(850)).toBe("850 ms");
    expect(formatDuration(4200)).toBe("4.2 s");
    expect(formatDuration(185_000)).toBe("3 min 5 s");
  });
});
