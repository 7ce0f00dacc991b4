/** A channel's chain strip against a list of chains asked for before a status event. */
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Chain, ChainStatusEvent } from "../types";

const listeners: ((event: unknown) => void)[] = [];
vi.mock("../socket.svelte", () => ({
  socket: {
    on: (listener: (event: unknown) => void) => {
      listeners.push(listener);
      return () => {};
    },
    onReconnect: () => () => {},
  },
}));

const { api } = await import("../api");
const { chains } = await import("./chains.svelte");

const deliver = (event: unknown) => listeners.forEach((listener) => listener(event));

function chain(id: string, status: Chain["status"], step = 1): Chain {
  return {
    id,
    channelId: "ch_c",
    status,
    reason: null,
    requested: null,
    currentAgent: "agent_1",
    step,
    totalSteps: 2,
    steps: [],
  };
}

function status(chainId: string, state: ChainStatusEvent["status"], step = 2): unknown {
  return { type: "collab_status", data: { chainId, currentAgent: null, step, totalSteps: 2, status: state } };
}

/** The list's answer, held until the test lets it land. */
function held(): (list: Chain[]) => void {
  let answer: (list: Chain[]) => void = () => {};
  vi.spyOn(api, "chains").mockImplementation(() => new Promise((resolve) => (answer = resolve)));
  return (list) => answer(list);
}

afterEach(() => {
  vi.restoreAllMocks();
  chains.reset();
});

describe("a channel's chain", () => {
  it("is not shown running when it ended while the list was on its way", async () => {
    const answer = held();
    const load = chains.load("ch_c");
    vi.spyOn(api, "chain").mockResolvedValue(chain("chn_1", "completed", 2));
    deliver(status("chn_1", "completed"));
    await vi.waitFor(() => expect(chains.byChannel.ch_c?.status).toBe("completed"));
    answer([chain("chn_1", "running")]);
    await load;
    expect(chains.byChannel.ch_c).toMatchObject({ id: "chn_1", status: "completed", step: 2 });
  });

  it("is not dropped when it started while the list was on its way", async () => {
    const answer = held();
    const load = chains.load("ch_c");
    vi.spyOn(api, "chain").mockResolvedValue(chain("chn_2", "running"));
    deliver(status("chn_2", "running", 1));
    await vi.waitFor(() => expect(chains.byChannel.ch_c?.id).toBe("chn_2"));
    answer([]);
    await load;
    expect(chains.byChannel.ch_c).toMatchObject({ id: "chn_2", status: "running" });
  });

  it("is shown as a list asked for after its last event has it (a reconnect)", async () => {
    vi.spyOn(api, "chains").mockResolvedValue([chain("chn_3", "running")]);
    await chains.load("ch_c");
    deliver(status("chn_3", "running", 1));
    expect(chains.byChannel.ch_c).toMatchObject({ id: "chn_3", status: "running" });
    // The socket was down while the chain ended: the list fetched on reconnect says so.
    vi.spyOn(api, "chains").mockResolvedValue([{ ...chain("chn_3", "completed", 2), requested: null }]);
    await chains.load("ch_c", true);
    expect(chains.byChannel.ch_c).toMatchObject({ id: "chn_3", status: "completed", step: 2 });
  });
});
