import { describe, expect, it } from "vitest";
import {
  fillDays,
  formatCost,
  isDay,
  largest,
  OTHERS,
  niceTicks,
  pickOf,
  rangeDays,
  rangeOf,
  rangeProblem,
  stackDays,
  sumRows,
  tokensOf,
  totalsByDay,
  totalsByKey,
  usageCsv,
} from "./usage";
import { toCsv } from "./csv";
import type { UsageRow } from "./usageApi";

const at = (iso: string) => Date.parse(iso);

function row(key: string, input = 0, output = 0, cost = 0): UsageRow {
  return { key, inputTokens: input, outputTokens: output, cachedTokens: 0, cost, calls: 1, unpricedCalls: 0 };
}

describe("ranges", () => {
  it("picks this month, last month and the last 30 days in UTC days", () => {
    // 00:30 on 1 March in UTC is still February in New York: the days are UTC's.
    const now = at("2024-03-01T00:30:00Z");
    expect(rangeOf("thisMonth", now)).toEqual({ from: "2024-03-01", to: "2024-03-01" });
    expect(rangeOf("lastMonth", now)).toEqual({ from: "2024-02-01", to: "2024-02-29" });
    expect(rangeOf("last30", now)).toEqual({ from: "2024-02-01", to: "2024-03-01" });
    expect(rangeDays(rangeOf("last30", now))).toBe(30);
  });

  it("takes last month across a new year", () => {
    expect(rangeOf("lastMonth", at("2026-01-15T12:00:00Z"))).toEqual({ from: "2025-12-01", to: "2025-12-31" });
  });

  it("knows which quick pick a range is", () => {
    const now = at("2026-11-26T10:00:00Z");
    expect(pickOf({ from: "2026-11-01", to: "2026-11-26" }, now)).toBe("thisMonth");
    expect(pickOf({ from: "2026-10-01", to: "2026-10-31" }, now)).toBe("lastMonth");
    expect(pickOf({ from: "2026-10-02", to: "2026-10-31" }, now)).toBeNull();
  });

  it("refuses days that are not real, a range backwards and one over a year", () => {
    expect(isDay("2026-02-29")).toBe(false);
    expect(isDay("2024-02-29")).toBe(true);
    expect(isDay("")).toBe(false);
    expect(rangeProblem({ from: "", to: "2026-01-01" })).toBe("Pick both days.");
    expect(rangeProblem({ from: "2026-02-01", to: "2026-01-01" })).toMatch(/before/);
    expect(rangeProblem({ from: "2024-01-01", to: "2025-01-01" })).toMatch(/at most 366/);
    expect(rangeProblem({ from: "2024-01-02", to: "2025-01-01" })).toBeNull();
  });
});

describe("fillDays", () => {
  it("gives every day of the range in order, zeros where the server sent none", () => {
    const days = fillDays([row("2026-11-03", 5, 1), row("2026-11-01", 2)], { from: "2026-11-01", to: "2026-11-04" });
    expect(days.map((d) => [d.key, tokensOf(d)])).toEqual([
      ["2026-11-01", 2],
      ["2026-11-02", 0],
      ["2026-11-03", 6],
      ["2026-11-04", 0],
    ]);
  });

  it("crosses a month's end and holds nothing for a range backwards", () => {
    expect(fillDays([], { from: "2026-02-27", to: "2026-03-02" }).map((d) => d.key)).toEqual([
      "2026-02-27",
      "2026-02-28",
      "2026-03-01",
      "2026-03-02",
    ]);
    expect(fillDays([], { from: "2026-03-02", to: "2026-03-01" })).toEqual([]);
  });
});

function perDay(day: string, key: string, input: number, output = 0, cost = 0): UsageRow {
  return { ...row(key, input, output, cost), day };
}

describe("each day split by key", () => {
  const range = { from: "2026-11-01", to: "2026-11-03" };

  it("sums the rows of a key over the days, and of a day over the keys, as groupBy alone would", () => {
    const rows = [
      perDay("2026-11-01", "agent_b", 10, 1, 0.5),
      perDay("2026-11-01", "agent_a", 5),
      perDay("2026-11-03", "agent_b", 20, 2, 0.25),
    ];
    expect(totalsByKey(rows).map((r) => [r.key, tokensOf(r), r.cost, r.calls])).toEqual([
      ["agent_a", 5, 0, 1],
      ["agent_b", 33, 0.75, 2],
    ]);
    expect(totalsByDay(rows).map((r) => [r.key, tokensOf(r), r.calls])).toEqual([
      ["2026-11-01", 16, 2],
      ["2026-11-03", 22, 1],
    ]);
    expect(totalsByDay(rows)[0]).not.toHaveProperty("day");
  });

  it("gives each key with use a series, the most tokens first, and every day of the range", () => {
    const stacked = stackDays(
      [perDay("2026-11-01", "small", 1), perDay("2026-11-01", "big", 5), perDay("2026-11-03", "small", 2)],
      range,
    );
    expect(stacked.series).toEqual(["big", "small"]);
    expect(stacked.days.map((d) => [d.day, d.parts.map(tokensOf)])).toEqual([
      ["2026-11-01", [5, 1]],
      ["2026-11-02", [0, 0]],
      ["2026-11-03", [0, 2]],
    ]);
    expect(stacked.days[2].parts.map((p) => p.key)).toEqual(["big", "small"]);
  });

  it("folds the keys past the largest few into Others, on the days they had use", () => {
    const rows = ["a", "b", "c", "d"].map((key, i) => perDay("2026-11-02", key, 100 - i * 10, 0, i));
    rows.push(perDay("2026-11-03", "d", 5, 0, 1));
    const stacked = stackDays(rows, range, 2);
    expect(stacked.series).toEqual(["a", "b", OTHERS]);
    expect(stacked.days[1].parts.map(tokensOf)).toEqual([100, 90, 80 + 70]);
    expect(stacked.days[1].parts[2].cost).toBe(2 + 3);
    expect(stacked.days[2].parts.map(tokensOf)).toEqual([0, 0, 5]);
  });

  it("has no Others when the keys fit, ranks a tie by cost then by key, and counts '' as a key", () => {
    const rows = [perDay("2026-11-01", "z", 10, 0, 0), perDay("2026-11-01", "y", 10, 0, 1), perDay("2026-11-01", "", 10)];
    expect(stackDays(rows, range, 3).series).toEqual(["y", "", "z"]);
  });

  it("holds no series for a range without use, and zeros for each of its days", () => {
    const stacked = stackDays([], range);
    expect(stacked.series).toEqual([]);
    expect(stacked.days.map((d) => [d.day, d.parts])).toEqual([
      ["2026-11-01", []],
      ["2026-11-02", []],
      ["2026-11-03", []],
    ]);
  });

  it("finds the largest row by a measure, none when all are zero", () => {
    const rows = [row("a", 1, 0, 0.5), row("b", 9, 0, 0)];
    expect(largest(rows, tokensOf)?.key).toBe("b");
    expect(largest(rows, (r) => r.cost)?.key).toBe("a");
    expect(largest([row("c")], tokensOf)).toBeNull();
  });
});

describe("sums and formats", () => {
  it("sums every field", () => {
    const total = sumRows([row("a", 1, 2, 0.5), { ...row("b", 10, 20, 0.25), unpricedCalls: 1, cachedTokens: 4 }]);
    expect(total).toEqual({
      key: "",
      inputTokens: 11,
      outputTokens: 22,
      cachedTokens: 4,
      cost: 0.75,
      calls: 2,
      unpricedCalls: 1,
    });
  });

  it.each([
    [0, "0.00"],
    [0.00004, "< 0.0001"],
    [0.00036, "0.0004"],
    [0.5, "0.50"],
    [12.345, "12.35"],
    [1234.5, "1,234.50"],
  ])("a cost of %d reads %s", (n, want) => {
    expect(formatCost(n)).toBe(want);
  });
});

describe("niceTicks", () => {
  it.each([
    [0, true, [0, 1]],
    [7, true, [0, 2, 4, 6, 8]],
    [1000, true, [0, 250, 500, 750, 1000]],
    [1001, true, [0, 500, 1000, 1500]],
    [0.03, false, [0, 0.01, 0.02, 0.03]],
    [3, true, [0, 1, 2, 3]],
  ])("an axis up to %d", (max, integers, want) => {
    expect(niceTicks(max, 4, integers)).toEqual(want);
  });
});

describe("usageCsv", () => {
  it("puts an id beside each name, and numbers as they came", () => {
    const rows = [{ ...row("agent_1", 10, 5, 0.000123), name: 'Ada, "the first"' }];
    expect(toCsv(usageCsv("Agent", true, rows))).toBe(
      "Agent ID,Agent,Input tokens,Output tokens,Cached tokens,Total tokens,Cost,Calls,Unpriced calls\r\n" +
        'agent_1,"Ada, ""the first""",10,5,0,15,0.000123,1,0\r\n',
    );
  });

  it("writes a day or a model as its key alone", () => {
    const [head, first] = usageCsv("Day", false, [{ ...row("2026-11-03", 1, 2), name: "3 Nov 2026" }]);
    expect(head[0]).toBe("Day");
    expect(first.slice(0, 2)).toEqual(["2026-11-03", 1]);
  });
});
