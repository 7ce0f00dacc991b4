import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { ListedChannel, Message, ReadState } from "../types";

let deliver: (event: unknown) => void = () => {};
vi.mock("../socket.svelte", () => ({
  socket: {
    on: (listener: (event: unknown) => void) => {
      deliver = listener;
      return () => (deliver = () => {});
    },
    onReconnect: () => () => {},
  },
}));

const { api } = await import("../api");
const { readState } = await import("./readState.svelte");
const { session } = await import("./session.svelte");

function listed(unreadCount: number, lastReadId: string | null = null): ListedChannel {
  return {
    id: "ch_r",
    name: "room",
    type: "group",
    agentIds: [],
    createdAt: "2026-01-01T00:00:00Z",
    lastReadId,
    unreadCount,
    mentionCount: 0,
  } as unknown as ListedChannel;
}

function message(id: string): Message {
  return {
    id,
    channelId: "ch_r",
    agentId: null,
    userId: "user_other",
    content: "hello",
    type: "text",
    metadata: {},
    createdAt: "2026-01-01T00:00:01Z",
    threadId: null,
    editedAt: null,
    deleted: false,
    reactions: [],
    thread: null,
  };
}

describe("read state after a subscription is confirmed", () => {
  beforeEach(() => {
    vi.useFakeTimers();
    session.user = { id: "user_me", name: "Me", role: "guest" } as typeof session.user;
  });
  afterEach(() => {
    vi.useRealTimers();
    vi.restoreAllMocks();
    readState.reset();
  });

  it("keeps a message counted live while the recount's answer, taken before it, is on its way", async () => {
    readState.load([listed(0)]);
    let answer: (list: ListedChannel[]) => void = () => {};
    const channels = vi
      .spyOn(api, "channels")
      .mockImplementationOnce(() => new Promise((resolve) => (answer = resolve)))
      .mockResolvedValue([listed(1)]);
    readState.subscribed("ch_r");
    await vi.advanceTimersByTimeAsync(500);
    expect(channels).toHaveBeenCalledTimes(1);
    deliver({ type: "message", data: message("m_1") });
    expect(readState.get("ch_r").unreadCount).toBe(1);
    // The server counted before the message was stored: that answer does not take it away.
    answer([listed(0)]);
    await vi.advanceTimersByTimeAsync(0);
    expect(readState.get("ch_r").unreadCount).toBe(1);
    // The channel is asked again, and that answer holds it.
    await vi.advanceTimersByTimeAsync(500);
    expect(channels).toHaveBeenCalledTimes(2);
    expect(readState.get("ch_r").unreadCount).toBe(1);
  });

  it("takes the server's count when nothing arrived meanwhile", async () => {
    readState.load([listed(0)]);
    vi.spyOn(api, "channels").mockResolvedValue([listed(2)]);
    readState.subscribed("ch_r");
    await vi.advanceTimersByTimeAsync(500);
    expect(readState.get("ch_r").unreadCount).toBe(2);
  });

  it("asks again when a known message became a mention while the answer was on its way", async () => {
    readState.load([listed(0)]);
    deliver({ type: "message", data: message("m_1") });
    let answer: (list: ListedChannel[]) => void = () => {};
    const channels = vi
      .spyOn(api, "channels")
      .mockImplementationOnce(() => new Promise((resolve) => (answer = resolve)))
      .mockResolvedValue([{ ...listed(1), mentionCount: 1 }]);
    readState.subscribed("ch_r");
    await vi.advanceTimersByTimeAsync(500);
    deliver({ type: "mention", data: { channelId: "ch_r", messageId: "m_1" } });
    expect(readState.get("ch_r").mentionCount).toBe(1);
    answer([listed(1)]);
    await vi.advanceTimersByTimeAsync(0);
    expect(readState.get("ch_r").mentionCount).toBe(1);
    await vi.advanceTimersByTimeAsync(500);
    expect(channels).toHaveBeenCalledTimes(2);
    expect(readState.get("ch_r").mentionCount).toBe(1);
  });

  it("keeps a message counted while a read marker's post was on its way, and asks again", async () => {
    readState.load([listed(2)]);
    readState.visible = true;
    let answer: (state: ReadState & { ok: boolean }) => void = () => {};
    vi.spyOn(api, "markRead").mockImplementation(() => new Promise((resolve) => (answer = resolve)));
    const channels = vi.spyOn(api, "channels").mockResolvedValue([listed(1, "m_2")]);
    readState.seen("ch_r", "m_2", [message("m_1"), message("m_2")]);
    expect(readState.get("ch_r").unreadCount).toBe(0);
    await vi.advanceTimersByTimeAsync(1000);
    // The marker's post left; a message arrives before its answer, which predates it.
    deliver({ type: "message", data: message("m_3") });
    expect(readState.get("ch_r").unreadCount).toBe(1);
    answer({ ok: true, lastReadId: "m_2", unreadCount: 0, mentionCount: 0 });
    await vi.advanceTimersByTimeAsync(0);
    expect(readState.get("ch_r")).toMatchObject({ lastReadId: "m_2", unreadCount: 1 });
    // The post's echo to this page's own socket has the same counts: it waits as well.
    deliver({ type: "read_updated", data: { channelId: "ch_r", lastReadId: "m_2", unreadCount: 0, mentionCount: 0 } });
    expect(readState.get("ch_r")).toMatchObject({ lastReadId: "m_2", unreadCount: 1 });
    // The counts are asked again, and the server's answer holds the message.
    await vi.advanceTimersByTimeAsync(2500);
    expect(channels).toHaveBeenCalledTimes(1);
    expect(readState.get("ch_r")).toMatchObject({ lastReadId: "m_2", unreadCount: 1 });
  });

  it("takes a read marker's answer whole when nothing arrived meanwhile", async () => {
    readState.load([listed(2)]);
    readState.visible = true;
    vi.spyOn(api, "markRead").mockResolvedValue({ ok: true, lastReadId: "m_2", unreadCount: 1, mentionCount: 0 });
    readState.seen("ch_r", "m_2", [message("m_1"), message("m_2")]);
    await vi.advanceTimersByTimeAsync(1000);
    // The server counted a reply in a thread the person takes part in that the page did not.
    expect(readState.get("ch_r")).toMatchObject({ lastReadId: "m_2", unreadCount: 1 });
  });

  it("lets an answer stand after two set aside, so a busy channel is not asked for ever", async () => {
    readState.load([listed(0)]);
    let n = 0;
    const channels = vi.spyOn(api, "channels").mockImplementation(async () => {
      // Every answer is overtaken by a message that arrives while it is on its way.
      n += 1;
      deliver({ type: "message", data: message(`m_${n}`) });
      return [listed(7)];
    });
    readState.subscribed("ch_r");
    await vi.advanceTimersByTimeAsync(5000);
    expect(channels).toHaveBeenCalledTimes(3);
    expect(readState.get("ch_r").unreadCount).toBe(7);
  });
});
