import { describe, expect, it } from "vitest";
import {
  anyCap,
  budgetUses,
  budgetWarnings,
  levelOf,
  NO_BUDGETS,
  percent,
  resetDay,
  warningKey,
  warningText,
  type Budgets,
} from "./budgets";
import { formatDay } from "./usage";
import type { UsageRow } from "./usageApi";

function row(key: string, input: number, output: number, cost = 0): UsageRow {
  return { key, inputTokens: input, outputTokens: output, cachedTokens: 0, cost, calls: 1, unpricedCalls: 0 };
}

const byAgent = [row("agent_a", 700, 100, 4), row("agent_b", 100, 100, 6)];
const byPerson = [row("user_g", 500, 100, 2), row("", 400, 200, 8)];

describe("budgetUses", () => {
  it("measures each cap against this month: tokens are input plus output, the total is every agent's", () => {
    const budgets: Budgets = {
      agents: { agent_a: { monthlyTokens: 1000 }, agent_gone: { monthlyCost: 5 } },
      guests: { user_g: { monthlyTokens: 600, monthlyCost: null } },
      total: { monthlyTokens: 5000, monthlyCost: 10 },
    };
    const uses = budgetUses(budgets, byAgent, byPerson);
    expect(uses.map((u) => [u.scope, u.id, u.kind, u.spent, u.cap, u.level])).toEqual([
      ["total", "", "tokens", 1000, 5000, "ok"],
      ["total", "", "cost", 10, 10, "spent"],
      ["agent", "agent_a", "tokens", 800, 1000, "warning"],
      ["agent", "agent_gone", "cost", 0, 5, "ok"],
      ["guest", "user_g", "tokens", 600, 600, "spent"],
    ]);
  });

  it("takes a cap of nothing as reached", () => {
    const uses = budgetUses({ ...NO_BUDGETS, total: { monthlyCost: 0 } }, [], []);
    expect(uses[0].level).toBe("spent");
  });

  it("warns from 80%, fullest first", () => {
    expect(levelOf(0.799)).toBe("ok");
    expect(levelOf(0.8)).toBe("warning");
    expect(levelOf(1)).toBe("spent");
    const uses = budgetUses(
      { agents: { agent_a: { monthlyTokens: 1000 }, agent_b: { monthlyTokens: 210 } }, guests: {}, total: null },
      byAgent,
      byPerson,
    );
    expect(budgetWarnings(uses).map((u) => u.id)).toEqual(["agent_b", "agent_a"]);
  });

  it("knows when nothing is capped", () => {
    expect(anyCap(NO_BUDGETS)).toBe(false);
    expect(anyCap({ agents: { a: {} }, guests: { g: { monthlyTokens: null } }, total: null })).toBe(false);
    expect(anyCap({ agents: {}, guests: {}, total: { monthlyCost: 0 } })).toBe(true);
  });
});

describe("warning words", () => {
  const now = Date.parse("2026-11-26T10:00:00Z");

  it("says how much of whose budget is used, and when a spent one resets", () => {
    const [total, agent] = budgetUses(
      { agents: { agent_a: { monthlyTokens: 1000 } }, guests: {}, total: { monthlyCost: 9.5 } },
      byAgent,
      [],
    );
    expect(warningText(agent, "Researcher", now)).toBe(
      "80% of the monthly token budget of the agent Researcher is used (800 of 1,000 tokens).",
    );
    expect(warningText(total, "", now)).toBe(
      "The monthly cost budget of the whole install is spent (10.00 of 9.50): replies it covers are refused " +
        `until it resets on ${formatDay("2026-12-01", true)}.`,
    );
    expect(resetDay(Date.parse("2026-12-31T23:59:00Z"))).toBe("2027-01-01");
  });

  it("rounds down, so 99.9% is not 100%", () => {
    const [use] = budgetUses({ ...NO_BUDGETS, total: { monthlyTokens: 1001 } }, [row("a", 1000, 0)], []);
    expect(warningText(use, "", now)).toMatch(/^99% /);
    const [over] = budgetUses({ ...NO_BUDGETS, total: { monthlyTokens: 1000 } }, [row("a", 1150, 0)], []);
    expect(percent(over)).toBe(115);
  });

  it("keys a warning by its level, so a dismissed one comes back when spent", () => {
    const budgets = { ...NO_BUDGETS, total: { monthlyTokens: 1000 } };
    const before = budgetUses(budgets, [row("a", 850, 0)], [])[0];
    const after = budgetUses(budgets, [row("a", 1000, 0)], [])[0];
    expect(warningKey(before)).not.toBe(warningKey(after));
  });
});
