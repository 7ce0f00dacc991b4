import { describe, expect, it } from "vitest";
import { after, counted, judged, mentionedUserIds, newer, readUpTo, titled } from "./readCounts";

const ME = "user_me";
const base = { id: "m5", userId: "user_other", type: "text", metadata: {}, threadId: null };

describe("counted: the server's rules", () => {
  it("counts others' text, images and files on the main timeline", () => {
    expect(counted(base, ME)).toEqual({ mention: false });
    expect(counted({ ...base, type: "file" }, ME)).toEqual({ mention: false });
    expect(counted({ ...base, type: "tool_call" }, ME)).toBeNull();
    expect(counted({ ...base, userId: ME }, ME)).toBeNull();
    expect(counted({ ...base, deleted: true }, ME)).toBeNull();
    expect(counted({ ...base, streaming: true }, ME)).toBeNull();
  });

  it("counts a reply in a thread only where the person takes part, or when it mentions them", () => {
    const reply = { ...base, threadId: "m1" };
    expect(counted(reply, ME)).toBeNull();
    expect(counted(reply, ME, (t) => t === "m1")).toEqual({ mention: false });
    const mention = { ...reply, metadata: { mentions: { userIds: [ME], agentIds: [] } } };
    expect(counted(mention, ME)).toEqual({ mention: true });
  });

  it("is unsure of a reply only when the page cannot tell whether the person takes part", () => {
    const reply = { ...base, threadId: "m1" };
    const unknown = () => undefined;
    expect(judged(reply, ME, unknown)).toBe("unsure");
    expect(judged(reply, ME, () => true)).toEqual({ mention: false });
    expect(judged(reply, ME, () => false)).toBeNull();
    // What counts (or not) whatever the thread is never unsure.
    expect(judged(base, ME, unknown)).toEqual({ mention: false });
    expect(judged({ ...reply, userId: ME }, ME, unknown)).toBeNull();
    expect(judged({ ...reply, type: "tool_call" }, ME, unknown)).toBeNull();
    const mention = { ...reply, metadata: { mentions: { userIds: [ME], agentIds: [] } } };
    expect(judged(mention, ME, unknown)).toEqual({ mention: true });
  });

  it("reads the mentioned people from the metadata, and nothing else", () => {
    expect(mentionedUserIds({ mentions: { userIds: ["user_a", 3], agentIds: ["agent_x"] } })).toEqual(["user_a"]);
    expect(mentionedUserIds({ mentions: "user_a" })).toEqual([]);
    expect(mentionedUserIds({})).toEqual([]);
  });
});

describe("readUpTo", () => {
  const state = { lastReadId: "m1", unreadCount: 5, mentionCount: 2 };
  const known = new Map([
    ["m2", false],
    ["m3", true],
    ["m4", false],
    ["m6", true],
  ]);

  it("uncounts the known messages up to the new marker", () => {
    expect(readUpTo(state, "m4", known)).toEqual({ lastReadId: "m4", unreadCount: 2, mentionCount: 1 });
  });

  it("never moves back, and never counts below zero", () => {
    expect(readUpTo(state, "m0", known)).toBe(state);
    expect(readUpTo({ lastReadId: null, unreadCount: 1, mentionCount: 0 }, "m9", known)).toEqual({
      lastReadId: "m9",
      unreadCount: 0,
      mentionCount: 0,
    });
  });
});

describe("markers", () => {
  it("orders ids, null before all", () => {
    expect(after("m2", "m1")).toBe(true);
    expect(after("m1", "m1")).toBe(false);
    expect(after("m1", null)).toBe(true);
  });

  it("takes the server's state only when its marker is not older", () => {
    const current = { lastReadId: "m5", unreadCount: 0, mentionCount: 0 };
    expect(newer({ ...current, lastReadId: "m4" }, current)).toBe(false);
    expect(newer({ ...current, unreadCount: 3 }, current)).toBe(true);
    expect(newer(current, undefined)).toBe(true);
    expect(newer(current, { lastReadId: null, unreadCount: 2, mentionCount: 0 })).toBe(true);
  });
});

describe("titled", () => {
  it("puts the unread count before the title while anything is unread", () => {
    expect(titled("Palaver", 0)).toBe("Palaver");
    expect(titled("#general · Palaver", 3)).toBe("(3) #general · Palaver");
    expect(titled("Palaver", 250)).toBe("(99+) Palaver");
  });
});
