/**
 * Mentions as the server's parser reads them (src/palaver/agents/mentions.py): `@Name` matches
 * the name of a member agent or of a person who reads the channel, ignoring case (case-folded),
 * longest name first whoever bears it; `@agent_…` and `@user_…` match ids; a mention ends at a
 * non-word character; an `@` right after a word character is plain text.
 */

/** An agent or a person: anyone a mention may name. */
export interface Named {
  id: string;
  name: string;
}

/** Python's `\w` on str: letters, numbers and the underscore; combining marks are not word
 * characters there (`@Ann\u0301` mentions Ann), so they are not here. */
const WORD = /[\p{L}\p{N}_]/u;

export function isWord(ch: string | undefined): boolean {
  return ch !== undefined && WORD.test(ch);
}

/** Unicode case folding, close enough to Python's casefold for names (ß folds to ss). */
export function fold(text: string): string {
  return text.toLowerCase().replace(/ß/g, "ss").replace(/ς/g, "σ");
}

export interface MentionQuery {
  /** Index of the `@`. */
  start: number;
  /** What is typed after the `@`, up to the caret. */
  text: string;
}

/** The mention being typed at the caret, if the caret is inside one. */
export function mentionAt(content: string, caret: number): MentionQuery | null {
  const at = content.lastIndexOf("@", caret - 1);
  if (at === -1) return null;
  if (isWord(content[at - 1])) return null;
  const text = content.slice(at + 1, caret);
  if (text.includes("\n") || text.length > 64) return null;
  return { start: at, text };
}

/**
 * Agents a partial mention may still become: their folded name starts with the folded text.
 * Names with spaces stay candidates while the typed text matches their beginning.
 */
export function candidates<T extends Named>(agents: T[], typed: string): T[] {
  const want = fold(typed);
  return agents
    .filter((a) => fold(a.name).startsWith(want) || a.id.startsWith(typed))
    .sort((a, b) => {
      const exact = Number(fold(b.name) === want) - Number(fold(a.name) === want);
      return exact || a.name.localeCompare(b.name);
    });
}

/** Members (agents and people) the text mentions, in order of first mention (as the server
 * decides). */
export function mentioned<T extends Named>(content: string, members: T[]): T[] {
  const byLength = [...members].sort((a, b) => b.name.length - a.name.length);
  const found: T[] = [];
  let i = content.indexOf("@");
  while (i !== -1) {
    const start = i + 1;
    if (!(i > 0 && isWord(content[i - 1]))) {
      const match = matchId(content, start, members) ?? matchName(content, start, byLength);
      if (match && !found.includes(match)) found.push(match);
    }
    i = content.indexOf("@", start);
  }
  return found;
}

function matchId<T extends Named>(content: string, start: number, members: T[]): T | null {
  if (!content.startsWith("agent_", start) && !content.startsWith("user_", start)) return null;
  let end = start;
  while (end < content.length && isWord(content[end])) end += 1;
  const id = content.slice(start, end);
  return members.find((a) => a.id === id) ?? null;
}

/** Where `@name` ends when the text at `start` (after the `@`) spells `name` as a whole
 * mention; -1 when it does not. */
export function mentionEnd(content: string, start: number, name: string): number {
  const want = fold(name);
  let folded = "";
  let end = start;
  while (end < content.length && folded.length < want.length) {
    folded += fold(content[end]);
    end += 1;
  }
  return folded === want && !isWord(content[end]) ? end : -1;
}

function matchName<T extends Named>(content: string, start: number, agents: T[]): T | null {
  for (const agent of agents) if (mentionEnd(content, start, agent.name) !== -1) return agent;
  return null;
}
