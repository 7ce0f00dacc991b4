/**
 * Monthly budgets against what was used this month (docs/SPEC.md section 13): each cap of
 * `settings.budgets` (an agent's, a guest's, the install's; tokens and cost apart) with its
 * spending from `GET /api/usage` grouped by agent and by person, the install's being their sum.
 * The server refuses a model call once spending reaches a cap; the page warns from 80%.
 */
import { formatCost, formatCount, formatDay, sumRows, tokensOf } from "./usage";
import type { UsageRow } from "./usageApi";

export interface Cap {
  monthlyTokens?: number | null;
  monthlyCost?: number | null;
}

export interface Budgets {
  agents: Record<string, Cap>;
  guests: Record<string, Cap>;
  total: Cap | null;
}

/** A patch of `settings.budgets`: an entry (or the total) set to null is removed. */
export interface BudgetsPatch {
  agents?: Record<string, Cap | null>;
  guests?: Record<string, Cap | null>;
  total?: Cap | null;
}

export type BudgetScope = "total" | "agent" | "guest";
export type BudgetKind = "tokens" | "cost";
/** Under 80%, from 80%, reached (the server refuses the next call). */
export type BudgetLevel = "ok" | "warning" | "spent";

/** When the page starts to warn. */
export const WARN_AT = 0.8;

export interface BudgetUse {
  scope: BudgetScope;
  /** The agent's or guest's id; "" for the install. */
  id: string;
  kind: BudgetKind;
  spent: number;
  cap: number;
  /** spent / cap; a cap of 0 counts as reached. */
  ratio: number;
  level: BudgetLevel;
}

export function levelOf(ratio: number): BudgetLevel {
  if (ratio >= 1) return "spent";
  return ratio >= WARN_AT ? "warning" : "ok";
}

function usesOf(scope: BudgetScope, id: string, cap: Cap | null | undefined, row: UsageRow | undefined): BudgetUse[] {
  const uses: BudgetUse[] = [];
  const caps: [BudgetKind, number | null | undefined, number][] = [
    ["tokens", cap?.monthlyTokens, row ? tokensOf(row) : 0],
    ["cost", cap?.monthlyCost, row?.cost ?? 0],
  ];
  for (const [kind, limit, spent] of caps) {
    if (limit === null || limit === undefined) continue;
    const ratio = limit > 0 ? spent / limit : 1;
    uses.push({ scope, id, kind, spent, cap: limit, ratio, level: levelOf(ratio) });
  }
  return uses;
}

/** Every cap with this month's spending: the install's first, then agents', then guests'. */
export function budgetUses(budgets: Budgets, byAgent: UsageRow[], byPerson: UsageRow[]): BudgetUse[] {
  const agents = new Map(byAgent.map((r) => [r.key, r]));
  const people = new Map(byPerson.map((r) => [r.key, r]));
  return [
    ...usesOf("total", "", budgets.total, sumRows(byAgent)),
    ...Object.entries(budgets.agents).flatMap(([id, cap]) => usesOf("agent", id, cap, agents.get(id))),
    ...Object.entries(budgets.guests).flatMap(([id, cap]) => usesOf("guest", id, cap, people.get(id))),
  ];
}

/** The caps at 80% or more, the fullest first: what the page warns about. */
export function budgetWarnings(uses: BudgetUse[]): BudgetUse[] {
  return uses.filter((u) => u.level !== "ok").sort((a, b) => b.ratio - a.ratio);
}

/** Names a warning by itself, so dismissing it lasts until it moves to a higher level. */
export function warningKey(use: BudgetUse): string {
  return `${use.scope}:${use.id}:${use.kind}:${use.level}`;
}

/** The first day of the next calendar month (UTC): when the caps start again. */
export function resetDay(now: number = Date.now()): string {
  const d = new Date(now);
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)).toISOString().slice(0, 10);
}

/** An empty `settings.budgets` (a server that sends none, or none set). */
export const NO_BUDGETS: Budgets = { agents: {}, guests: {}, total: null };

/** Whether any cap is set at all (otherwise there is nothing to watch). */
export function anyCap(budgets: Budgets): boolean {
  const set = (cap: Cap | null | undefined) =>
    cap != null && (cap.monthlyTokens != null || cap.monthlyCost != null);
  return set(budgets.total) || Object.values(budgets.agents).some(set) || Object.values(budgets.guests).some(set);
}

/** Whose budget, in words: "the whole install", "the agent Researcher", "the guest Maya". */
export function budgetOwner(use: Pick<BudgetUse, "scope">, name: string): string {
  if (use.scope === "total") return "the whole install";
  return use.scope === "agent" ? `the agent ${name}` : `the guest ${name}`;
}

/** "850 of 1,000 tokens", "8.50 of 10.00". */
export function spentOfCap(use: BudgetUse): string {
  return use.kind === "tokens"
    ? `${formatCount(use.spent)} of ${formatCount(use.cap)} tokens`
    : `${formatCost(use.spent)} of ${formatCost(use.cap)}`;
}

/** Whole percent, rounded down: 99.9% used is not shown as 100% (the tiny step keeps a ratio
 * like 1150 / 1000, which is 114.99999... in floating point, at 115). */
export function percent(use: BudgetUse): number {
  return Math.floor(use.ratio * 100 + 1e-9);
}

/** The warning as the page says it. */
export function warningText(use: BudgetUse, name: string, now: number = Date.now()): string {
  const budget = `monthly ${use.kind === "tokens" ? "token" : "cost"} budget of ${budgetOwner(use, name)}`;
  if (use.level === "spent") {
    const day = formatDay(resetDay(now), true);
    return `The ${budget} is spent (${spentOfCap(use)}): replies it covers are refused until it resets on ${day}.`;
  }
  return `${percent(use)}% of the ${budget} is used (${spentOfCap(use)}).`;
}
