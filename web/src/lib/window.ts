/**
 * Which rows a virtualized list renders: plain indices, with hysteresis. The range is cut
 * `far` px beyond the viewport on each side and kept, the same object, while it still covers
 * `near` px on each side, so a scroll of a few pixels re-renders nothing and the rendered
 * slice changes only when its indices do.
 */
import type { Offsets } from "./offsets";

export interface Range {
  /** First row rendered. */
  start: number;
  /** One past the last row rendered. */
  end: number;
}

export const EMPTY: Range = { start: 0, end: 0 };

export function cut(offsets: Offsets, top: number, viewport: number, margin: number): Range {
  const n = offsets.length;
  if (n === 0) return EMPTY;
  const start = offsets.indexAt(top - margin);
  const end = Math.min(n, offsets.indexAt(top + viewport + margin) + 1);
  return { start, end: Math.max(start + 1, end) };
}

/** The range to render for a viewport at `top`: `current` itself if it still covers `near`. */
export function nextRange(
  offsets: Offsets,
  current: Range,
  top: number,
  viewport: number,
  near: number,
  far: number,
): Range {
  const n = offsets.length;
  if (n === 0) return current.end === 0 ? current : EMPTY;
  if (current.end <= n && current.start < current.end) {
    const wantTop = Math.max(0, top - near);
    const wantBottom = Math.min(offsets.total(), top + viewport + near);
    const covers = offsets.top(current.start) <= wantTop && offsets.top(current.end) >= wantBottom;
    // Not too much either: a range left over from a jump would keep thousands of rows.
    const tooBig = offsets.top(current.end) - offsets.top(current.start) > viewport + 4 * far;
    if (covers && !tooBig) return current;
  }
  return cut(offsets, top, viewport, far);
}

/**
 * `next` (a re-cut of `current`), grown by at most `step` px on each side beyond `current`:
 * the rows a scroll brings in are then made over several frames, not all in one. Never less
 * than the viewport and `safe` px on each side, and a range with nothing in common with
 * `current` (a jump) is `next` itself. Rows leaving are left to `next`.
 */
export function grow(
  offsets: Offsets,
  current: Range,
  next: Range,
  top: number,
  viewport: number,
  safe: number,
  step: number,
): Range {
  const n = offsets.length;
  if (current.end > n || next.start >= current.end || next.end <= current.start) return next;
  let { start, end } = next;
  if (start < current.start) {
    const limit = offsets.indexAt(offsets.top(current.start) - step);
    start = Math.min(Math.max(start, limit), offsets.indexAt(top - safe));
  }
  if (end > current.end) {
    const limit = offsets.indexAt(offsets.top(current.end) + step);
    end = Math.max(Math.min(end, limit), Math.min(n, offsets.indexAt(top + viewport + safe) + 1));
  }
  return start === next.start && end === next.end ? next : { start, end };
}
