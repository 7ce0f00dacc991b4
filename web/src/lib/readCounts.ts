/**
 * Read state as the server counts it (SPEC 12), for the live moves between two answers of the
 * server: which messages count as unread or as a mention of the person, what a read marker
 * moved to a message leaves, and the page's title.
 */
import type { ReadState } from "./types";

/** What the counting rules need of a message (a `Message` or a timeline's `Item`). */
export interface Countable {
  id: string;
  userId: string | null;
  type: string;
  metadata: Record<string, unknown>;
  threadId?: string | null;
  deleted?: boolean;
  streaming?: boolean;
}

/** The people a message mentions (`metadata.mentions.userIds`, set by the server only). */
export function mentionedUserIds(metadata: Record<string, unknown>): string[] {
  const mentions = metadata.mentions;
  if (typeof mentions !== "object" || mentions === null) return [];
  const ids = (mentions as { userIds?: unknown }).userIds;
  return Array.isArray(ids) ? ids.filter((id): id is string => typeof id === "string") : [];
}

export function mentionsUser(m: Countable, userId: string | undefined): boolean {
  return userId !== undefined && m.userId !== userId && mentionedUserIds(m.metadata).includes(userId);
}

/**
 * Whether a message counts for the person, and as a mention: text, images and files others
 * wrote, on the main timeline or in a thread the person takes part in (`inThread`), or that
 * mention them. Null when it does not count.
 */
export function counted(
  m: Countable,
  userId: string | undefined,
  inThread: (threadId: string) => boolean = () => false,
): { mention: boolean } | null {
  if (m.type !== "text" && m.type !== "image" && m.type !== "file") return null;
  if (m.deleted || m.streaming || userId === undefined || m.userId === userId) return null;
  const mention = mentionsUser(m, userId);
  if (m.threadId && !mention && !inThread(m.threadId)) return null;
  return { mention };
}

/**
 * As `counted`, for a page that may not know whether the person takes part in a thread
 * (`inThread` answers undefined: it does not hold the thread's root): "unsure" when only that
 * would decide, so that the server is asked.
 */
export function judged(
  m: Countable,
  userId: string | undefined,
  inThread: (threadId: string) => boolean | undefined,
): { mention: boolean } | null | "unsure" {
  let unsure = false;
  const how = counted(m, userId, (threadId) => {
    const part = inThread(threadId);
    if (part === undefined) unsure = true;
    return part ?? false;
  });
  return how ?? (unsure ? "unsure" : null);
}

/** Whether id `a` is after the marker `b` (null: nothing read yet). Ids sort by time. */
export function after(a: string, marker: string | null): boolean {
  return marker === null || a > marker;
}

/**
 * The state once the marker moves to `to`, from what the page knows: the messages it counted
 * after the old marker (`known`, by id: whether each is a mention). Those up to `to` are read
 * now; the server's answer then gives the exact counts (messages the page never saw, such as
 * replies in a thread it has not opened, stay counted until then).
 */
export function readUpTo(state: ReadState, to: string, known: Map<string, boolean>): ReadState {
  if (!after(to, state.lastReadId)) return state;
  let unread = state.unreadCount;
  let mentions = state.mentionCount;
  for (const [id, mention] of known) {
    if (!after(id, state.lastReadId) || id > to) continue;
    unread -= 1;
    if (mention) mentions -= 1;
  }
  return { lastReadId: to, unreadCount: Math.max(0, unread), mentionCount: Math.max(0, mentions) };
}

/** Whether the server's state `next` may replace the page's `current`: markers never move back. */
export function newer(next: ReadState, current: ReadState | undefined): boolean {
  if (!current || current.lastReadId === null) return true;
  return next.lastReadId !== null && next.lastReadId >= current.lastReadId;
}

/** The page's title: "(N) " before it while anything is unread. */
export function titled(base: string, unread: number): string {
  return unread > 0 ? `(${unread > 99 ? "99+" : unread}) ${base}` : base;
}
