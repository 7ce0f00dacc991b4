import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

let deliver: (event: unknown) => void = () => {};
vi.mock("../socket.svelte", () => ({
  socket: {
    on: (listener: (event: unknown) => void) => {
      deliver = listener;
      return () => (deliver = () => {});
    },
    onReconnect: () => () => {},
    start: () => {},
    stop: () => {},
  },
}));

const { settingsApi } = await import("../settingsApi");
const { usageApi } = await import("../usageApi");
const { session } = await import("./session.svelte");
const { budgetWatch } = await import("./budgets.svelte");

const row = (key: string, input: number) => ({
  key,
  inputTokens: input,
  outputTokens: 0,
  cachedTokens: 0,
  cost: 0,
  calls: 1,
  unpricedCalls: 0,
});

function settingsWith(budgets: unknown) {
  return vi.spyOn(settingsApi, "settings").mockResolvedValue({ budgets } as never);
}

describe("the budget watch", () => {
  beforeEach(() => {
    session.user = { id: "user_owner", name: "Owner", role: "owner", createdAt: "" };
    budgetWatch.reset();
  });

  afterEach(() => {
    vi.restoreAllMocks();
    vi.useRealTimers();
  });

  it("reads only the settings while no cap is set", async () => {
    settingsWith({ agents: {}, guests: {}, total: null });
    const usage = vi.spyOn(usageApi, "usage");
    await budgetWatch.refresh();
    expect(usage).not.toHaveBeenCalled();
    expect(budgetWatch.warnings).toEqual([]);
  });

  it("warns from 80% of an agent's cap, on this month's use by agent", async () => {
    settingsWith({ agents: { agent_a: { monthlyTokens: 100 } }, guests: {}, total: null });
    const usage = vi.spyOn(usageApi, "usage").mockImplementation(async (group) =>
      group === "agent" ? [row("agent_a", 85)] : [],
    );
    await budgetWatch.refresh();
    expect(usage.mock.calls.map((c) => c[0]).sort()).toEqual(["agent", "person"]);
    expect(usage.mock.calls.every((c) => c[1] === undefined || Object.keys(c[1]).length === 0)).toBe(true);
    expect(budgetWatch.warnings.map((w) => [w.id, w.level])).toEqual([["agent_a", "warning"]]);
    budgetWatch.dismiss(budgetWatch.shown);
    expect(budgetWatch.shown).toEqual([]);
  });

  it("asks nothing for a guest", async () => {
    session.user = { id: "user_g", name: "Gus", role: "guest", createdAt: "" };
    const settings = settingsWith({ agents: {}, guests: {}, total: null });
    await budgetWatch.refresh();
    expect(settings).not.toHaveBeenCalled();
  });

  it("asks again a few seconds after a reply ends, once for a burst of them", async () => {
    vi.useFakeTimers();
    const settings = settingsWith({ agents: {}, guests: {}, total: null });
    const stop = budgetWatch.watch();
    await vi.advanceTimersByTimeAsync(0);
    expect(settings).toHaveBeenCalledTimes(1);
    for (let i = 0; i < 5; i++) deliver({ type: "stream_end", data: { messageId: `m${i}` } });
    deliver({ type: "message", data: {} });
    await vi.advanceTimersByTimeAsync(14_000);
    expect(settings).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(1_500);
    expect(settings).toHaveBeenCalledTimes(2);
    await vi.advanceTimersByTimeAsync(5 * 60_000);
    expect(settings).toHaveBeenCalledTimes(3);
    stop();
    deliver({ type: "stream_end", data: { messageId: "later" } });
    await vi.advanceTimersByTimeAsync(10 * 60_000);
    expect(settings).toHaveBeenCalledTimes(3);
  });

  it("joins an ask under way, but asks once more after it for a fresh look", async () => {
    let answer: (value: unknown) => void = () => {};
    const settings = vi
      .spyOn(settingsApi, "settings")
      .mockImplementation(() => new Promise((resolve) => (answer = resolve)) as never);
    const first = budgetWatch.refresh();
    const joined = budgetWatch.refresh();
    void budgetWatch.refresh(true);
    void budgetWatch.refresh(true);
    expect(settings).toHaveBeenCalledTimes(1);
    answer({ budgets: { agents: {}, guests: {}, total: null } });
    await joined;
    await vi.waitFor(() => expect(settings).toHaveBeenCalledTimes(2));
    answer({ budgets: { agents: {}, guests: {}, total: null } });
    await first;
    expect(settings).toHaveBeenCalledTimes(2);
  });
});
