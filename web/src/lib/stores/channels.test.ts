/** The live channel list against a list asked for before a live change and landing after it. */
import { afterEach, describe, expect, it, vi } from "vitest";
import { listed } from "./channelFixture";
import type { Channel, ListedChannel } from "../types";

const listeners: ((event: unknown) => void)[] = [];
const subscribed = new Set<string>();
vi.mock("../socket.svelte", () => ({
  socket: {
    on: (listener: (event: unknown) => void) => {
      listeners.push(listener);
      return () => {};
    },
    onReconnect: () => () => {},
    subscribe: (id: string) => subscribed.add(id),
    unsubscribe: (id: string) => subscribed.delete(id),
  },
}));

const { api } = await import("../api");
const { channels } = await import("./channels.svelte");
const { readState } = await import("./readState.svelte");

const deliver = (event: unknown) => listeners.forEach((listener) => listener(event));


const names = () => channels.list.map((c) => c.name);

afterEach(() => {
  vi.restoreAllMocks();
  channels.reset();
  readState.reset();
  subscribed.clear();
});

describe("the channel list", () => {
  it("keeps what changed live while the list was on its way, and drops what the list lost", async () => {
    vi.spyOn(api, "channels").mockResolvedValue([listed("ch_a", "alpha"), listed("ch_b", "bravo"), listed("ch_c", "charlie")]);
    await channels.load();
    expect(names()).toEqual(["alpha", "bravo", "charlie"]);
    let answer: (list: ListedChannel[]) => void = () => {};
    vi.spyOn(api, "channels").mockImplementation(() => new Promise((resolve) => (answer = resolve)));
    const reload = channels.load();
    // While the list is on its way: a channel made, one renamed, one removed.
    deliver({ type: "channel_created", data: { ...listed("ch_d", "delta", 2) } });
    deliver({ type: "channel_updated", data: { ...listed("ch_a", "aardvark") } as Channel });
    deliver({ type: "channel_removed", data: { id: "ch_b" } });
    // The server read the list before all three, and ch_c has gone since without an event.
    answer([listed("ch_a", "alpha"), listed("ch_b", "bravo")]);
    await reload;
    expect(names()).toEqual(["aardvark", "delta"]);
    expect(readState.get("ch_d").unreadCount).toBe(2);
    expect(subscribed.has("ch_d")).toBe(true);
    expect(subscribed.has("ch_b")).toBe(false);
    expect(subscribed.has("ch_c")).toBe(false);
    // A list asked for after the changes is taken as it is.
    vi.spyOn(api, "channels").mockResolvedValue([listed("ch_a", "able", 1), listed("ch_d", "delta", 3)]);
    await channels.load();
    expect(names()).toEqual(["able", "delta"]);
    expect(readState.get("ch_d").unreadCount).toBe(3);
  });

  it("takes the list's read state for a channel only renamed while the list was on its way", async () => {
    vi.spyOn(api, "channels").mockResolvedValue([listed("ch_a", "alpha")]);
    await channels.load();
    let answer: (list: ListedChannel[]) => void = () => {};
    vi.spyOn(api, "channels").mockImplementation(() => new Promise((resolve) => (answer = resolve)));
    const reload = channels.load();
    deliver({ type: "channel_updated", data: { ...listed("ch_a", "aardvark") } as Channel });
    // Five messages came while the socket was down: the list counts them.
    answer([listed("ch_a", "alpha", 5)]);
    await reload;
    expect(names()).toEqual(["aardvark"]);
    expect(readState.get("ch_a").unreadCount).toBe(5);
  });
});
