import { describe, expect, it } from "vitest";

// Issue 21: a component that grows past this is doing several jobs; split it along its seams.
const MAX_LINES = 300;

const sources = import.meta.glob<string>("./components/**/*.svelte", {
  query: "?raw",
  import: "default",
  eager: true,
});

describe("components", () => {
  it("are found", () => {
    expect(Object.keys(sources).length).toBeGreaterThan(40);
  });

  it.each(Object.entries(sources))(`%s has at most ${MAX_LINES} lines`, (_, source) => {
    expect(source.split("\n").length - 1).toBeLessThanOrEqual(MAX_LINES);
  });
});
