import { describe, expect, it } from "vitest";
import { actionFilter, changeLines, MOST_LINES } from "./audit";

describe("changeLines", () => {
  it("says nothing for no changes", () => {
    expect(changeLines(null)).toEqual([]);
    expect(changeLines(undefined)).toEqual([]);
    expect(changeLines({})).toEqual([]);
    expect(changeLines([])).toEqual([]);
  });

  it("lists field names as they are", () => {
    expect(changeLines(["name", "soul"])).toEqual(["name", "soul"]);
  });

  it("writes a before and after pair as an arrow", () => {
    expect(changeLines({ name: { from: "Ada", to: "Grace" } })).toEqual(["name: Ada → Grace"]);
    expect(changeLines({ visibility: { before: "owner", after: "members" } })).toEqual([
      "visibility: owner → members",
    ]);
    expect(changeLines({ model: { old: null, new: "fake/x" } })).toEqual(["model: none → fake/x"]);
  });

  it("writes other values short, a changed flag as the field's name", () => {
    const long = "x".repeat(200);
    expect(changeLines({ soul: true, tools: ["a", "b"], note: long })).toEqual([
      "soul",
      'tools: ["a","b"]',
      `note: ${"x".repeat(79)}…`,
    ]);
    expect(changeLines("providers.openai")).toEqual(["providers.openai"]);
  });

  it("writes nested settings as dotted paths, a text kept by its length in characters", () => {
    expect(
      changeLines({
        limits: { messagesPerMinute: 100, messageBurst: 20 },
        budgets: { agents: { agent_1: null } },
        soul: { length: 1204 },
        key: "(changed)",
      }),
    ).toEqual([
      "limits.messagesPerMinute: 100",
      "limits.messageBurst: 20",
      "budgets.agents.agent_1: none",
      `soul: ${(1204).toLocaleString()} characters`,
      "key: (changed)",
    ]);
  });

  it("shows so many lines, then counts the rest", () => {
    const many = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`f${i}`, i]));
    const shown = changeLines(many);
    expect(shown).toHaveLength(MOST_LINES);
    expect(shown[MOST_LINES - 1]).toBe(`and ${12 - MOST_LINES + 1} more`);
  });
});

describe("actionFilter", () => {
  it.each([
    ["", ""],
    ["  ", ""],
    ["agent.create", "agent.create"],
    ["agent.", "agent."],
    [" agent ", "agent."],
    ["mcpServer", "mcpServer."],
    ["agent.cre ate", null],
    ["agent.create.x", null],
    ["a1", null],
  ])("%j filters as %j", (typed, want) => {
    expect(actionFilter(typed)).toBe(want);
  });
});
