/**
 * The prices form's rules (`settings.prices`, docs/SPEC.md section 13): a model as agents name
 * it (`<provider id>/<model name>`) to its price per million tokens; saved as a merge patch in
 * which a model taken out is null.
 */
import type { Price } from "./settingsApi";

export type PriceField = "model" | "input" | "output" | "cachedInput";

/** A row of the form: numbers as a number field binds them (null when empty). */
export interface PriceRow {
  /** Stable while the form lives, for Svelte's keyed list and the errors. */
  id: number;
  model: string;
  input: number | null;
  output: number | null;
  cachedInput: number | null;
  /** Saved already: its model is fixed (a new name is a new price). */
  saved: boolean;
}

/** What the server's answer to a bad patch names, to show it under that field. */
export interface PriceError {
  model: string;
  field: PriceField;
  text: string;
}

const MODEL = /^[A-Za-z0-9_.-]+\/\S.*$/;

export function rowsOf(prices: Record<string, Price>): PriceRow[] {
  return Object.keys(prices)
    .sort()
    .map((model, id) => ({
      id,
      model,
      input: prices[model].input,
      output: prices[model].output,
      cachedInput: prices[model].cachedInput ?? null,
      saved: true,
    }));
}

/** What is wrong with the rows before they are sent (the browser checks the numbers): a new
 * row's model not shaped as agents name models, or priced twice. Keyed by row id. */
export function rowProblems(rows: PriceRow[]): Map<number, { field: PriceField; text: string }> {
  const problems = new Map<number, { field: PriceField; text: string }>();
  const seen = new Set<string>();
  for (const row of rows) {
    const model = row.model.trim();
    if (!row.saved && !MODEL.test(model)) {
      problems.set(row.id, { field: "model", text: "Name the model as agents do: provider/model." });
    } else if (seen.has(model)) {
      problems.set(row.id, { field: "model", text: "This model has a price already." });
    }
    seen.add(model);
  }
  return problems;
}

/** The patch from the saved prices to the rows: each row changed or new, and null for each
 * saved model no longer there; an empty cached price is null (the input price applies). */
export function pricesPatch(saved: Record<string, Price>, rows: PriceRow[]): Record<string, Price | null> {
  const patch: Record<string, Price | null> = {};
  const kept = new Set<string>();
  for (const row of rows) {
    const model = row.model.trim();
    kept.add(model);
    const price: Price = { input: row.input ?? 0, output: row.output ?? 0, cachedInput: row.cachedInput };
    const before = saved[model];
    if (
      !before ||
      before.input !== price.input ||
      before.output !== price.output ||
      (before.cachedInput ?? null) !== price.cachedInput
    ) {
      patch[model] = price;
    }
  }
  for (const model of Object.keys(saved)) if (!kept.has(model)) patch[model] = null;
  return patch;
}

/** The price field a server's refusal is about (its `field`: `prices.<model>.<field>`, or
 * `prices.<model>` for the entry as a whole), for one of these models; null when it names none.
 * Models hold dots, so the model is matched whole rather than split at one. */
export function priceErrorOf(field: string | null | undefined, text: string, models: string[]): PriceError | null {
  if (!field?.startsWith("prices.")) return null;
  const where = field.slice("prices.".length);
  for (const model of models) {
    if (where === model) return { model, field: "model", text };
    for (const name of ["input", "output", "cachedInput"] as const) {
      if (where === `${model}.${name}`) return { model, field: name, text };
    }
  }
  return null;
}

/** The models offered when adding a price: the agents' and the providers', not yet priced,
 * sorted and each once. */
export function modelChoices(known: string[], priced: string[]): string[] {
  const taken = new Set(priced);
  return [...new Set(known)].filter((m) => m && !taken.has(m)).sort();
}
