import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ReadQueue } from "./readQueue";

describe("ReadQueue", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("posts the newest message seen per channel once reading pauses, not one per message", async () => {
    const post = vi.fn().mockResolvedValue(undefined);
    const queue = new ReadQueue(post, 800, 3000);
    queue.add("ch_a", "m1");
    queue.add("ch_a", "m3");
    queue.add("ch_a", "m2");
    queue.add("ch_b", "m7");
    await vi.advanceTimersByTimeAsync(799);
    expect(post).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1);
    expect(post.mock.calls).toEqual([
      ["ch_a", "m3"],
      ["ch_b", "m7"],
    ]);
  });

  it("posts within the longest wait while the reader keeps scrolling", async () => {
    const post = vi.fn().mockResolvedValue(undefined);
    const queue = new ReadQueue(post, 800, 3000);
    const start = Date.now();
    for (let i = 10; i < 50; i++) {
      queue.add("ch_a", `m${i}`);
      await vi.advanceTimersByTimeAsync(200);
      if (post.mock.calls.length) break;
    }
    expect(post).toHaveBeenCalledTimes(1);
    expect(Date.now() - start).toBeLessThanOrEqual(3000 + 200);
  });

  it("keeps one post in flight per channel; what is seen meanwhile goes next", async () => {
    let release: () => void = () => undefined;
    const post = vi.fn(() => new Promise<void>((r) => (release = r)));
    const queue = new ReadQueue(post, 100, 1000);
    queue.add("ch_a", "m1");
    await vi.advanceTimersByTimeAsync(100);
    queue.add("ch_a", "m2");
    await vi.advanceTimersByTimeAsync(100);
    expect(post).toHaveBeenCalledTimes(1);
    release();
    await vi.advanceTimersByTimeAsync(100);
    expect(post.mock.calls).toEqual([
      ["ch_a", "m1"],
      ["ch_a", "m2"],
    ]);
  });

  it("forgets a channel that is gone", async () => {
    const post = vi.fn().mockResolvedValue(undefined);
    const queue = new ReadQueue(post, 100, 1000);
    queue.add("ch_a", "m1");
    queue.drop("ch_a");
    await vi.advanceTimersByTimeAsync(200);
    expect(post).not.toHaveBeenCalled();
  });
});
