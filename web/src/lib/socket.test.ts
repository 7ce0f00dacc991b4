import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

/** A WebSocket the test drives: it opens when told, and records what the page sends. */
class FakeSocket {
  static OPEN = 1;
  static all: FakeSocket[] = [];
  readyState = 0;
  sent: Record<string, unknown>[] = [];
  onmessage: ((e: MessageEvent) => void) | null = null;
  onclose: ((e: CloseEvent) => void) | null = null;
  readonly url: string;

  constructor(url: string) {
    this.url = url;
    FakeSocket.all.push(this);
  }

  send(data: string) {
    this.sent.push(JSON.parse(data));
  }

  close(code = 1000) {
    this.readyState = 3;
    this.onclose?.({ code } as CloseEvent);
  }

  /** The server accepted the cookie. */
  open() {
    this.readyState = FakeSocket.OPEN;
    this.receive({ type: "auth_ok", userId: "user_1" });
  }

  receive(event: object) {
    this.onmessage?.({ data: JSON.stringify(event) } as MessageEvent);
  }

  /** The network dropped it, or the server closed it. */
  drop(code = 1006, reason = "") {
    this.readyState = 3;
    this.onclose?.({ code, reason } as CloseEvent);
  }
}

const latest = () => FakeSocket.all[FakeSocket.all.length - 1];

async function freshSocket() {
  vi.resetModules();
  const { socket } = await import("./socket.svelte");
  return socket;
}

describe("socket", () => {
  beforeEach(() => {
    FakeSocket.all = [];
    vi.stubGlobal("WebSocket", FakeSocket);
    vi.useFakeTimers();
  });

  afterEach(() => {
    vi.useRealTimers();
    vi.unstubAllGlobals();
    vi.restoreAllMocks();
  });

  it("backs off exponentially with jitter, up to 15 s, and starts over once it connects", async () => {
    const socket = await freshSocket();
    const random = vi.spyOn(Math, "random");
    socket.start();
    latest().open();
    const delays: number[] = [];
    for (let i = 0; i < 8; i++) {
      random.mockReturnValue(i % 2 ? 0 : 0.5);
      const before = FakeSocket.all.length;
      const now = Date.now();
      latest().drop();
      expect(socket.state).toBe("reconnecting");
      delays.push(socket.retryAt! - now);
      vi.advanceTimersByTime(socket.retryAt! - now - 1);
      expect(FakeSocket.all.length).toBe(before);
      vi.advanceTimersByTime(1);
      expect(FakeSocket.all.length).toBe(before + 1);
    }
    // Ceilings 0.5, 1, 2, 4, 8, 15, 15, 15 s; half of each is fixed and half random.
    expect(delays).toEqual([375, 500, 1500, 2000, 6000, 7500, 11250, 7500]);
    latest().open();
    random.mockReturnValue(0.5);
    const now = Date.now();
    latest().drop();
    expect(socket.retryAt! - now).toBe(375);
  });

  it("re-subscribes every channel after a reconnect and tells the reconnect listeners", async () => {
    const socket = await freshSocket();
    const reconnected = vi.fn();
    socket.onReconnect(reconnected);
    socket.start();
    socket.subscribe("ch_1");
    latest().open();
    socket.subscribe("ch_2");
    socket.subscribe("ch_2");
    expect(latest().sent).toEqual([{ type: "subscribe", channelId: "ch_1" }, { type: "subscribe", channelId: "ch_2" }]);
    expect(reconnected).not.toHaveBeenCalled();
    latest().drop();
    vi.runOnlyPendingTimers();
    latest().open();
    expect(latest().sent).toEqual([{ type: "subscribe", channelId: "ch_1" }, { type: "subscribe", channelId: "ch_2" }]);
    expect(reconnected).toHaveBeenCalledTimes(1);
    expect(socket.state).toBe("open");
  });

  it("reconnects when a ping goes unanswered, and not when the pong comes", async () => {
    const socket = await freshSocket();
    socket.start();
    latest().open();
    vi.advanceTimersByTime(25_000);
    expect(latest().sent).toContainEqual({ type: "ping" });
    latest().receive({ type: "pong" });
    vi.advanceTimersByTime(10_000);
    expect(FakeSocket.all).toHaveLength(1);
    vi.advanceTimersByTime(15_000);
    vi.advanceTimersByTime(10_000);
    expect(socket.state).toBe("reconnecting");
  });

  it("hands events to listeners and sends the page to the login on 4401", async () => {
    const socket = await freshSocket();
    const heard = vi.fn();
    socket.on(heard);
    const unauthenticated = vi.fn();
    window.addEventListener("palaver:unauthenticated", unauthenticated);
    socket.start();
    latest().open();
    latest().receive({ type: "message", data: { id: "m1" } });
    latest().onmessage?.({ data: "not json" } as MessageEvent);
    expect(heard).toHaveBeenCalledTimes(1);
    latest().drop(4401);
    expect(socket.state).toBe("closed");
    expect(unauthenticated).toHaveBeenCalledTimes(1);
    vi.runAllTimers();
    expect(FakeSocket.all).toHaveLength(1);
    window.removeEventListener("palaver:unauthenticated", unauthenticated);
  });

  it("reads the boundary of a close for a catch-up, and nothing else as one", async () => {
    const { missedAfter } = await import("./socket.svelte");
    const boundary = "msg_01KB0V3C5G0000000000000000";
    expect(missedAfter(1012, `events missed after ${boundary}`)).toBe(boundary);
    expect(missedAfter(1012, "")).toBeNull();
    expect(missedAfter(1012, "events missed after msg_01KB0V3C5G")).toBeNull();
    expect(missedAfter(1012, `events missed after ${boundary}!`)).toBeNull();
    expect(missedAfter(1012, "events missed after msg_01KB0V3C5G000000000000000U")).toBeNull();
    expect(missedAfter(1011, `events missed after ${boundary}`)).toBeNull();
  });

  it("tells the missed listeners each close's boundary before it reconnects", async () => {
    const socket = await freshSocket();
    const missed = vi.fn();
    socket.onMissed(missed);
    socket.start();
    latest().open();
    latest().drop(1012, "events missed after msg_01KB0V3C5G0000000000000000");
    expect(missed).toHaveBeenCalledWith("msg_01KB0V3C5G0000000000000000");
    expect(socket.state).toBe("reconnecting");
    vi.runOnlyPendingTimers();
    latest().open();
    latest().drop(1012);
    latest().drop();
    expect(missed).toHaveBeenCalledTimes(1);
  });

  it("stops for good on logout: no reconnect, subscriptions forgotten", async () => {
    const socket = await freshSocket();
    socket.start();
    socket.subscribe("ch_1");
    latest().open();
    socket.stop();
    vi.runAllTimers();
    expect(FakeSocket.all).toHaveLength(1);
    expect(socket.state).toBe("closed");
    socket.start();
    latest().open();
    expect(latest().sent).toEqual([]);
  });
});
