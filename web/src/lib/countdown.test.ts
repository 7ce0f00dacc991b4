import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Countdown } from "./countdown.svelte";

describe("Countdown", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("counts whole seconds down and says when it ends", () => {
    const c = new Countdown();
    const ended = vi.fn();
    expect(c.seconds).toBe(0);
    c.start(3, ended);
    expect(c.seconds).toBe(3);
    vi.advanceTimersByTime(1250);
    expect(c.seconds).toBe(2);
    vi.advanceTimersByTime(2000);
    expect(c.seconds).toBe(0);
    expect(ended).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(5000);
    expect(ended).toHaveBeenCalledTimes(1);
  });

  it("starts over when started again, and stops", () => {
    const c = new Countdown();
    c.start(10);
    vi.advanceTimersByTime(4000);
    c.start(2);
    expect(c.seconds).toBe(2);
    c.stop();
    expect(c.seconds).toBe(0);
  });
});
