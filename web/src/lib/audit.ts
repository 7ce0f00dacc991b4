/**
 * The audit screen's rules: an entry's changed fields in a line each, whatever shape the action
 * gave them, and the actions the filter suggests.
 */

/** Actions the filter box offers (the server names actions `resource.verb`); typing the
 * start of one (`agent.`) finds them all. */
export const KNOWN_ACTIONS = [
  "login",
  "login.failed",
  "logout",
  "settings.update",
  "agent.create",
  "agent.update",
  "agent.delete",
  "guest.create",
  "guest.delete",
  "channel.create",
  "channel.update",
  "channel.delete",
  "document.update",
  "document.delete",
  "schedule.create",
  "schedule.update",
  "schedule.delete",
];

const LONGEST = 80;

function short(value: unknown): string {
  let text: string;
  if (value === null || value === undefined) text = "none";
  else if (typeof value === "string") text = value;
  else text = JSON.stringify(value) ?? String(value);
  return text.length > LONGEST ? `${text.slice(0, LONGEST - 1)}…` : text;
}

/** A `{from, to}`-like pair of a field's value before and after, if `value` is one. */
function pair(value: unknown): [unknown, unknown] | null {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return null;
  const v = value as Record<string, unknown>;
  const keys = Object.keys(v);
  for (const [a, b] of [
    ["from", "to"],
    ["before", "after"],
    ["old", "new"],
  ]) {
    if (keys.length === 2 && a in v && b in v) return [v[a], v[b]];
  }
  return null;
}

/** One line per changed field: `name: Ada → Grace`, `soul: changed`, or the field's name when
 * the entry lists names only. Nothing for an entry without changes. */
export function changeLines(changes: unknown): string[] {
  if (changes === null || changes === undefined || changes === "") return [];
  if (typeof changes !== "object") return [short(changes)];
  if (Array.isArray(changes)) return changes.map(short);
  return Object.entries(changes as Record<string, unknown>).map(([field, value]) => {
    const both = pair(value);
    if (both) return `${field}: ${short(both[0])} → ${short(both[1])}`;
    if (value === true) return field;
    return `${field}: ${short(value)}`;
  });
}
