/** A timeline opened around an old message (a search result): the window, paging both ways,
 * live messages held while detached, and back to the live end. */
import { afterEach, describe, expect, it, vi } from "vitest";
import { api } from "../api";
import type { Message, ServerEvent } from "../types";
import { Timeline } from "./messages.svelte";

const id = (n: number) => `msg_${String(n).padStart(6, "0")}`;

function msg(n: number, fields: Partial<Message> = {}): Message {
  return {
    id: id(n),
    channelId: "ch_j",
    agentId: null,
    userId: "user_2",
    content: `message ${n}`,
    type: "text",
    metadata: {},
    createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString(),
    threadId: null,
    ...fields,
  };
}

/** The server's history of one channel: `GET /api/messages` with before/after as it pages. */
function serve(stored: Message[]) {
  return vi
    .spyOn(api, "messages")
    .mockImplementation(async (_c, limit, before, _thread, after) => {
      if (before && after) throw new Error("both");
      if (after) return stored.filter((m) => m.id > after).slice(0, limit);
      const older = before ? stored.filter((m) => m.id < before) : stored;
      return older.slice(Math.max(0, older.length - limit));
    });
}

const numbers = (t: Timeline) => t.items.map((i) => Number(i.id.slice(4)));
const live = (m: Message): ServerEvent => ({ type: "message", data: m });

afterEach(() => vi.restoreAllMocks());

describe("a timeline opened around an old message", () => {
  it("holds the page before it, it and the page after it, detached from the live end", async () => {
    const stored = Array.from({ length: 300 }, (_, i) => msg(i + 1));
    serve(stored);
    const t = new Timeline("ch_j");
    await t.loadLatest();
    expect(numbers(t).slice(0, 1)).toEqual([251]);
    expect(await t.jumpTo(stored[9], 50)).toBe(true);
    expect(numbers(t)).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
    expect(t.hasOlder).toBe(false);
    expect(t.live).toBe(false);
  });

  it("pages forward until a short page, then is live and merges what came meanwhile once", async () => {
    const stored = Array.from({ length: 300 }, (_, i) => msg(i + 1));
    serve(stored);
    const t = new Timeline("ch_j");
    await t.jumpTo(stored[99], 50);
    expect(t.live).toBe(false);
    // A live message while detached does not go after the gap.
    const late = msg(301);
    stored.push(late);
    t.handle(live(late));
    expect(t.find(late.id)).toBeUndefined();
    // A stream starting while detached is not shown after the gap either.
    t.handle({ type: "stream_start", data: { messageId: id(302), channelId: "ch_j", agentId: "agent_1" } } as ServerEvent);
    expect(t.find(id(302))).toBeUndefined();
    while (!t.live) await t.loadNewer(100);
    expect(numbers(t)).toEqual(Array.from({ length: 252 }, (_, i) => i + 50));
    // Live again: the next message appends, once.
    const next = msg(303);
    t.handle(live(next));
    t.handle(live(next));
    expect(numbers(t).slice(-2)).toEqual([301, 303]);
    expect(new Set(t.items.map((i) => i.id)).size).toBe(t.items.length);
  });

  it("merges a message held while the last page was on its way, newer than that page", async () => {
    const stored = Array.from({ length: 120 }, (_, i) => msg(i + 1));
    const spy = serve(stored);
    const t = new Timeline("ch_j");
    await t.jumpTo(stored[19], 50);
    await t.loadNewer(50);
    expect(numbers(t).at(-1)).toBe(120);
    expect(t.live).toBe(false);
    // The last page: the server read it before message 121 was stored; its event came first.
    let answer: (page: Message[]) => void = () => {};
    spy.mockImplementationOnce(() => new Promise((resolve) => (answer = resolve)));
    const last = t.loadNewer(50);
    t.handle(live(msg(121)));
    expect(t.find(id(121))).toBeUndefined();
    answer([]);
    await last;
    expect(t.live).toBe(true);
    expect(numbers(t).slice(-2)).toEqual([120, 121]);
  });

  it("a message held while detached and changed before the last page was asked for is shown changed", async () => {
    const stored = Array.from({ length: 120 }, (_, i) => msg(i + 1));
    serve(stored);
    const t = new Timeline("ch_j");
    await t.jumpTo(stored[19], 50);
    expect(t.live).toBe(false);
    // Three messages come while detached; one is deleted, one edited, one reacted to, before
    // the page that reaches the live end is asked for (and the server read it before them).
    for (const n of [121, 122, 123]) t.handle(live(msg(n)));
    t.handle({ type: "message_deleted", data: { id: id(121), channelId: "ch_j", threadId: null } });
    t.handle({ type: "message_updated", data: msg(122, { content: "fixed", editedAt: "2026-11-27T00:00:00Z" }) });
    t.handle({ type: "reaction_added", data: { messageId: id(123), channelId: "ch_j", emoji: "👍", userId: "u9" } });
    while (!t.live) await t.loadNewer(50);
    expect(numbers(t).slice(-3)).toEqual([120, 122, 123]);
    expect(t.find(id(122))!.content).toBe("fixed");
    expect(t.find(id(123))!.reactions).toEqual([{ emoji: "👍", count: 1, userIds: ["u9"] }]);
  });

  it("a message of the window deleted or edited while the window is on its way is shown so", async () => {
    const stored = Array.from({ length: 300 }, (_, i) => msg(i + 1));
    const spy = serve(stored);
    const t = new Timeline("ch_j");
    const answers: ((page: Message[]) => void)[] = [];
    spy.mockImplementation(() => new Promise((resolve) => answers.push(resolve)));
    const jump = t.jumpTo(stored[99], 50);
    t.handle({ type: "message_deleted", data: { id: id(98), channelId: "ch_j", threadId: null } });
    t.handle({ type: "message_updated", data: msg(101, { content: "fixed", editedAt: "2026-11-27T00:00:00Z" }) });
    // The server read both pages before the changes.
    answers[0](stored.slice(49, 99));
    answers[1](stored.slice(100, 150));
    await jump;
    expect(t.find(id(98))).toBeUndefined();
    expect(t.find(id(101))!.content).toBe("fixed");
    expect(t.find(id(100))).toBeDefined();
  });

  it("pages back from the window's start as from the live end", async () => {
    const stored = Array.from({ length: 300 }, (_, i) => msg(i + 1));
    serve(stored);
    const t = new Timeline("ch_j");
    await t.jumpTo(stored[199], 50);
    expect(t.hasOlder).toBe(true);
    await t.loadOlder(100);
    expect(numbers(t)[0]).toBe(50);
    expect(numbers(t).at(-1)).toBe(250);
  });

  it("a message already loaded is not fetched again", async () => {
    const stored = Array.from({ length: 80 }, (_, i) => msg(i + 1));
    const spy = serve(stored);
    const t = new Timeline("ch_j");
    await t.loadLatest();
    spy.mockClear();
    expect(await t.jumpTo(stored[70])).toBe(true);
    expect(spy).not.toHaveBeenCalled();
    expect(t.live).toBe(true);
  });

  it("near the end the window is live at once", async () => {
    const stored = Array.from({ length: 120 }, (_, i) => msg(i + 1));
    serve(stored);
    const t = new Timeline("ch_j");
    await t.jumpTo(stored[100], 50);
    expect(t.live).toBe(true);
    expect(numbers(t).at(-1)).toBe(120);
  });

  it("sending from a detached window goes back to the live end with the sent message", async () => {
    const stored = Array.from({ length: 300 }, (_, i) => msg(i + 1));
    serve(stored);
    const t = new Timeline("ch_j");
    await t.jumpTo(stored[4], 50);
    stored.push(msg(301, { userId: "user_1" }));
    t.addSent(id(301), "message 301", "text", {});
    expect(t.live).toBe(true);
    expect(numbers(t)).toEqual([301]);
    await t.loadLatest();
    expect(numbers(t)).toEqual(Array.from({ length: 50 }, (_, i) => i + 252));
  });

  it("the newest page asked for during a jump does not land over the window", async () => {
    const stored = Array.from({ length: 300 }, (_, i) => msg(i + 1));
    serve(stored);
    const t = new Timeline("ch_j");
    const jump = t.jumpTo(stored[9], 50);
    const latest = t.loadLatest();
    await Promise.all([jump, latest]);
    expect(numbers(t)[0]).toBe(1);
    expect(t.loaded).toBe(true);
    expect(t.live).toBe(false);
  });

  it("a later jump wins over an earlier one still on its way", async () => {
    const stored = Array.from({ length: 300 }, (_, i) => msg(i + 1));
    serve(stored);
    const t = new Timeline("ch_j");
    const first = t.jumpTo(stored[9], 20);
    const second = t.jumpTo(stored[149], 20);
    expect(await first).toBe(false);
    expect(await second).toBe(true);
    expect(numbers(t)[0]).toBe(130);
  });

  it("a message gone since (404) leaves the timeline at the live end with the error", async () => {
    const stored = Array.from({ length: 60 }, (_, i) => msg(i + 1));
    const spy = serve(stored);
    const t = new Timeline("ch_j");
    spy.mockRejectedValueOnce(new Error("No message has the id"));
    expect(await t.jumpTo(msg(3), 20)).toBe(false);
    await t.loadLatest();
    expect(t.live).toBe(true);
    expect(numbers(t).at(-1)).toBe(60);
  });

  it("in a thread: the window is the thread's, paged with its id", async () => {
    const root = msg(1);
    const replies = Array.from({ length: 120 }, (_, i) => msg(i + 2, { threadId: root.id }));
    const spy = serve([root, ...replies]);
    const t = new Timeline("ch_j", root.id);
    await t.jumpTo(replies[4], 50);
    expect(numbers(t).slice(0, 3)).toEqual([1, 2, 3]);
    expect(spy.mock.calls.every((c) => c[3] === root.id)).toBe(true);
  });
});
