import { afterEach, describe, expect, it, vi } from "vitest";
import { api } from "../api";
import type { Message } from "../types";
import { Timeline, catchUpBound } from "./messages.svelte";

let clock = 0;
function msg(id: string, fields: Partial<Message> = {}): Message {
  clock += 1;
  return {
    id,
    channelId: "ch_1",
    agentId: null,
    userId: "user_1",
    content: `text of ${id}`,
    type: "text",
    metadata: {},
    createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, clock)).toISOString(),
    ...fields,
  } as Message;
}

function tool(id: string, replyId: string, type: "tool_call" | "tool_result", extra = {}): Message {
  return msg(id, {
    type,
    agentId: "agent_1",
    userId: null,
    content: type === "tool_result" ? `result ${id}` : "",
    metadata: { replyId, callId: `call_${replyId}`, toolName: "web_search", ...extra },
  });
}

const ids = (t: Timeline) => t.items.map((i) => i.id);

describe("Timeline.merge", () => {
  it("keeps id order whatever order pages and events arrive in", () => {
    const t = new Timeline("ch_1");
    t.merge([msg("m05"), msg("m06")]);
    t.merge([msg("m09"), msg("m07")]);
    t.merge([msg("m01"), msg("m03")]);
    t.merge([msg("m04"), msg("m08"), msg("m02")]);
    expect(ids(t)).toEqual(["m01", "m02", "m03", "m04", "m05", "m06", "m07", "m08", "m09"]);
  });

  it("never shows a message twice, and a later copy replaces the earlier in place", () => {
    const t = new Timeline("ch_1");
    t.merge([msg("m1"), msg("m2")]);
    const row = t.find("m2")!;
    t.merge([msg("m2", { content: "edited" }), msg("m1"), msg("m2", { content: "edited" })]);
    expect(ids(t)).toEqual(["m1", "m2"]);
    expect(t.find("m2")).toBe(row);
    expect(row.content).toBe("edited");
  });

  it("folds tool records into their reply, even when they come before it", () => {
    const t = new Timeline("ch_1");
    t.merge([tool("m3", "m5", "tool_call", { arguments: { q: "x" }, status: "completed" })]);
    t.merge([tool("m4", "m5", "tool_result")]);
    expect(ids(t)).toEqual([]);
    t.merge([msg("m5", { agentId: "agent_1", userId: null, content: "answer" })]);
    expect(ids(t)).toEqual(["m5"]);
    expect(t.find("m5")!.tools).toEqual([
      { toolName: "web_search", callId: "call_m5", arguments: { q: "x" }, status: "completed", result: "result m4" },
    ]);
    // The same records again (a catch-up) add no second card.
    t.merge([tool("m3", "m5", "tool_call", { arguments: { q: "x" } }), tool("m4", "m5", "tool_result")]);
    expect(t.find("m5")!.tools).toHaveLength(1);
  });

  it("ignores a tool record that names no reply, and a live tool event for an unknown reply", () => {
    const t = new Timeline("ch_1");
    t.merge([msg("m1", { type: "tool_call", metadata: { toolName: "x" } })]);
    t.handle({ type: "tool_call", data: { messageId: "m9", toolName: "x", arguments: {}, status: "calling" } });
    t.handle({ type: "tool_result", data: { messageId: "m9", toolName: "x", result: "r" } });
    expect(ids(t)).toEqual([]);
  });
});

describe("Timeline streaming", () => {
  afterEach(() => vi.restoreAllMocks());

  it("applies each chunk once, in order, and settles into the stored message", () => {
    const t = new Timeline("ch_1");
    t.merge([msg("m1")]);
    t.handle({ type: "stream_start", data: { messageId: "m2", channelId: "ch_1", agentId: "agent_1" } });
    t.handle({ type: "stream_chunk", data: { messageId: "m2", content: "Hel", seq: 1 } });
    t.handle({ type: "stream_chunk", data: { messageId: "m2", content: "Hel", seq: 1 } });
    t.handle({ type: "stream_chunk", data: { messageId: "m2", content: "lo", seq: 2 } });
    t.flush();
    expect(t.find("m2")!.content).toBe("Hello");
    expect(t.find("m2")!.streaming).toBe(true);
    t.handle({ type: "stream_end", data: { messageId: "m2" } });
    t.merge([msg("m2", { content: "Hello", agentId: "agent_1", userId: null })]);
    expect(ids(t)).toEqual(["m1", "m2"]);
    expect(t.find("m2")!.streaming).toBe(false);
  });

  it("starts the text over when a stream is replayed after a re-subscribe", () => {
    const t = new Timeline("ch_1");
    t.handle({ type: "stream_start", data: { messageId: "m2", channelId: "ch_1", agentId: "a" } });
    t.handle({ type: "stream_chunk", data: { messageId: "m2", content: "Hel", seq: 1 } });
    t.flush();
    t.handle({ type: "stream_start", data: { messageId: "m2", channelId: "ch_1", agentId: "a" } });
    t.handle({ type: "stream_chunk", data: { messageId: "m2", content: "Hello", seq: 1 } });
    t.flush();
    expect(t.find("m2")!.content).toBe("Hello");
  });
});

describe("Timeline.catchUp", () => {
  afterEach(() => vi.restoreAllMocks());

  it("fetches back page by page to the newest message it had, merging without doubles", async () => {
    const t = new Timeline("ch_1");
    t.merge([msg("m0100"), msg("m0101")]);
    (t as unknown as { loaded: boolean }).loaded = true;
    const all = Array.from({ length: 450 }, (_, i) => msg(`m${String(i + 100).padStart(4, "0")}`));
    const asked: (string | undefined)[] = [];
    vi.spyOn(api, "messages").mockImplementation(async (_c, limit, before) => {
      asked.push(before);
      const older = before ? all.filter((m) => m.id < before) : all;
      return older.slice(-limit);
    });
    await t.catchUp();
    expect(asked).toEqual([undefined, "m0350", "m0150"]);
    expect(t.items).toHaveLength(450);
    expect(new Set(ids(t)).size).toBe(450);
    expect(ids(t)[449]).toBe("m0549");
  });

  /** A channel of `n` messages m0100…, served 200 at most a page, newest first. */
  function serve(n: number) {
    const all = Array.from({ length: n }, (_, i) => msg(`m${String(i + 100).padStart(4, "0")}`));
    const asked: (string | undefined)[] = [];
    vi.spyOn(api, "messages").mockImplementation(async (_c, limit, before) => {
      asked.push(before);
      const older = before ? all.filter((m) => m.id < before) : all;
      return older.slice(-limit);
    });
    return { all, asked };
  }

  it("takes the earlier of the newest known and an outage's boundary", () => {
    expect(catchUpBound("m5", "m3")).toBe("m3");
    expect(catchUpBound("m3", "m5")).toBe("m3");
    expect(catchUpBound(null, "m3")).toBe("m3");
    expect(catchUpBound("m5", null)).toBe("m5");
    expect(catchUpBound(null, null)).toBeNull();
  });

  it("pages back past an outage's boundary, not only to the newest message it had", async () => {
    // It had m0100…m0149 and, live during the outage, m0900; the rest was missed.
    const t = new Timeline("ch_1");
    const { all, asked } = serve(1000);
    t.merge(all.slice(0, 50).concat(all[800]));
    (t as unknown as { loaded: boolean }).loaded = true;
    t.missed("m0140x");
    t.missed("m0300"); // a later outage's boundary before the catch-up: the earlier one holds
    await t.catchUp();
    expect(asked).toEqual([undefined, "m0900", "m0700", "m0500", "m0300"]);
    expect(ids(t)).toEqual(all.map((m) => m.id));
    // Caught up: the next catch-up stops at the newest it has again.
    asked.length = 0;
    await t.catchUp();
    expect(asked).toEqual([undefined]);
  });

  it("keeps a boundary named while a catch-up was on its way for the next one", async () => {
    const t = new Timeline("ch_1");
    const { all, asked } = serve(1000);
    t.merge(all.slice(0, 1000));
    (t as unknown as { loaded: boolean }).loaded = true;
    const first = t.catchUp();
    t.missed("m0700");
    await first;
    expect(asked).toEqual([undefined]);
    await t.catchUp();
    expect(asked).toEqual([undefined, undefined, "m0900"]);
  });

  it("past 20 pages, drops the rows beyond the gap and pages older from the pages fetched", async () => {
    const t = new Timeline("ch_1");
    const { all, asked } = serve(4500);
    t.merge(all.slice(0, 10));
    (t as unknown as { loaded: boolean }).loaded = true;
    t.missed("m0105");
    await t.catchUp();
    expect(asked).toHaveLength(20);
    expect(ids(t)).toEqual(all.slice(500).map((m) => m.id));
    expect(t.hasOlder).toBe(true);
    asked.length = 0;
    await t.loadOlder();
    expect(asked).toEqual([all[500].id]);
    expect(t.items).toHaveLength(4050);
  });

  it("settles a reply that ended while the socket was down", async () => {
    const t = new Timeline("ch_1");
    (t as unknown as { loaded: boolean }).loaded = true;
    t.handle({ type: "stream_start", data: { messageId: "m2", channelId: "ch_1", agentId: "a" } });
    vi.spyOn(api, "messages").mockResolvedValue([msg("m2", { content: "done", agentId: "a", userId: null })]);
    await t.catchUp();
    expect(t.find("m2")).toMatchObject({ content: "done", streaming: false });
  });

  it("catches up when the subscription is confirmed during the first history fetch", async () => {
    const t = new Timeline("ch_1");
    let answer!: (m: Message[]) => void;
    const spy = vi
      .spyOn(api, "messages")
      .mockImplementationOnce(() => new Promise((resolve) => (answer = resolve)))
      .mockResolvedValueOnce([msg("m1"), msg("m2")]);
    const loading = t.loadLatest();
    t.subscribed();
    answer([msg("m1")]);
    await loading;
    expect(spy).toHaveBeenCalledTimes(2);
    expect(ids(t)).toEqual(["m1", "m2"]);
  });
});
