import { describe, expect, it } from "vitest";
import { Offsets } from "./offsets";
import { EMPTY, cut, grow, nextRange } from "./window";

const rows = (n: number, h = 100) => new Offsets(new Array(n).fill(h));

describe("cut", () => {
  it("covers the viewport and a margin on each side", () => {
    expect(cut(rows(100), 1000, 600, 300)).toEqual({ start: 7, end: 20 });
    expect(cut(rows(100), 0, 600, 300)).toEqual({ start: 0, end: 10 });
    expect(cut(rows(100), 9400, 600, 300)).toEqual({ start: 91, end: 100 });
    expect(cut(rows(0), 0, 600, 300)).toBe(EMPTY);
  });

  it("renders at least one row", () => {
    expect(cut(rows(3), 5000, 600, 0)).toEqual({ start: 2, end: 3 });
  });
});

describe("nextRange", () => {
  it("keeps the same range object for small scrolls, and moves it when the margin runs out", () => {
    const o = rows(1000);
    let range = cut(o, 50_000, 600, 900);
    const first = range;
    for (let top = 50_000; top > 49_500; top -= 10) {
      range = nextRange(o, range, top, 600, 300, 900);
    }
    expect(range).toBe(first);
    range = nextRange(o, range, 48_000, 600, 300, 900);
    expect(range).not.toBe(first);
    expect(range).toEqual(cut(o, 48_000, 600, 900));
  });

  it("re-cuts after a jump, and when the list shrank under the range", () => {
    const o = rows(1000);
    const range = cut(o, 0, 600, 900);
    expect(nextRange(o, range, 90_000, 600, 300, 900)).toEqual(cut(o, 90_000, 600, 900));
    expect(nextRange(rows(5), { start: 3, end: 20 }, 0, 600, 300, 900)).toEqual({ start: 0, end: 5 });
    expect(nextRange(rows(0), { start: 3, end: 20 }, 0, 600, 300, 900)).toBe(EMPTY);
  });

  it("drops a range grown far beyond what the viewport needs", () => {
    const o = rows(1000);
    expect(nextRange(o, { start: 0, end: 900 }, 50_000, 600, 300, 900)).toEqual(cut(o, 50_000, 600, 900));
  });
});

describe("grow", () => {
  const o = rows(1000);

  it("adds at most a step's worth of rows on the side a scroll goes to", () => {
    const current = { start: 400, end: 430 };
    const next = { start: 380, end: 420 };
    // 20 rows wanted above: 3 come now (300 px); those leaving below are left to `next`.
    expect(grow(o, current, next, 41_000, 600, 200, 300)).toEqual({ start: 397, end: 420 });
    const down = { start: 410, end: 450 };
    expect(grow(o, current, down, 42_000, 600, 200, 300)).toEqual({ start: 410, end: 433 });
  });

  it("always covers the viewport and the safe margin", () => {
    const current = { start: 400, end: 430 };
    const next = { start: 380, end: 420 };
    // The view is at 39,500: rows from 393 (39,300) must be there at once.
    expect(grow(o, current, next, 39_500, 600, 200, 300)).toEqual({ start: 393, end: 420 });
  });

  it("is the re-cut itself when that adds little, and for a jump", () => {
    const current = { start: 400, end: 430 };
    const near = { start: 398, end: 428 };
    expect(grow(o, current, near, 40_500, 600, 200, 300)).toBe(near);
    const far = { start: 10, end: 40 };
    expect(grow(o, current, far, 2_000, 600, 200, 300)).toBe(far);
    expect(grow(o, EMPTY, far, 2_000, 600, 200, 300)).toBe(far);
  });
});
