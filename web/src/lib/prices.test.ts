import { describe, expect, it } from "vitest";
import { modelChoices, priceErrorOf, pricesPatch, rowProblems, rowsOf, type PriceRow } from "./prices";

const saved = {
  "openai/gpt-4.1": { input: 2, output: 8, cachedInput: 0.5 },
  "anthropic/claude": { input: 3, output: 15, cachedInput: null },
};

function newRow(id: number, model: string, input = 1, output = 2): PriceRow {
  return { id, model, input, output, cachedInput: null, saved: false };
}

describe("prices", () => {
  it("lists the saved prices by model", () => {
    expect(rowsOf(saved).map((r) => [r.model, r.input, r.output, r.cachedInput, r.saved])).toEqual([
      ["anthropic/claude", 3, 15, null, true],
      ["openai/gpt-4.1", 2, 8, 0.5, true],
    ]);
  });

  it("sends only what changed, a new model, and null for a model taken out", () => {
    const rows = rowsOf(saved);
    rows[1].cachedInput = null;
    rows.splice(0, 1);
    rows.push(newRow(7, " fake/gpt-test ", 3, 15));
    expect(pricesPatch(saved, rows)).toEqual({
      "openai/gpt-4.1": { input: 2, output: 8, cachedInput: null },
      "fake/gpt-test": { input: 3, output: 15, cachedInput: null },
      "anthropic/claude": null,
    });
    expect(pricesPatch(saved, rowsOf(saved))).toEqual({});
  });

  it("refuses a new model not named as agents name them, and one priced twice", () => {
    const rows = [...rowsOf(saved), newRow(5, "gpt-4"), newRow(6, "openai/gpt-4.1"), newRow(8, "x/y")];
    const problems = rowProblems(rows);
    expect(problems.get(5)?.field).toBe("model");
    expect(problems.get(6)).toEqual({ field: "model", text: "This model has a price already." });
    expect([...problems.keys()]).toEqual([5, 6]);
  });

  it("finds the field a server's refusal names, for a model with dots in its name", () => {
    const text = "Invalid setting 'prices.openai/gpt-4.1.cachedInput': Input should be less than or equal to 1000000.";
    expect(priceErrorOf("prices.openai/gpt-4.1.cachedInput", text, ["openai/gpt-4", "openai/gpt-4.1"])).toEqual({
      model: "openai/gpt-4.1",
      field: "cachedInput",
      text,
    });
    expect(priceErrorOf("prices.a/b", "Input should be a valid dictionary.", ["a/b"])?.field).toBe("model");
    expect(priceErrorOf("limits.messageBurst", "too big.", ["a/b"])).toBeNull();
    expect(priceErrorOf(null, "Invalid setting 'prices.a/b.input': no.", ["a/b"])).toBeNull();
  });

  it("offers each known model not yet priced once, in order", () => {
    expect(modelChoices(["b/x", "a/y", "b/x", "", "c/z"], ["c/z"])).toEqual(["a/y", "b/x"]);
  });
});
