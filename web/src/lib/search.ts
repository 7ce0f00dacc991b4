/**
 * Message search, the parts that are not the screen: the answer's shapes, the operator hints
 * and completions of the search box (`from:` people and agents, `in:` channels), the snippet
 * made safe to render, and results grouped by channel. Pure, so Vitest covers it whole.
 */
import type { Message } from "./types";

export type SearchSort = "relevance" | "recent";

export interface SearchResult {
  message: Message;
  channel: { id: string; name: string; type: "dm" | "group" };
  /** Escaped text with the matched words inside `<mark>` (docs/SPEC.md section 11). */
  snippet: string;
}

export interface SearchPage {
  results: SearchResult[];
  nextCursor: string | null;
}

export interface Suggestion {
  /** What the list shows. */
  label: string;
  /** A line under it (what the operator does, or "agent" / "person"). */
  detail: string;
  /** What replaces the token being typed (a trailing space when it is complete). */
  insert: string;
}

/** The grammar's operators, as the empty box lists them (docs/SPEC.md section 11). */
export const OPERATORS: Suggestion[] = [
  { label: "from:@", detail: "written by a person or an agent", insert: "from:@" },
  { label: "in:#", detail: "in a channel", insert: "in:#" },
  { label: "has:file", detail: "a file or an image", insert: "has:file " },
  { label: "has:image", detail: "an image", insert: "has:image " },
  { label: "has:link", detail: "a link", insert: "has:link " },
  { label: "is:thread", detail: "a reply in a thread", insert: "is:thread " },
  { label: "before:", detail: "before a day (YYYY-MM-DD)", insert: "before:" },
  { label: "after:", detail: "on or after a day (YYYY-MM-DD)", insert: "after:" },
  { label: '"phrase"', detail: "these words in this order", insert: '"' },
  { label: "-word", detail: "leave out messages with this word", insert: "-" },
];

/** The token the caret is in (or just after): from the last space before the caret to the
 * next space, a quoted name's spaces included (`from:@"Ada Lo|`). */
export function tokenAt(query: string, caret: number): { start: number; end: number; text: string } {
  let start = 0;
  let quoted = false;
  for (let i = 0; i < caret; i++) {
    if (query[i] === '"') quoted = !quoted;
    else if (query[i] === " " && !quoted) start = i + 1;
  }
  let end = caret;
  while (end < query.length && (quoted || query[end] !== " ")) {
    if (query[end] === '"') quoted = !quoted;
    end++;
  }
  return { start, end, text: query.slice(start, end) };
}

/** A name as the grammar takes it: quoted when it has a space. */
export function quoteName(name: string): string {
  return /\s/.test(name) ? `"${name.replace(/"/g, "")}"` : name;
}

export interface Names {
  people: { name: string }[];
  agents: { name: string; avatar?: string }[];
  channels: { name: string; type: "dm" | "group" }[];
}

const MAX_SUGGESTIONS = 8;

function startsWithFolded(name: string, typed: string): boolean {
  const n = name.toLocaleLowerCase();
  const t = typed.toLocaleLowerCase();
  return n.startsWith(t) || n.split(/\s+/).some((part) => part.startsWith(t));
}

/**
 * What the box offers for the token at the caret: names after `from:` and `in:`, operators
 * for the start of one (`fr` offers `from:@`), and the whole operator list in an empty box.
 * Nothing in the middle of a plain word.
 */
export function suggest(query: string, caret: number, names: Names): Suggestion[] {
  if (!query.trim()) return OPERATORS;
  const { text } = tokenAt(query, caret);
  const lower = text.toLowerCase();
  const from = /^from:@?"?(.*)$/i.exec(text);
  if (from && lower.startsWith("from:")) {
    const typed = from[1].replace(/"$/, "");
    const seen = new Set<string>();
    const out: Suggestion[] = [];
    const add = (name: string, detail: string) => {
      const key = name.toLocaleLowerCase();
      if (seen.has(key) || !startsWithFolded(name, typed)) return;
      seen.add(key);
      out.push({ label: `@${name}`, detail, insert: `from:@${quoteName(name)} ` });
    };
    for (const person of [...names.people].sort((a, b) => a.name.localeCompare(b.name))) {
      add(person.name, "person");
    }
    for (const agent of [...names.agents].sort((a, b) => a.name.localeCompare(b.name))) {
      add(agent.name, "agent");
    }
    return out.slice(0, MAX_SUGGESTIONS);
  }
  const inside = /^in:#?"?(.*)$/i.exec(text);
  if (inside && lower.startsWith("in:")) {
    const typed = inside[1].replace(/"$/, "");
    return names.channels
      .filter((c) => c.type === "group" && startsWithFolded(c.name, typed))
      .sort((a, b) => a.name.localeCompare(b.name))
      .slice(0, MAX_SUGGESTIONS)
      .map((c) => ({ label: `#${c.name}`, detail: "channel", insert: `in:#${quoteName(c.name)} ` }));
  }
  if (text.length >= 2 && !text.includes(":") && /^[a-z]+$/i.test(text)) {
    return OPERATORS.filter((o) => /^[a-z]/.test(o.label) && o.label.startsWith(lower));
  }
  return [];
}

/** The query with the token at the caret replaced by a suggestion, and where the caret goes. */
export function applySuggestion(
  query: string,
  caret: number,
  suggestion: Suggestion,
): { query: string; caret: number } {
  if (!query.trim()) {
    return { query: suggestion.insert, caret: suggestion.insert.length };
  }
  const { start, end } = tokenAt(query, caret);
  let rest = query.slice(end);
  // A completed token brings its own space.
  if (suggestion.insert.endsWith(" ") && rest.startsWith(" ")) rest = rest.slice(1);
  const next = query.slice(0, start) + suggestion.insert + rest;
  return { query: next, caret: start + suggestion.insert.length };
}

const MARK = /(<\/?mark>)/i;

/**
 * The snippet as HTML that holds no markup but `<mark>`: the server escapes the text and adds
 * only `<mark>` (docs/SPEC.md section 11), and this keeps it so whatever it sent: any other `<`
 * or `>` is escaped, and marks are balanced. Entities stay as the server escaped them.
 */
export function safeSnippet(html: string): string {
  let open = false;
  let out = "";
  for (const part of html.split(MARK)) {
    const tag = part.toLowerCase();
    if (tag === "<mark>") {
      if (!open) out += "<mark>";
      open = true;
    } else if (tag === "</mark>") {
      if (open) out += "</mark>";
      open = false;
    } else {
      // A bare `&` that starts no entity is escaped too, so the text cannot form one.
      out += part
        .replace(/&(?!(?:[a-z]+|#\d+|#x[0-9a-f]+);)/gi, "&amp;")
        .replace(/</g, "&lt;")
        .replace(/>/g, "&gt;");
    }
  }
  return open ? `${out}</mark>` : out;
}

export interface ChannelGroup {
  channel: SearchResult["channel"];
  /** Each result with its place in the flat list (what the arrow keys move through). */
  results: { result: SearchResult; index: number }[];
}

/** Results grouped by channel, the groups in the order their best result comes; within a
 * group the server's order. */
export function groupByChannel(results: SearchResult[]): ChannelGroup[] {
  const groups = new Map<string, ChannelGroup>();
  results.forEach((result, index) => {
    let group = groups.get(result.channel.id);
    if (!group) {
      group = { channel: result.channel, results: [] };
      groups.set(result.channel.id, group);
    }
    group.results.push({ result, index });
  });
  return [...groups.values()];
}

/** The flat order the arrow keys follow: group by group, as shown. */
export function shownOrder(groups: ChannelGroup[]): SearchResult[] {
  return groups.flatMap((g) => g.results.map((r) => r.result));
}

/** The next option for an arrow key, wrapping; -1 (none) stays none until a key moves. */
export function step(current: number, count: number, delta: 1 | -1): number {
  if (count === 0) return -1;
  if (current < 0) return delta === 1 ? 0 : count - 1;
  return (current + delta + count) % count;
}

/** Whether a key press belongs to a text field (where `/` is typed, not a shortcut). */
export function isTextField(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return false;
  if (target.isContentEditable) return true;
  if (target instanceof HTMLTextAreaElement) return true;
  if (target instanceof HTMLSelectElement) return true;
  if (target instanceof HTMLInputElement) {
    return !["button", "checkbox", "radio", "submit", "reset", "range", "color", "file"].includes(
      target.type,
    );
  }
  return false;
}

/** Ctrl+K or Cmd+K anywhere, or `/` outside a text field: the keys that open the search. */
export function opensSearch(event: KeyboardEvent): boolean {
  if (event.isComposing || event.altKey) return false;
  if ((event.ctrlKey || event.metaKey) && !event.shiftKey && event.key.toLowerCase() === "k") return true;
  return event.key === "/" && !event.ctrlKey && !event.metaKey && !isTextField(event.target);
}
