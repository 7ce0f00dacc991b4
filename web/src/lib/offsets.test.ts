import { describe, expect, it } from "vitest";
import { Offsets } from "./offsets";

function naiveTop(heights: number[], i: number): number {
  return heights.slice(0, i).reduce((a, b) => a + b, 0);
}

function naiveIndexAt(heights: number[], y: number): number {
  if (heights.length === 0 || y <= 0) return 0;
  let top = 0;
  for (let i = 0; i < heights.length; i++) {
    if (top + heights[i] > y) return i;
    top += heights[i];
  }
  return heights.length - 1;
}

/** A small deterministic generator, so a failure can be replayed. */
function rng(seed: number) {
  return () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
}

describe("Offsets", () => {
  it("answers tops and totals like adding the heights up", () => {
    const heights = [72, 30.5, 100, 0, 44.25];
    const o = new Offsets(heights);
    for (let i = 0; i <= heights.length; i++) expect(o.top(i)).toBeCloseTo(naiveTop(heights, i));
    expect(o.total()).toBeCloseTo(246.75);
    expect(o.length).toBe(5);
  });

  it("finds the row at an offset, at and around every boundary", () => {
    const heights = [72, 30, 100, 0, 44];
    const o = new Offsets(heights);
    for (let y = -5; y <= 260; y += 0.5) expect(o.indexAt(y)).toBe(naiveIndexAt(heights, y));
  });

  it("stays exact through many random changes", () => {
    const random = rng(7);
    const heights = Array.from({ length: 1000 }, () => Math.round(random() * 200));
    const o = new Offsets(heights);
    for (let round = 0; round < 2000; round++) {
      const i = Math.floor(random() * heights.length);
      const h = Math.round(random() * 300 * 4) / 4;
      expect(o.set(i, h)).toBe(h - heights[i]);
      heights[i] = h;
      const j = Math.floor(random() * (heights.length + 1));
      expect(o.top(j)).toBeCloseTo(naiveTop(heights, j), 6);
      const y = random() * o.total();
      expect(o.indexAt(y)).toBe(naiveIndexAt(heights, y));
    }
  });

  it("handles the empty list and a list of one", () => {
    const empty = new Offsets();
    expect([empty.total(), empty.indexAt(100), empty.top(0)]).toEqual([0, 0, 0]);
    const one = new Offsets([50]);
    expect([one.indexAt(0), one.indexAt(49), one.indexAt(500)]).toEqual([0, 0, 0]);
    expect(one.set(0, 50)).toBe(0);
  });

  it("builds 100,000 rows and answers 100,000 lookups quickly", () => {
    const heights = new Float64Array(100_000).fill(72);
    const started = performance.now();
    const o = new Offsets(heights);
    for (let i = 0; i < 100_000; i++) o.indexAt(i * 72 + 1);
    expect(o.indexAt(72 * 50_000 + 1)).toBe(50_000);
    expect(performance.now() - started).toBeLessThan(500);
  });
});
