import { afterEach, describe, expect, it, vi } from "vitest";
import { api } from "../api";
import { applyReaction, hasReacted } from "../reactions";
import type { Message } from "../types";
import { Timeline, timelines } from "./messages.svelte";
import { session } from "./session.svelte";

let clock = 0;
function msg(id: string, fields: Partial<Message> = {}): Message {
  clock += 1;
  return {
    id,
    channelId: "ch_t",
    agentId: null,
    userId: "user_1",
    content: `text of ${id}`,
    type: "text",
    metadata: {},
    createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, clock)).toISOString(),
    threadId: null,
    editedAt: null,
    deleted: false,
    reactions: [],
    thread: null,
    ...fields,
  };
}

const ids = (t: Timeline) => t.items.map((i) => i.id);
const summary = (replyCount: number) => ({
  replyCount,
  lastReplyAt: "2026-01-01T00:00:00Z",
  participantIds: ["agent_1"],
});

describe("reactions", () => {
  it("adds, counts and removes, keeping the order emoji were first used", () => {
    let r = applyReaction([], "👍", "u1", true);
    r = applyReaction(r, "🎉", "u1", true);
    r = applyReaction(r, "👍", "u2", true);
    expect(r).toEqual([
      { emoji: "👍", count: 2, userIds: ["u1", "u2"] },
      { emoji: "🎉", count: 1, userIds: ["u1"] },
    ]);
    r = applyReaction(r, "👍", "u1", false);
    expect(r[0]).toEqual({ emoji: "👍", count: 1, userIds: ["u2"] });
    r = applyReaction(r, "🎉", "u1", false);
    expect(r.map((x) => x.emoji)).toEqual(["👍"]);
    expect(hasReacted(r, "👍", "u2")).toBe(true);
    expect(hasReacted(r, "👍", "u1")).toBe(false);
  });

  it("changes nothing for an event that repeats what is shown (the own toggle's echo)", () => {
    const r = applyReaction([], "👍", "u1", true);
    expect(applyReaction(r, "👍", "u1", true)).toBe(r);
    expect(applyReaction(r, "🎉", "u1", false)).toBe(r);
  });
});

describe("Timeline updates and deletes", () => {
  it("takes an edit in place, and a reaction event on the row", () => {
    const t = new Timeline("ch_t");
    t.merge([msg("m1"), msg("m2")]);
    const row = t.find("m1")!;
    t.handle({ type: "message_updated", data: msg("m1", { content: "fixed", editedAt: "2026-01-02T00:00:00Z" }) });
    expect(t.find("m1")).toBe(row);
    expect(row).toMatchObject({ content: "fixed", editedAt: "2026-01-02T00:00:00Z" });
    const reaction = { messageId: "m2", channelId: "ch_t", emoji: "🎉", userId: "u9" };
    t.handle({ type: "reaction_added", data: reaction });
    expect(t.find("m2")!.reactions).toEqual([{ emoji: "🎉", count: 1, userIds: ["u9"] }]);
    t.handle({ type: "reaction_removed", data: reaction });
    expect(t.find("m2")!.reactions).toEqual([]);
  });

  it("drops a deleted message, but keeps a root with replies as a tombstone until they go", () => {
    const t = new Timeline("ch_t");
    t.merge([msg("m1"), msg("m2", { thread: summary(2), reactions: [{ emoji: "👍", count: 1, userIds: ["u"] }] }), msg("m3")]);
    t.handle({ type: "message_deleted", data: { id: "m1", channelId: "ch_t", threadId: null } });
    t.handle({ type: "message_deleted", data: { id: "m2", channelId: "ch_t", threadId: null } });
    expect(ids(t)).toEqual(["m2", "m3"]);
    expect(t.find("m2")).toMatchObject({ deleted: true, content: "", reactions: [] });
    // Its last reply deleted: the root's update says it has none left, and the tombstone goes.
    t.handle({ type: "message_updated", data: msg("m2", { deleted: true, content: "", thread: null }) });
    expect(ids(t)).toEqual(["m3"]);
  });

  it("finds the person's last message for the up-arrow, passing agents and tombstones", () => {
    const t = new Timeline("ch_t");
    t.merge([msg("m1"), msg("m2", { userId: "user_2" }), msg("m3", { agentId: "a", userId: null })]);
    expect(t.lastOwn("user_1")?.id).toBe("m1");
    expect(t.lastOwn("user_3")).toBeUndefined();
  });

  it("pages back for the up-arrow when the person's last message is older than what is loaded", async () => {
    const all = [msg("m000"), ...Array.from({ length: 450 }, (_, i) => msg(`m${String(i + 1).padStart(3, "0")}`, { userId: "user_2" }))];
    const asked: (string | undefined)[] = [];
    vi.spyOn(api, "messages").mockImplementation(async (_c, limit, before) => {
      asked.push(before);
      return (before ? all.filter((m) => m.id < before) : all).slice(-limit);
    });
    const t = new Timeline("ch_t");
    await t.loadLatest();
    const scrolling = t.loadOlder(); // a scroll's page on its way: waited for, not skipped
    const found = await t.findLastOwn("user_1");
    await scrolling;
    expect(found?.id).toBe("m000");
    expect(asked).toEqual([undefined, "m401", "m351", "m151"]);
    expect(await t.findLastOwn("user_3")).toBeUndefined();
    vi.restoreAllMocks();
  });

  it("notices on catch-up what was deleted while the socket was down", async () => {
    const t = new Timeline("ch_t");
    t.merge([msg("m1"), msg("m2"), msg("m3")]);
    (t as unknown as { loaded: boolean }).loaded = true;
    const spy = vi.spyOn(api, "messages").mockResolvedValue([msg("m1"), msg("m3"), msg("m4")]);
    await t.catchUp();
    expect(ids(t)).toEqual(["m1", "m3", "m4"]);
    spy.mockRestore();
  });

  it("keeps what the socket brought while the catch-up's pages were on their way", async () => {
    const t = new Timeline("ch_t");
    t.merge([msg("m1"), msg("m2")]);
    (t as unknown as { loaded: boolean }).loaded = true;
    vi.spyOn(api, "messages").mockImplementation(async () => {
      t.merge([msg("m9")]);
      return [msg("m1"), msg("m2")];
    });
    await t.catchUp();
    expect(ids(t)).toEqual(["m1", "m2", "m9"]);
    vi.restoreAllMocks();
  });

  it("does not let a page asked for before a live change undo it", async () => {
    const t = new Timeline("ch_t");
    t.merge([msg("m1", { content: "old" })]);
    (t as unknown as { loaded: boolean }).loaded = true;
    vi.spyOn(api, "messages").mockImplementation(async () => {
      // While the page is on its way, the socket brings an edit and a reaction.
      t.handle({ type: "message_updated", data: msg("m1", { content: "new", editedAt: "2026-11-26T00:00:00Z" }) });
      t.handle({ type: "reaction_added", data: { messageId: "m1", channelId: "ch_t", emoji: "👍", userId: "user_2" } });
      return [msg("m1", { content: "old" })];
    });
    await t.catchUp();
    expect(t.find("m1")!.content).toBe("new");
    expect(t.find("m1")!.reactions).toEqual([{ emoji: "👍", count: 1, userIds: ["user_2"] }]);
    // A page asked for after the change settles as usual.
    vi.spyOn(api, "messages").mockResolvedValue([msg("m1", { content: "newer" })]);
    await t.catchUp();
    expect(t.find("m1")!.content).toBe("newer");
    vi.restoreAllMocks();
  });
  it("does not let a page asked for before a delete bring the message back", async () => {
    const t = new Timeline("ch_t");
    t.merge([msg("m1"), msg("m2", { thread: summary(1) }), msg("m3"), msg("m5", { thread: summary(1) })]);
    (t as unknown as { loaded: boolean }).loaded = true;
    vi.spyOn(api, "messages").mockImplementation(async () => {
      // While the page is on its way, the socket deletes a message, a root with a reply, one
      // not loaded yet, and takes a tombstone's last reply away.
      for (const id of ["m1", "m2", "m4", "m5"]) {
        t.handle({ type: "message_deleted", data: { id, channelId: "ch_t", threadId: null } });
      }
      t.handle({ type: "message_updated", data: msg("m5", { deleted: true, content: "", thread: null }) });
      return [msg("m1"), msg("m2", { thread: summary(1) }), msg("m3"), msg("m4"), msg("m5", { thread: summary(1) })];
    });
    await t.catchUp();
    expect(ids(t)).toEqual(["m2", "m3"]);
    expect(t.find("m2")).toMatchObject({ deleted: true, content: "" });
    vi.restoreAllMocks();
  });

  it("gives a message that a page brings late the edits and reactions that came before it", async () => {
    const t = new Timeline("ch_t");
    vi.spyOn(api, "messages").mockImplementation(async () => {
      t.handle({ type: "message_updated", data: msg("m1", { content: "new", editedAt: "2026-11-26T00:00:00Z" }) });
      const reaction = { messageId: "m1", channelId: "ch_t", emoji: "👍", userId: "user_2" };
      t.handle({ type: "reaction_added", data: reaction });
      t.handle({ type: "reaction_added", data: { ...reaction, emoji: "🎉" } });
      t.handle({ type: "reaction_removed", data: { ...reaction, emoji: "🎉" } });
      // The server read the page after the first reaction: it is not counted twice.
      return [msg("m1", { content: "old", reactions: [{ emoji: "👍", count: 1, userIds: ["user_2"] }] })];
    });
    await t.loadLatest();
    expect(t.find("m1")).toMatchObject({ content: "new", editedAt: "2026-11-26T00:00:00Z" });
    expect(t.find("m1")!.reactions).toEqual([{ emoji: "👍", count: 1, userIds: ["user_2"] }]);
    vi.restoreAllMocks();
  });

  it("gives a late page's message the last of many updates, and a reaction made after it", async () => {
    const t = new Timeline("ch_t");
    vi.spyOn(api, "messages").mockImplementation(async () => {
      for (let n = 1; n <= 600; n++) {
        t.handle({ type: "message_updated", data: msg("r1", { content: `root`, thread: summary(n) }) });
      }
      for (let n = 0; n < 100; n++) {
        const reaction = { messageId: "r1", channelId: "ch_t", emoji: "👀", userId: "u9" };
        t.handle({ type: "reaction_added", data: reaction });
        t.handle({ type: "reaction_removed", data: reaction });
      }
      t.handle({ type: "reaction_added", data: { messageId: "r1", channelId: "ch_t", emoji: "👀", userId: "u9" } });
      return [msg("r1", { content: "root", thread: summary(0) })];
    });
    await t.loadLatest();
    expect(t.find("r1")!.thread?.replyCount).toBe(600);
    expect(t.find("r1")!.reactions).toEqual([{ emoji: "👀", count: 1, userIds: ["u9"] }]);
    // What is kept of it is its last update and the reaction since, not every update.
    expect((t as unknown as { recent: Map<string, unknown[]> }).recent.get("r1")).toHaveLength(2);
    vi.restoreAllMocks();
  });

  it("keeps a thread's deleted root a tombstone when an earlier page lands after the delete", async () => {
    const t = new Timeline("ch_t", "r1");
    vi.spyOn(api, "messages").mockImplementation(async () => {
      t.handle({ type: "message_deleted", data: { id: "r1", channelId: "ch_t", threadId: null } });
      return [msg("r1", { thread: summary(1) }), msg("r2", { threadId: "r1" })];
    });
    await t.loadLatest();
    expect(ids(t)).toEqual(["r1", "r2"]);
    expect(t.root).toMatchObject({ deleted: true, content: "" });
    vi.restoreAllMocks();
  });
});

describe("thread routing", () => {
  afterEach(() => {
    vi.restoreAllMocks();
    timelines.reset();
  });

  it("keeps thread replies out of the channel and in their thread", () => {
    const channel = new Timeline("ch_t");
    const thread = new Timeline("ch_t", "m1");
    const reply = msg("m2", { threadId: "m1" });
    for (const t of [channel, thread]) t.merge([msg("m1"), reply, msg("m3")]);
    expect(ids(channel)).toEqual(["m1", "m3"]);
    expect(ids(thread)).toEqual(["m1", "m2"]);
  });

  it("sends live replies and streams of a thread to the thread, and the root's summary to both", () => {
    const channel = timelines.get("ch_t");
    channel.merge([msg("m1")]);
    const thread = timelines.thread("ch_t", "m1");
    thread.merge([msg("m1")]);
    timelines.route({ type: "message", data: msg("m2", { threadId: "m1" }) });
    timelines.route({
      type: "stream_start",
      data: { messageId: "m3", channelId: "ch_t", agentId: "agent_1", threadId: "m1" },
    });
    timelines.route({ type: "stream_chunk", data: { messageId: "m3", content: "hi", seq: 1 } });
    thread.flush();
    timelines.route({ type: "message_updated", data: msg("m1", { thread: summary(2) }) });
    expect(ids(channel)).toEqual(["m1"]);
    expect(channel.find("m1")!.thread?.replyCount).toBe(2);
    expect(ids(thread)).toEqual(["m1", "m2", "m3"]);
    expect(thread.find("m3")).toMatchObject({ content: "hi", streaming: true, threadId: "m1" });
    expect(thread.root?.thread?.replyCount).toBe(2);
  });

  it("makes an open thread catch up when its channel's subscription is confirmed again", async () => {
    const thread = timelines.thread("ch_t", "m1");
    thread.merge([msg("m1")]);
    (thread as unknown as { loaded: boolean }).loaded = true;
    const spy = vi.spyOn(api, "messages").mockResolvedValue([msg("m1"), msg("m5", { threadId: "m1" })]);
    timelines.route({ type: "subscribed", data: { channelId: "ch_t" } });
    await vi.waitFor(() => expect(ids(thread)).toEqual(["m1", "m5"]));
    expect(spy).toHaveBeenCalledWith("ch_t", 200, undefined, "m1");
  });

  it("takes the answer to an edit without undoing a reaction that came while it was on its way", async () => {
    const channel = timelines.get("ch_t");
    channel.merge([msg("m1", { content: "typo" })]);
    const edited = msg("m1", { content: "fixed", editedAt: "2026-11-27T00:00:00Z" });
    vi.spyOn(api, "editMessage").mockImplementation(async () => {
      timelines.route({
        type: "reaction_added",
        data: { messageId: "m1", channelId: "ch_t", emoji: "👍", userId: "user_2" },
      });
      return edited;
    });
    await timelines.edit("ch_t", "m1", "fixed");
    expect(channel.find("m1")).toMatchObject({ content: "fixed", editedAt: "2026-11-27T00:00:00Z" });
    expect(channel.find("m1")!.reactions).toEqual([{ emoji: "👍", count: 1, userIds: ["user_2"] }]);
    // With nothing in between, the answer settles the row whole.
    vi.spyOn(api, "editMessage").mockResolvedValue(msg("m1", { content: "again", editedAt: "2026-11-27T00:01:00Z" }));
    await timelines.edit("ch_t", "m1", "again");
    expect(channel.find("m1")).toMatchObject({ content: "again", reactions: [] });
  });

  it("toggles the person's reaction at once and takes it back when the server refuses", async () => {
    session.user = { id: "user_1", name: "Me", role: "owner", createdAt: "" };
    const channel = timelines.get("ch_t");
    channel.merge([msg("m1")]);
    vi.spyOn(api, "react").mockResolvedValue({ ok: true });
    await timelines.toggleReaction("ch_t", "m1", "👍", true);
    expect(channel.find("m1")!.reactions).toEqual([{ emoji: "👍", count: 1, userIds: ["user_1"] }]);
    // Its echo from the socket changes nothing.
    timelines.route({
      type: "reaction_added",
      data: { messageId: "m1", channelId: "ch_t", emoji: "👍", userId: "user_1" },
    });
    expect(channel.find("m1")!.reactions[0].count).toBe(1);
    vi.spyOn(api, "unreact").mockRejectedValue(new Error("no"));
    await expect(timelines.toggleReaction("ch_t", "m1", "👍", false)).rejects.toThrow("no");
    expect(channel.find("m1")!.reactions[0].count).toBe(1);
    session.user = null;
  });
});
