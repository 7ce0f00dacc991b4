/**
 * Row offsets for a virtualized list, kept incrementally: a Fenwick (binary indexed) tree over
 * row heights. Changing one height is O(log n), the top of a row and the row at a given offset
 * are O(log n), and building from a list of heights is O(n) (once per page of messages, not
 * once per measured row as a recount of every offset would be).
 */
export class Offsets {
  private tree: Float64Array;
  private heights: Float64Array;
  private n: number;

  constructor(heights: ArrayLike<number> = []) {
    this.n = heights.length;
    this.heights = Float64Array.from(heights);
    this.tree = new Float64Array(this.n + 1);
    // Linear construction: each node adds itself to its parent once.
    for (let i = 1; i <= this.n; i++) {
      this.tree[i] += this.heights[i - 1];
      const parent = i + (i & -i);
      if (parent <= this.n) this.tree[parent] += this.tree[i];
    }
  }

  get length(): number {
    return this.n;
  }

  height(i: number): number {
    return this.heights[i];
  }

  /** Set row `i`'s height; answers by how much it changed. */
  set(i: number, height: number): number {
    const delta = height - this.heights[i];
    if (delta === 0) return 0;
    this.heights[i] = height;
    for (let k = i + 1; k <= this.n; k += k & -k) this.tree[k] += delta;
    return delta;
  }

  /** The top of row `i`: the heights of rows 0..i-1 added up (`top(length)` is the total). */
  top(i: number): number {
    let sum = 0;
    for (let k = Math.min(i, this.n); k > 0; k -= k & -k) sum += this.tree[k];
    return sum;
  }

  total(): number {
    return this.top(this.n);
  }

  /**
   * The row that covers offset `y`: the last row whose top is at or above `y` (0 above the
   * first row, the last row below the end; 0 in an empty list).
   */
  indexAt(y: number): number {
    if (this.n === 0 || y <= 0) return 0;
    let pos = 0;
    let rest = y;
    let step = 1;
    while (step * 2 <= this.n) step *= 2;
    for (; step > 0; step >>= 1) {
      const next = pos + step;
      if (next <= this.n && this.tree[next] <= rest) {
        pos = next;
        rest -= this.tree[next];
      }
    }
    // `pos` rows end at or above `y`: row `pos` covers it.
    return Math.min(pos, this.n - 1);
  }
}
