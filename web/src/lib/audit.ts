/**
 * The audit screen's rules: an entry's changed fields in a line each, whatever shape the action
 * gave them, and the actions the filter suggests.
 */

/** Actions the filter box offers: those docs/SPEC.md section 14 lists (`resource.verb`). */
export const KNOWN_ACTIONS = [
  "settings.update",
  "provider.create",
  "provider.update",
  "provider.delete",
  "mcpServer.create",
  "mcpServer.update",
  "mcpServer.delete",
  "agent.create",
  "agent.update",
  "agent.delete",
  "guest.create",
  "guest.delete",
  "channel.create",
  "channel.update",
  "channel.leave",
  "channel.delete",
  "document.create",
  "document.update",
  "document.delete",
  "memory.create",
  "memory.update",
  "memory.restore",
  "memory.delete",
  "schedule.create",
  "schedule.update",
  "schedule.delete",
  "chain.create",
  "chain.pause",
  "chain.resume",
  "chain.cancel",
  "message.delete",
  "login.succeeded",
  "login.failed",
  "logout.succeeded",
];

const LONGEST = 80;

/** The name of an id the page knows (an agent, a person, a channel), or null. */
export type Namer = (id: string) => string | null;

function short(value: unknown, name: Namer): string {
  let text: string;
  if (value === null || value === undefined) text = "none";
  else if (value === "") text = "(empty)";
  else if (typeof value === "string") text = name(value) ?? value;
  else if (Array.isArray(value) && value.every((v) => typeof v === "string")) {
    text = value.length ? value.map((v: string) => name(v) ?? v).join(", ") : "none";
  } else text = JSON.stringify(value) ?? String(value);
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

/** The most lines an entry shows; the rest is counted ("and 3 more"). */
export const MOST_LINES = 8;

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** A text the log keeps by its length only (SOUL.md, a memory, a prompt). */
function sizeOnly(value: Record<string, unknown>): number | null {
  const keys = Object.keys(value);
  return keys.length === 1 && typeof value.length === "number" ? value.length : null;
}

function lines(path: string, value: unknown, out: string[], name: Namer): void {
  const both = pair(value);
  if (both) {
    out.push(`${path}: ${short(both[0], name)} → ${short(both[1], name)}`);
  } else if (isRecord(value)) {
    const size = sizeOnly(value);
    if (size !== null) out.push(`${path}: ${size.toLocaleString()} characters`);
    else if (Object.keys(value).length === 0) out.push(path);
    else for (const [key, inner] of Object.entries(value)) lines(`${path}.${name(key) ?? key}`, inner, out, name);
  } else {
    out.push(`${path}: ${short(value, name)}`);
  }
}

/** One line per changed field, nested settings as dotted paths: `name: Ada`,
 * `limits.messagesPerMinute: 100`, `soul: 1,204 characters`, `memberIds: Maya, Sam` (ids the
 * page knows as names, in values and in paths: `budgets.agents.Researcher.monthlyTokens`),
 * `name: Ada → Grace` for a before-and-after pair; an entry listing field names gives them as
 * they are. At most `MOST_LINES`, then how many more. Nothing for an entry without changes. */
export function changeLines(changes: unknown, name: Namer = () => null): string[] {
  if (changes === null || changes === undefined || changes === "") return [];
  const out: string[] = [];
  if (Array.isArray(changes)) out.push(...changes.map((c) => short(c, name)));
  else if (isRecord(changes)) for (const [field, value] of Object.entries(changes)) lines(field, value, out, name);
  else out.push(short(changes, name));
  if (out.length <= MOST_LINES) return out;
  return [...out.slice(0, MOST_LINES - 1), `and ${out.length - MOST_LINES + 1} more`];
}

/** The `action` filter as the server takes it: `agent.create` for one action, `agent.` for
 * every action of a resource (a word without a dot means that too); null when what was typed
 * can be neither, `""` for no filter. */
export function actionFilter(typed: string): string | null {
  const text = typed.trim();
  if (text === "") return "";
  const action = text.includes(".") ? text : `${text}.`;
  return /^[A-Za-z]{1,32}\.([A-Za-z]{1,31})?$/.test(action) ? action : null;
}

/** The end of a node's id, which tells nodes apart (a ULID's start is its time, alike for nodes
 * started together): `…CDH4Q`. */
export function nodeTail(node: string): string {
  return node.length > 12 ? `…${node.slice(-6)}` : node;
}
