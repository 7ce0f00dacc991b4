/** Reactions as the server keeps them: emoji in the order first used, each with who reacted. */
import type { Reaction } from "./types";

/** The reactions after `userId` added or removed `emoji`; the same array when nothing changed
 * (an event for a toggle already applied optimistically changes nothing). */
export function applyReaction(
  reactions: Reaction[],
  emoji: string,
  userId: string,
  add: boolean,
): Reaction[] {
  const i = reactions.findIndex((r) => r.emoji === emoji);
  const had = i !== -1 && reactions[i].userIds.includes(userId);
  if (add === had) return reactions;
  const next = reactions.slice();
  if (add) {
    if (i === -1) next.push({ emoji, count: 1, userIds: [userId] });
    else next[i] = { emoji, count: next[i].count + 1, userIds: [...next[i].userIds, userId] };
  } else {
    const userIds = next[i].userIds.filter((u) => u !== userId);
    if (userIds.length === 0) next.splice(i, 1);
    else next[i] = { emoji, count: userIds.length, userIds };
  }
  return next;
}

export function hasReacted(reactions: Reaction[], emoji: string, userId: string | undefined): boolean {
  return userId !== undefined && reactions.some((r) => r.emoji === emoji && r.userIds.includes(userId));
}

const RECENT_KEY = "palaver:recent-emoji";
const RECENT_MAX = 8;
export const DEFAULT_EMOJI = ["👍", "❤️", "😂", "🎉", "🤔", "👀", "🙏", "✅", "🔥", "😮", "😢", "🚀"];

function key(userId: string): string {
  return `${RECENT_KEY}:${userId}`;
}

/** The person's recent reactions in this browser, newest first (localStorage, per user). */
export function recentEmoji(userId: string | undefined): string[] {
  if (!userId) return [];
  try {
    const raw: unknown = JSON.parse(localStorage.getItem(key(userId)) ?? "[]");
    return Array.isArray(raw) ? raw.filter((e): e is string => typeof e === "string").slice(0, RECENT_MAX) : [];
  } catch {
    return [];
  }
}

export function rememberEmoji(userId: string | undefined, emoji: string): void {
  if (!userId) return;
  const list = [emoji, ...recentEmoji(userId).filter((e) => e !== emoji)].slice(0, RECENT_MAX);
  try {
    localStorage.setItem(key(userId), JSON.stringify(list));
  } catch {
    // storage full or off: recents are a convenience
  }
}
