import { describe, expect, it } from "vitest";
import shared from "../../../tests/agents/mention_cases.json";
import { candidates, fold, mentionAt, mentioned } from "./mentions";
import type { Agent } from "./types";

const NAMES: Record<string, string> = shared.agents;

function agent(key: string): Agent {
  return { id: `agent_${key}`, name: NAMES[key] } as Agent;
}

describe("mentioned: the server's table (tests/agents/mention_cases.json)", () => {
  it.each(shared.cases.map((c) => [JSON.stringify(c.text), c] as const))("%s", (_, c) => {
    const members = c.members.map(agent);
    const found = mentioned(c.text, members).map((a) => a.id.replace(/^agent_/, ""));
    expect(found).toEqual(c.want);
  });
});

describe("fold", () => {
  it("folds like Python's casefold for names", () => {
    expect(fold("Straße")).toBe("strasse");
    expect(fold("ΣΟΦΟΣ")).toBe(fold("σοφοσ"));
  });
});

describe("mentionAt", () => {
  it("finds the mention being typed at the caret", () => {
    expect(mentionAt("hi @An", 6)).toEqual({ start: 3, text: "An" });
    expect(mentionAt("@", 1)).toEqual({ start: 0, text: "" });
  });

  it("is not a mention after a word character, across a line, or far from the @", () => {
    expect(mentionAt("mail@An", 7)).toBeNull();
    expect(mentionAt("@An\nx", 5)).toBeNull();
    expect(mentionAt(`@${"a".repeat(65)}`, 66)).toBeNull();
    expect(mentionAt("no at", 5)).toBeNull();
  });
});

describe("candidates", () => {
  it("offers names starting with what is typed, the exact one first", () => {
    const all = ["ann", "annie", "code", "reviewer"].map(agent);
    expect(candidates(all, "an").map((a) => a.name)).toEqual(["Ann", "Annie"]);
    expect(candidates(all, "ANNIE").map((a) => a.name)).toEqual(["Annie"]);
    expect(candidates(all, "code r").map((a) => a.name)).toEqual(["Code Reviewer"]);
    expect(candidates(all, "agent_co").map((a) => a.name)).toEqual(["Code"]);
  });
});

describe("people and agents together", () => {
  const people = [
    { id: "user_1", name: "Ada Lovelace" },
    { id: "user_2", name: "Owner" },
  ];
  const agents = [{ id: "agent_1", name: "Ada" }];

  it("offers people as well as agents", () => {
    expect(candidates([...agents, ...people], "ad").map((c) => c.id)).toEqual(["agent_1", "user_1"]);
    expect(candidates([...agents, ...people], "ow").map((c) => c.id)).toEqual(["user_2"]);
  });

  it("takes the longest name whoever bears it, and ids of people", () => {
    expect(mentioned("@Ada Lovelace hi", [...agents, ...people]).map((c) => c.id)).toEqual(["user_1"]);
    expect(mentioned("@Ada hi @user_2", [...agents, ...people]).map((c) => c.id)).toEqual(["agent_1", "user_2"]);
  });
});
