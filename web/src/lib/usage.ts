/**
 * The usage screen's rules: date ranges in UTC days (the ledger's days), the days of a range
 * filled in for the chart, each day split into the largest keys and "Others", sums, number
 * formats and the chart's axis.
 */
import type { CsvValue } from "./csv";
import type { UsageRow } from "./usageApi";

export interface DayRange {
  from: string;
  to: string;
}

/** A report row with what its key is, for people: an agent's or person's name, a day. */
export interface NamedRow extends UsageRow {
  name: string;
}

export type RangePick = "thisMonth" | "lastMonth" | "last30";

/** The longest range the screen asks for: a year of days is at most 366 bars. */
export const MAX_RANGE_DAYS = 366;

const DAY_MS = 86_400_000;

/** A day (UTC) as the API writes it. */
export function isoDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

function dayMs(day: string): number {
  return Date.parse(`${day}T00:00:00Z`);
}

/** Whether `day` is a real `YYYY-MM-DD` day. */
export function isDay(day: string): boolean {
  return /^\d{4}-\d{2}-\d{2}$/.test(day) && !Number.isNaN(dayMs(day)) && isoDay(dayMs(day)) === day;
}

/** The quick picks, as of `now`: this calendar month so far, the last one whole, the last 30
 * days with today. Calendar months are UTC, as budgets are. */
export function rangeOf(pick: RangePick, now: number = Date.now()): DayRange {
  const today = new Date(now);
  const year = today.getUTCFullYear();
  const month = today.getUTCMonth();
  if (pick === "thisMonth") return { from: isoDay(Date.UTC(year, month, 1)), to: isoDay(now) };
  if (pick === "lastMonth") {
    return { from: isoDay(Date.UTC(year, month - 1, 1)), to: isoDay(Date.UTC(year, month, 0)) };
  }
  return { from: isoDay(now - 29 * DAY_MS), to: isoDay(now) };
}

/** The quick pick a range is, if any (so the picker shows it pressed). */
export function pickOf(range: DayRange, now: number = Date.now()): RangePick | null {
  for (const pick of ["thisMonth", "lastMonth", "last30"] as const) {
    const r = rangeOf(pick, now);
    if (r.from === range.from && r.to === range.to) return pick;
  }
  return null;
}

/** How many days the range holds, both ends included (0 when it ends before it starts). */
export function rangeDays(range: DayRange): number {
  return Math.max(0, Math.round((dayMs(range.to) - dayMs(range.from)) / DAY_MS) + 1);
}

/** What is wrong with a range the owner typed, or null. */
export function rangeProblem(range: DayRange): string | null {
  if (!isDay(range.from) || !isDay(range.to)) return "Pick both days.";
  if (range.to < range.from) return "The last day comes before the first.";
  if (rangeDays(range) > MAX_RANGE_DAYS) return `Pick at most ${MAX_RANGE_DAYS} days.`;
  return null;
}

const ZERO: Omit<UsageRow, "key"> = {
  inputTokens: 0,
  outputTokens: 0,
  cachedTokens: 0,
  cost: 0,
  calls: 0,
  unpricedCalls: 0,
};

/** Every day of the range, in order, with the server's sums or zeros (the API leaves out days
 * without a call). */
export function fillDays(rows: UsageRow[], range: DayRange): UsageRow[] {
  const byDay = new Map(rows.map((r) => [r.key, r]));
  const out: UsageRow[] = [];
  const last = dayMs(range.to);
  for (let ms = dayMs(range.from); ms <= last && out.length < MAX_RANGE_DAYS; ms += DAY_MS) {
    const key = isoDay(ms);
    out.push(byDay.get(key) ?? { key, ...ZERO });
  }
  return out;
}

/** What the charts split each day by. */
export type Split = "agent" | "person" | "model";

/** How many keys the charts show by their own colour; the rest are one "Others". */
export const TOP_KEYS = 6;

/** The series key of "Others": it starts with a NUL, which no id or model name holds. */
export const OTHERS = "\u0000others";

/** One day of the charts: the sums of each series that day, in the series' order. */
export interface DayStack {
  day: string;
  parts: UsageRow[];
}

/** A split of the range: its series (the largest keys first, then `OTHERS` if any rest) and
 * every day of the range. */
export interface Stacked {
  series: string[];
  days: DayStack[];
}

function sumBy(rows: UsageRow[], keyOf: (r: UsageRow) => string): UsageRow[] {
  const sums = new Map<string, UsageRow[]>();
  for (const r of rows) {
    const key = keyOf(r);
    const list = sums.get(key);
    if (list) list.push(r);
    else sums.set(key, [r]);
  }
  return [...sums.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([key, list]) => sumRows(list, key));
}

/** `per=day` rows summed over the days: what `groupBy` alone answers (in key order). */
export function totalsByKey(perDay: UsageRow[]): UsageRow[] {
  return sumBy(perDay, (r) => r.key);
}

/** `per=day` rows summed over the keys: what `groupBy=day` answers (days with use, in order). */
export function totalsByDay(perDay: UsageRow[]): UsageRow[] {
  return sumBy(
    perDay.filter((r) => r.day !== undefined),
    (r) => r.day ?? "",
  );
}

/** The row with the most of `value` (ties to the first), or null when none has any. */
export function largest(rows: UsageRow[], value: (r: UsageRow) => number): UsageRow | null {
  const top = rows.reduce<UsageRow | null>((best, r) => (best === null || value(r) > value(best) ? r : best), null);
  return top && value(top) > 0 ? top : null;
}

/** Each day of the range split by key: the `top` keys with the most tokens over the range
 * (then the most cost, then by key) each a series, the rest summed as `OTHERS`; days and
 * series without use are zeros. Both charts take the same series, so a key has one colour. */
export function stackDays(perDay: UsageRow[], range: DayRange, top = TOP_KEYS): Stacked {
  const ranked = totalsByKey(perDay).sort(
    (a, b) => tokensOf(b) - tokensOf(a) || b.cost - a.cost || (a.key < b.key ? -1 : 1),
  );
  const shown = ranked.slice(0, top).map((r) => r.key);
  const series = ranked.length > top ? [...shown, OTHERS] : shown;
  const index = new Map(series.map((key, i) => [key, i]));
  const byDay = new Map<string, UsageRow[][]>();
  for (const r of perDay) {
    if (r.day === undefined) continue;
    const parts = byDay.get(r.day) ?? series.map(() => []);
    parts[index.get(r.key) ?? series.length - 1].push(r);
    byDay.set(r.day, parts);
  }
  const days = fillDays([], range).map(({ key: day }) => {
    const parts = byDay.get(day);
    return { day, parts: series.map((key, i) => sumRows(parts?.[i] ?? [], key)) };
  });
  return { series, days };
}

/** Tokens as budgets count them: input plus output (cached input is part of input). */
export function tokensOf(row: Pick<UsageRow, "inputTokens" | "outputTokens">): number {
  return row.inputTokens + row.outputTokens;
}

/** The sum of the rows, as a row keyed `key`. */
export function sumRows(rows: UsageRow[], key = ""): UsageRow {
  const total: UsageRow = { key, ...ZERO };
  for (const r of rows) {
    total.inputTokens += r.inputTokens;
    total.outputTokens += r.outputTokens;
    total.cachedTokens += r.cachedTokens;
    total.cost += r.cost;
    total.calls += r.calls;
    total.unpricedCalls += r.unpricedCalls;
  }
  return total;
}

const whole = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });
const short = new Intl.NumberFormat(undefined, { notation: "compact", maximumFractionDigits: 1 });
const money = new Intl.NumberFormat(undefined, { minimumFractionDigits: 2, maximumFractionDigits: 2 });
const cents = new Intl.NumberFormat(undefined, { minimumFractionDigits: 2, maximumFractionDigits: 4 });

/** "12,345". */
export function formatCount(n: number): string {
  return whole.format(n);
}

/** "12K", "1.2M": an axis label. */
export function formatCompact(n: number): string {
  return short.format(n);
}

/** A cost in the owner's currency (the prices' own, so no symbol): two decimals, up to four
 * below one, and "< 0.0001" for a cost too small to show. */
export function formatCost(n: number): string {
  if (n > 0 && n < 0.0001) return "< 0.0001";
  return n < 1 ? cents.format(n) : money.format(n);
}

/** "3 Nov" for a day (UTC), as the chart's axis writes it. */
export function formatDay(day: string, withYear = false): string {
  return new Date(dayMs(day)).toLocaleDateString(undefined, {
    day: "numeric",
    month: "short",
    year: withYear ? "numeric" : undefined,
    timeZone: "UTC",
  });
}

/** An axis from 0 with `count` steps of a round size (1, 2, 2.5 or 5 times a power of ten) that
 * reaches `max`; integer steps only when `whole` (token counts). */
export function niceTicks(max: number, count = 4, integers = false): number[] {
  if (!(max > 0)) return integers ? [0, 1] : [0, 0.01];
  const raw = max / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  let step = power * 10;
  for (const m of [1, 2, 2.5, 5, 10]) {
    if (m * power >= raw) {
      step = m * power;
      break;
    }
  }
  if (integers) step = Math.max(1, Math.ceil(step));
  const ticks: number[] = [];
  for (let i = 0; ticks.length === 0 || ticks[ticks.length - 1] < max; i++) {
    ticks.push(Number((i * step).toPrecision(12)));
  }
  return ticks;
}

/** A breakdown as CSV rows: the header, then a row each; agents, people and channels with
 * their id beside the name. Numbers as the server sent them; no total row (a spreadsheet sums). */
export function usageCsv(label: string, withId: boolean, rows: NamedRow[]): CsvValue[][] {
  const head = [
    ...(withId ? [`${label} ID`, label] : [label]),
    "Input tokens",
    "Output tokens",
    "Cached tokens",
    "Total tokens",
    "Cost",
    "Calls",
    "Unpriced calls",
  ];
  return [
    head,
    ...rows.map((r) => [
      ...(withId ? [r.key, r.name] : [r.key]),
      r.inputTokens,
      r.outputTokens,
      r.cachedTokens,
      tokensOf(r),
      r.cost,
      r.calls,
      r.unpricedCalls,
    ]),
  ];
}
