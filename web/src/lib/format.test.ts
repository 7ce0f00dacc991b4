import { describe, expect, it } from "vitest";
import { ago, formatBytes, replies } from "./format";

describe("formatBytes", () => {
  it.each([
    [0, "0 B"],
    [1023, "1023 B"],
    [1024, "1.0 KB"],
    [1536, "1.5 KB"],
    [1024 * 1024 - 1, "1024.0 KB"],
    [1024 * 1024, "1.0 MB"],
    [25 * 1024 * 1024, "25.0 MB"],
    [3 * 1024 ** 3, "3.0 GB"],
  ])("%d bytes is %s", (n, want) => {
    expect(formatBytes(n)).toBe(want);
  });
});

describe("ago", () => {
  const now = Date.parse("2026-01-10T12:00:00Z");
  it.each([
    ["2026-01-10T11:59:30Z", "just now"],
    ["2026-01-10T11:55:00Z", "5 min ago"],
    ["2026-01-10T09:00:00Z", "3 h ago"],
    ["2026-01-09T10:00:00Z", "yesterday"],
    ["2026-01-06T12:00:00Z", "4 days ago"],
    ["2026-01-10T12:00:05Z", "just now"],
  ])("%s is %s", (iso, want) => {
    expect(ago(iso, now)).toBe(want);
  });

  it("counts replies", () => {
    expect(replies(1)).toBe("1 reply");
    expect(replies(3)).toBe("3 replies");
  });
});
