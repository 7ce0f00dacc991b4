import { describe, expect, it } from "vitest";
import { actionFilter, changeLines, MOST_LINES, nodeTail } from "./audit";

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

  it("writes other values short, an empty text as such", () => {
    const long = "x".repeat(200);
    expect(changeLines({ soul: true, tools: ["a", "b"], note: long, description: "" })).toEqual([
      "soul: true",
      "tools: a, b",
      `note: ${"x".repeat(79)}…`,
      "description: (empty)",
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

describe("changeLines with names", () => {
  it("writes the ids the page knows as names, in values and lists", () => {
    const names: Record<string, string> = { user_1: "Maya", agent_1: "Researcher" };
    const name = (id: string) => names[id] ?? null;
    expect(
      changeLines({ memberIds: ["user_1", "user_9"], agentId: "agent_1", agentIds: [], n: { from: "user_1", to: null } }, name),
    ).toEqual(["memberIds: Maya, user_9", "agentId: Researcher", "agentIds: none", "n: Maya → none"]);
    expect(changeLines({ budgets: { agents: { agent_1: { monthlyTokens: 5 }, agent_2: null } } }, name)).toEqual([
      "budgets.agents.Researcher.monthlyTokens: 5",
      "budgets.agents.agent_2: none",
    ]);
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

describe("nodeTail", () => {
  it("keeps the end of a long node id, which tells nodes apart", () => {
    expect(nodeTail("node_01M8BG33JF7WZK4W2Z2VECDH4Q")).toBe("…ECDH4Q");
    expect(nodeTail("node-a")).toBe("node-a");
  });
});
