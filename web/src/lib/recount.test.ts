import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Recount } from "./recount";

describe("Recount", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("asks once for every channel named close together, not once per reply or channel", async () => {
    const ask = vi.fn().mockResolvedValue(undefined);
    const recount = new Recount(ask, 400);
    recount.add("ch_a");
    recount.add("ch_b");
    await vi.advanceTimersByTimeAsync(200);
    recount.add("ch_a");
    await vi.advanceTimersByTimeAsync(199);
    expect(ask).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1);
    expect(ask).toHaveBeenCalledTimes(1);
    expect([...ask.mock.calls[0][0]]).toEqual(["ch_a", "ch_b"]);
  });

  it("asks within the window of the first reply, however many keep coming", async () => {
    const ask = vi.fn().mockResolvedValue(undefined);
    const recount = new Recount(ask, 400);
    for (let i = 0; i < 4; i++) {
      recount.add("ch_a");
      await vi.advanceTimersByTimeAsync(150);
    }
    expect(ask).toHaveBeenCalledTimes(1);
  });

  it("keeps one request in flight; a channel named meanwhile is asked for after it", async () => {
    let release: () => void = () => undefined;
    const ask = vi.fn(() => new Promise<void>((r) => (release = r)));
    const recount = new Recount(ask, 100);
    recount.add("ch_a");
    await vi.advanceTimersByTimeAsync(100);
    expect(recount.inFlight("ch_a")).toBe(true);
    expect(recount.inFlight("ch_b")).toBe(false);
    recount.add("ch_a");
    recount.add("ch_b");
    await vi.advanceTimersByTimeAsync(1000);
    expect(ask).toHaveBeenCalledTimes(1);
    release();
    await vi.advanceTimersByTimeAsync(0);
    expect(recount.inFlight("ch_a")).toBe(false);
    await vi.advanceTimersByTimeAsync(100);
    expect(ask).toHaveBeenCalledTimes(2);
    expect([...(ask.mock.calls[1] as unknown as [Set<string>])[0]]).toEqual(["ch_a", "ch_b"]);
  });

  it("asks again later after a failed answer only when named again; forgets dropped channels", async () => {
    const ask = vi.fn().mockRejectedValueOnce(new Error("down")).mockResolvedValue(undefined);
    const recount = new Recount(ask, 100);
    recount.add("ch_a");
    await vi.advanceTimersByTimeAsync(100);
    expect(ask).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(1000);
    expect(ask).toHaveBeenCalledTimes(1);
    recount.add("ch_a");
    recount.add("ch_b");
    recount.drop("ch_a");
    await vi.advanceTimersByTimeAsync(100);
    expect([...ask.mock.calls[1][0]]).toEqual(["ch_b"]);
    recount.add("ch_c");
    recount.drop();
    await vi.advanceTimersByTimeAsync(1000);
    expect(ask).toHaveBeenCalledTimes(2);
  });

  it("waits a random part of `jitter` more, never less than `delay`", async () => {
    const random = vi.spyOn(Math, "random").mockReturnValue(0.5);
    const ask = vi.fn().mockResolvedValue(undefined);
    const recount = new Recount(ask, 1000, 1000);
    recount.add("ch_a");
    await vi.advanceTimersByTimeAsync(1499);
    expect(ask).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1);
    expect(ask).toHaveBeenCalledTimes(1);
    random.mockRestore();
  });
});
