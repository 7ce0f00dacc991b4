import { describe, expect, it } from "vitest";
import { changeLines } from "./audit";

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
});
