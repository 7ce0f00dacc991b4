/**
 * Each channel's timeline: stored messages and replies still streaming, in id order (ids sort
 * by creation), with the tool calls of a reply folded into it.
 *
 * Streamed text is buffered and applied once per animation frame, so a fast model costs one
 * render per frame rather than one per chunk. A reply is keyed by its message id from
 * `stream_start` to the stored `message`, so it never shows twice; a stream replayed on
 * (re)subscribe starts the text over, since the server sends the whole text so far again.
 */
import { api, sessionEnded, sessionMark } from "../api";
import { socket } from "../socket.svelte";
import { applyReaction } from "../reactions";
import type { Message, Reaction, ServerEvent, ThreadSummary, ToolStatus } from "../types";
import { announcer } from "./announcer.svelte";
import { channels } from "./channels.svelte";
import { directory } from "./directory.svelte";
import { readState } from "./readState.svelte";
import { session } from "./session.svelte";

export const PAGE_SIZE = 50;
/** How far back a reconnect looks for what it missed (pages of 200) before it gives up and
 * starts afresh from the pages it fetched (`fetchMissed`). */
const CATCH_UP_PAGES = 20;
/** Live messages kept aside while a timeline holds a window away from the live end: the
 * newest this many (older ones come with the pages forward anyway, stored before broadcast). */
const HELD_CAP = 500;
/** Messages whose live changes are kept for a page on its way (see `Timeline.recent`). */
const RECENT_CAP = 500;

/** A live change to a stored message: what a page asked for before it may not have. */
type Change = Extract<
  ServerEvent,
  { type: "message_updated" | "message_deleted" | "reaction_added" | "reaction_removed" }
>;

function isReaction(change: Change): change is Extract<Change, { type: "reaction_added" | "reaction_removed" }> {
  return change.type === "reaction_added" || change.type === "reaction_removed";
}

export interface ToolCard {
  toolName: string;
  callId: string | null;
  arguments: Record<string, unknown>;
  status: ToolStatus;
  result: string | null;
}

export interface Item {
  id: string;
  channelId: string;
  agentId: string | null;
  userId: string | null;
  content: string;
  type: Message["type"];
  metadata: Record<string, unknown>;
  createdAt: string;
  threadId: string | null;
  editedAt: string | null;
  deleted: boolean;
  reactions: Reaction[];
  thread: ThreadSummary | null;
  streaming: boolean;
  error: string | null;
  cancelled: boolean;
  interrupted: boolean;
  tools: ToolCard[];
}

function isToolRecord(m: Message): boolean {
  return m.type === "tool_call" || m.type === "tool_result";
}

/** A message's fields as an item's; `reactive` makes the one live object a row renders. */
function fields(m: Message): Item {
  return {
    ...m,
    threadId: m.threadId ?? null,
    editedAt: m.editedAt ?? null,
    deleted: m.deleted === true,
    reactions: m.reactions ?? [],
    thread: m.thread ?? null,
    streaming: false,
    error: typeof m.metadata.error === "string" ? m.metadata.error : null,
    cancelled: m.metadata.cancelled === true,
    interrupted: m.metadata.interrupted === true,
    tools: [],
  };
}

/**
 * Each item is its own deep reactive object (streamed text and tool cards change in place),
 * while the list holding them is a plain array replaced on change: a 10,000-item reactive
 * array would turn one page of older messages into 10,000 signal writes.
 */
function reactive(item: Item): Item {
  const live = $state(item);
  ids.set(live, item.id);
  return live;
}

/** Each live item's id, read without its proxy: a list's offsets are rebuilt from all its ids
 * on every page, and a proxied read makes (and keeps) a signal per item. Ids never change. */
const ids = new WeakMap<object, string>();

export function itemId(item: { id: string }): string {
  return ids.get(item) ?? item.id;
}

/** Binary search: the index of the first item whose id is not less than `id`. */
/** Where a catch-up may stop paging back: at the newest id the timeline had, or at an
 * outage's boundary (`socket.missedAfter`) if that is earlier; null when neither is known. */
export function catchUpBound(known: string | null, missed: string | null): string | null {
  if (known === null || missed === null) return known ?? missed;
  return missed < known ? missed : known;
}

export function lowerBound(items: { id: string }[], id: string): number {
  let lo = 0;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (itemId(items[mid]) < id) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * A channel's main timeline (thread replies left out), or with `threadId` one thread: its root
 * first, then its replies. Both take the same events, paging and catch-up.
 *
 * Live or detached. A live timeline holds the newest messages, so live events append at its
 * end. A timeline opened around an old message (a search result: `jumpTo`) holds a window in
 * the middle: it is detached (`live` false) and a new message must not go after the gap, so
 * live messages are held aside (`held`) and streams are not started; `loadNewer` pages forward
 * with `after` and, when a page comes back short, the window has met the live end: the held
 * messages not in it are merged and the timeline is live again. Sending from a detached
 * timeline goes back to the live end first (`toLive`), as Element and Zulip do.
 */
export class Timeline {
  readonly channelId: string;
  readonly threadId: string | null;
  #items = $state.raw<Item[]>([]);
  loaded = $state(false);
  loadingOlder = $state(false);
  hasOlder = $state(true);
  /** Whether the timeline reaches the newest message (see the class's note). */
  live = $state(true);
  loadingNewer = $state(false);
  /** Bumped by each page forward: the feed does not count those rows as new messages. */
  pagedNewer = 0;
  error = $state<string | null>(null);
  /** The oldest message id fetched, tool records included: where the next page starts. */
  private oldestId: string | null = null;
  private newestId: string | null = null;
  /** Tool records whose reply is not loaded (yet): attached when it arrives. */
  private orphanTools = new Map<string, Message[]>();
  private seqs = new Map<string, number>();
  private pending = new Map<string, string>();
  private frame = 0;
  private olderLoad: Promise<void> | null = null;
  private newerLoad: Promise<void> | null = null;
  private latestLoad: Promise<void> | null = null;
  /** A window on its way (`jumpTo`): the newest page must not land over it. */
  private windowLoad: Promise<boolean> | null = null;
  /** Bumped when the items are replaced (a jump, back to live): older answers are dropped. */
  private epoch = 0;
  /** Live messages that came while detached (see the class's note). */
  private held: Message[] = [];
  /** The change count when the first of `held` came: a later change reached them held. */
  private heldSince = Infinity;
  /** Confirmed subscriptions so far (see `subscribed`). */
  private subscriptions = 0;
  /** Live changes counted, and the count at each message's latest: a page asked for before a
   * change (an edit, a reaction, a thread's new reply count) must not undo it on landing. */
  private changes = 0;
  private changedAt = new Map<string, number>();
  /** The live changes of the messages changed last, in order: a page asked for before them
   * that brings one of those messages, not loaded when they came, gets them again on landing
   * (a delete, above all, must not be undone by it). */
  private recent = new Map<string, Change[]>();
  /** The earliest boundary of the closes for a catch-up not caught up with yet (`missed`), and
   * a count of them: one named during a catch-up is not cleared by it. */
  private missedAfter: string | null = null;
  private misses = 0;

  constructor(channelId: string, threadId: string | null = null) {
    this.channelId = channelId;
    this.threadId = threadId;
  }

  get items(): Item[] {
    return this.#items;
  }

  set items(list: Item[]) {
    this.#items = list;
  }

  /** Whether a message belongs here: a thread's root and replies, or the channel's others. */
  holds(m: { id: string; threadId?: string | null }): boolean {
    if (this.threadId === null) return !m.threadId;
    return m.id === this.threadId || m.threadId === this.threadId;
  }

  /** The thread's root, once loaded. */
  get root(): Item | undefined {
    return this.threadId === null ? undefined : this.find(this.threadId);
  }

  find(id: string): Item | undefined {
    const i = lowerBound(this.items, id);
    return this.items[i]?.id === id ? this.items[i] : undefined;
  }

  /** The newest page (the first load, or back to live). A call while one is on its way, or
   * while a window is (a jump), waits for that. */
  loadLatest(): Promise<void> {
    if (this.windowLoad) return this.windowLoad.then(() => undefined);
    if (!this.latestLoad) {
      const epoch = this.epoch;
      this.latestLoad = this.fetchLatest().finally(() => {
        if (epoch === this.epoch) this.latestLoad = null;
      });
    }
    return this.latestLoad;
  }

  private async fetchLatest(): Promise<void> {
    const subscriptions = this.subscriptions;
    const since = this.changes;
    const epoch = this.epoch;
    try {
      // The page carried or asked for as it started (`firstScreen.ts`), if this is its channel:
      // only before the channel's first subscription, which then catches up on what came after.
      const early = subscriptions === 0;
      const page = await api.messages(this.channelId, PAGE_SIZE, undefined, this.threadId ?? undefined, undefined, early);
      if (epoch !== this.epoch) return;
      this.hasOlder = page.length === PAGE_SIZE;
      this.merge(page, since);
      this.error = null;
    } catch (error) {
      if (epoch === this.epoch) this.error = (error as Error).message;
    } finally {
      if (epoch === this.epoch) this.loaded = true;
    }
    if (epoch !== this.epoch) return;
    // Subscribed while the page was on its way: what was stored between the two came in
    // neither, so it is fetched now.
    if (this.subscriptions !== subscriptions) await this.catchUp();
  }

  /**
   * The server confirmed the channel's subscription (first, or again after a reconnect).
   * A message stored after the history was fetched but before this point came by neither
   * road: a reply ending while the page loads would be lost. So the timeline catches up.
   */
  subscribed(): void {
    this.subscriptions++;
    // A detached window pages forward to the live end, which brings what it missed.
    if (this.loaded && this.live) void this.catchUp();
  }

  /** The socket was closed for a catch-up back to `boundary`: the next one pages back to it. */
  missed(boundary: string): void {
    this.missedAfter = catchUpBound(this.missedAfter, boundary);
    this.misses++;
  }

  /** The page before the oldest loaded: `limit` up to 200, larger ahead of a fast scroll.
   * A call while one is on its way waits for that one. */
  loadOlder(limit = PAGE_SIZE): Promise<void> {
    if (this.olderLoad) return this.olderLoad;
    if (!this.hasOlder || this.oldestId === null) return Promise.resolve();
    const epoch = this.epoch;
    this.olderLoad = this.fetchOlder(this.oldestId, limit).finally(() => {
      if (epoch === this.epoch) this.olderLoad = null;
    });
    return this.olderLoad;
  }

  private async fetchOlder(before: string, limit: number): Promise<void> {
    this.loadingOlder = true;
    const since = this.changes;
    const epoch = this.epoch;
    try {
      const page = await api.messages(this.channelId, limit, before, this.threadId ?? undefined);
      if (epoch !== this.epoch) return;
      this.hasOlder = page.length === limit;
      this.merge(page, since);
    } catch (error) {
      if (epoch === this.epoch) this.error = (error as Error).message;
    } finally {
      if (epoch === this.epoch) this.loadingOlder = false;
    }
  }

  /** The page after the newest loaded, while detached; a short page means the live end is
   * reached. A call while one is on its way waits for that one. */
  loadNewer(limit = PAGE_SIZE): Promise<void> {
    if (this.newerLoad) return this.newerLoad;
    if (this.live || this.newestId === null) return Promise.resolve();
    const epoch = this.epoch;
    this.newerLoad = this.fetchNewer(this.newestId, limit).finally(() => {
      if (epoch === this.epoch) this.newerLoad = null;
    });
    return this.newerLoad;
  }

  private async fetchNewer(after: string, limit: number): Promise<void> {
    this.loadingNewer = true;
    const since = this.changes;
    const epoch = this.epoch;
    try {
      const page = await api.messages(this.channelId, limit, undefined, this.threadId ?? undefined, after);
      if (epoch !== this.epoch) return;
      this.pagedNewer++;
      if (page.length < limit) this.attach(page, since);
      else this.merge(page, since);
    } catch (error) {
      if (epoch === this.epoch) this.error = (error as Error).message;
    } finally {
      if (epoch === this.epoch) this.loadingNewer = false;
    }
  }

  /** The last page forward is in: live again, with the messages held meanwhile that it does
   * not have (their event came after the server read the page). */
  private attach(page: Message[], since: number): void {
    const held = this.held;
    const heldSince = this.heldSince;
    this.held = [];
    this.heldSince = Infinity;
    this.live = true;
    const newest = page[page.length - 1]?.id ?? this.newestId ?? "";
    // A held message is as it first came: the changes since (a delete, above all) are replayed.
    this.merge(
      page.concat(held.filter((m) => m.id > newest && !this.find(m.id))),
      Math.min(since, heldSince),
    );
  }

  /**
   * Open the timeline around `message` (a search result): if it is not loaded, the page before
   * it, it, and the page after it replace what was held, and the timeline is detached unless
   * that reaches the newest message. Answers whether the message is there now.
   */
  jumpTo(message: Message, limit = PAGE_SIZE): Promise<boolean> {
    if (this.find(message.id)) return Promise.resolve(true);
    const epoch = ++this.epoch;
    const since = this.changes;
    // Meanwhile new messages are held: they belong after the window, not after the old items.
    this.live = false;
    this.loadingOlder = false;
    this.loadingNewer = false;
    const thread = this.threadId ?? undefined;
    const load = Promise.all([
      api.messages(this.channelId, limit, message.id, thread),
      api.messages(this.channelId, limit, undefined, thread, message.id),
    ]).then(
      ([older, newer]) => {
        if (epoch !== this.epoch) return false;
        this.clear();
        this.live = false;
        this.hasOlder = older.length === limit;
        this.error = null;
        const window = [...older, message, ...newer];
        if (newer.length < limit) this.attach(window, since);
        else this.merge(window, since);
        this.loaded = true;
        return this.find(message.id) !== undefined;
      },
      (error: unknown) => {
        if (epoch !== this.epoch) return false;
        this.error = (error as Error).message;
        // Not found (deleted since), or the network: back to the live end.
        this.toLive();
        return false;
      },
    );
    this.windowLoad = load.finally(() => {
      if (epoch === this.epoch) this.windowLoad = null;
    });
    return this.windowLoad;
  }

  /** Back to the newest messages: what is held is dropped and the newest page loaded (the
   * person sent from a detached timeline, or asked for the latest). */
  toLive(): Promise<void> {
    if (this.live && !this.windowLoad) return Promise.resolve();
    this.epoch++;
    this.windowLoad = null;
    this.held = [];
    this.heldSince = Infinity;
    this.clear();
    this.live = true;
    this.hasOlder = true;
    this.loaded = false;
    return this.loadLatest();
  }

  /** Forget every row and where paging stood (the items are about to be replaced); what is
   * held stays, for the caller to merge or drop. */
  private clear(): void {
    this.olderLoad = null;
    this.newerLoad = null;
    this.latestLoad = null;
    this.oldestId = null;
    this.newestId = null;
    this.missedAfter = null;
    this.orphanTools.clear();
    this.pending.clear();
    this.seqs.clear();
    this.loadingOlder = false;
    this.loadingNewer = false;
    this.items = [];
  }

  /** After a reconnect: fetch back until the newest id known (or an outage's boundary, if
   * earlier: `missed`), so nothing is missed. It is
   * started without being awaited (on a subscription), so it handles its own failure: a 401
   * has already sent the page back to the login screen (a logout while the channel loaded),
   * and a server gone away again is caught up with at the socket's next subscription. What
   * the timeline shows stays as it is. */
  async catchUp(): Promise<void> {
    if (!this.loaded || !this.live) return;
    try {
      await this.fetchMissed();
    } catch {
      // see above
    }
  }

  private async fetchMissed(): Promise<void> {
    const misses = this.misses;
    const bound = catchUpBound(this.newestId, this.missedAfter);
    const since = this.changes;
    const pages: Message[][] = [];
    let before: string | undefined;
    let complete = false;
    let reached = false;
    for (let i = 0; i < CATCH_UP_PAGES && !reached; i++) {
      const page = await api.messages(this.channelId, 200, before, this.threadId ?? undefined);
      pages.unshift(page);
      complete = page.length < 200;
      reached = complete || bound === null || page[0].id <= bound;
      before = page[0]?.id;
    }
    const fetched = pages.flat();
    if (!reached) {
      // Further behind than the pages reach: the rows older than them are past a gap, so they
      // go, and scrolling up pages them in again, as after a first load.
      this.epoch++;
      this.olderLoad = null;
      this.loadingOlder = false;
      this.items = this.items.filter((i) => i.id >= fetched[0].id);
      this.oldestId = null;
      this.hasOlder = true;
    }
    // What was deleted while the socket was down: known rows in the range fetched, now absent
    // (not newer ones: a message that came by the socket while the pages were on their way).
    const from = complete ? "" : (fetched[0]?.id ?? "\uffff");
    const to = fetched[fetched.length - 1]?.id ?? "";
    const present = new Set(fetched.map((m) => m.id));
    const gone = this.items.filter(
      (i) => i.id >= from && i.id <= to && !i.streaming && !present.has(i.id),
    );
    for (const item of gone) this.remove(item.id);
    this.merge(fetched, since);
    // Replies the page was following that ended while the socket was down are stored now.
    for (const item of this.items) {
      if (item.streaming && fetched.some((m) => m.id === item.id)) item.streaming = false;
    }
    if (this.misses === misses) this.missedAfter = null;
  }

  /** The person's own message, on screen as soon as the server accepted it (optimistic: its
   * broadcast settles into the same row, by id). */
  addSent(id: string, content: string, type: string, metadata: Record<string, unknown>): void {
    // Sent from a window far back: the person goes to the live end, where their message is.
    if (!this.live) void this.toLive();
    if (this.find(id)) return;
    this.merge([
      {
        id,
        channelId: this.channelId,
        agentId: null,
        userId: session.user?.id ?? null,
        content,
        type: type as Message["type"],
        metadata,
        createdAt: new Date().toISOString(),
        threadId: this.threadId,
      },
    ]);
  }

  /** Put stored messages in place: new ones inserted in order, known ones replaced unless a
   * live change reached them after `since` (the change count when their page was asked for). */
  merge(messages: Message[], since = Infinity): void {
    const fresh: Item[] = [];
    for (const m of messages) {
      if (!this.holds(m)) continue;
      if (this.oldestId === null || m.id < this.oldestId) this.oldestId = m.id;
      if (this.newestId === null || m.id > this.newestId) this.newestId = m.id;
      if (isToolRecord(m)) continue;
      const known = this.find(m.id);
      if (!known) fresh.push(reactive(fields(m)));
      else if ((this.changedAt.get(m.id) ?? 0) <= since) this.settle(known, m);
    }
    if (fresh.length) {
      fresh.sort((a, b) => (a.id < b.id ? -1 : 1));
      const first = fresh[0].id;
      const items = this.items;
      if (items.length === 0 || first > items[items.length - 1].id) {
        this.items = items.concat(fresh);
      } else if (fresh[fresh.length - 1].id < items[0].id) {
        this.items = fresh.concat(items);
      } else {
        const next = items.slice();
        for (const item of fresh) next.splice(lowerBound(next, item.id), 0, item);
        this.items = next;
      }
    }
    for (const m of messages) if (isToolRecord(m)) this.attachTool(m);
    for (const item of fresh) this.adoptOrphans(item);
    for (const item of fresh) {
      if ((this.changedAt.get(item.id) ?? 0) <= since) continue;
      for (const change of this.recent.get(item.id) ?? []) this.apply(change);
    }
  }

  /** The answer to the person's own edit. A live change that reached the row after the edit
   * was sent (`since`, from `changeCount`) is as new as the answer or newer (a reaction the
   * answer does not have): then only the edit's text is taken, unless a newer one is shown. */
  answered(m: Message, since: number): void {
    const known = this.find(m.id);
    if (!known || known.deleted) return;
    if ((this.changedAt.get(m.id) ?? 0) <= since) this.settle(known, m);
    else if (m.editedAt && (!known.editedAt || m.editedAt > known.editedAt)) {
      Object.assign(known, { content: m.content, editedAt: m.editedAt });
    }
  }

  /** The count of live changes so far, for `answered`. */
  get changeCount(): number {
    return this.changes;
  }

  /** An edit, a reaction count or a thread summary changed (`message_updated`). A tombstone
   * whose last reply went is gone. */
  update(m: Message): void {
    if (!this.holds(m)) return;
    const known = this.find(m.id);
    if (m.deleted && !m.thread?.replyCount) {
      if (known) this.drop(m.id);
      return;
    }
    if (known) this.settle(known, m);
  }

  /** A message was deleted: a root that still has replies stays as a tombstone. */
  remove(id: string): void {
    const item = this.find(id);
    if (!item) return;
    const isRoot = this.threadId === id || this.threadId === null;
    if (isRoot && item.thread && item.thread.replyCount > 0) {
      Object.assign(item, { content: "", deleted: true, reactions: [], editedAt: null, tools: [] });
      return;
    }
    this.drop(id);
  }

  private drop(id: string): void {
    this.items = this.items.filter((i) => i.id !== id);
    this.pending.delete(id);
    this.seqs.delete(id);
  }

  /** A live change, as it came or again on a late page's message (`recent`). */
  private apply(change: Change): void {
    switch (change.type) {
      case "message_updated":
        this.update(change.data);
        break;
      case "message_deleted":
        this.remove(change.data.id);
        break;
      default: {
        const { messageId, emoji, userId } = change.data;
        this.react(messageId, emoji, userId, change.type === "reaction_added");
      }
    }
  }

  /** Kept for a page on its way (`recent`): the newest `RECENT_CAP` messages' changes. An
   * update carries the whole message and a delete is final, so either replaces what came
   * before it; a person's reaction with an emoji replaces their earlier one with it. What is
   * kept of a message is its last update or delete and each person's last reactions since. */
  private keep(id: string, change: Change): void {
    const changes = isReaction(change)
      ? (this.recent.get(id) ?? []).filter(
          (c) => !isReaction(c) || c.data.emoji !== change.data.emoji || c.data.userId !== change.data.userId,
        )
      : [];
    this.recent.delete(id);
    changes.push(change);
    this.recent.set(id, changes);
    if (this.recent.size > RECENT_CAP) this.recent.delete(this.recent.keys().next().value!);
  }

  /** A reaction added or removed, by anyone (the person's own toggle included). */
  react(messageId: string, emoji: string, userId: string, add: boolean): void {
    const item = this.find(messageId);
    if (item) item.reactions = applyReaction(item.reactions, emoji, userId, add);
  }

  /** The person's newest message here that they may edit (Up in an empty composer). */
  lastOwn(userId: string | undefined): Item | undefined {
    for (let i = this.items.length - 1; i >= 0; i--) {
      const item = this.items[i];
      if (item.userId === userId && item.type === "text" && !item.deleted) return item;
    }
    return undefined;
  }

  /** As `lastOwn`, paging back (up to `pages` pages of 200) when it is older than what is
   * loaded: Up in the composer reaches it however much others wrote since. */
  async findLastOwn(userId: string | undefined, pages = 5): Promise<Item | undefined> {
    for (let i = 0; ; i++) {
      const mine = this.lastOwn(userId);
      if (mine || i === pages || !this.hasOlder) return mine;
      const oldest = this.oldestId;
      await this.loadOlder(200);
      if (this.oldestId === oldest) return undefined;
    }
  }

  private settle(item: Item, m: Message): void {
    this.pending.delete(m.id);
    this.seqs.delete(m.id);
    Object.assign(item, fields(m), { tools: item.tools });
  }

  private adoptOrphans(item: Item): void {
    const orphans = this.orphanTools.get(item.id);
    if (!orphans) return;
    this.orphanTools.delete(item.id);
    for (const m of orphans) this.attachTool(m);
  }

  private attachTool(m: Message): void {
    const replyId = typeof m.metadata.replyId === "string" ? m.metadata.replyId : null;
    if (replyId === null) return;
    const reply = this.find(replyId);
    if (!reply) {
      const list = this.orphanTools.get(replyId) ?? [];
      if (!list.some((o) => o.id === m.id)) list.push(m);
      this.orphanTools.set(replyId, list);
      return;
    }
    const callId = typeof m.metadata.callId === "string" ? m.metadata.callId : null;
    const toolName = String(m.metadata.toolName ?? "");
    const status = (m.metadata.status as ToolStatus | undefined) ?? "completed";
    if (m.type === "tool_call") {
      const card =
        reply.tools.find((c) => callId !== null && c.callId === callId) ??
        reply.tools.find((c) => c.callId === null && c.toolName === toolName);
      const args = (m.metadata.arguments as Record<string, unknown> | undefined) ?? {};
      if (card) Object.assign(card, { callId, arguments: args, status });
      else reply.tools.push({ toolName, callId, arguments: args, status, result: null });
    } else {
      const card =
        reply.tools.find((c) => callId !== null && c.callId === callId) ??
        reply.tools.find((c) => c.toolName === toolName && c.result === null);
      if (card) Object.assign(card, { result: m.content, status, callId: card.callId ?? callId });
      else reply.tools.push({ toolName, callId, arguments: {}, status, result: m.content });
    }
  }

  handle(event: ServerEvent): void {
    const changed =
      event.type === "message" || event.type === "message_updated" || event.type === "message_deleted"
        ? event.data.id
        : event.type === "reaction_added" || event.type === "reaction_removed"
          ? event.data.messageId
          : null;
    if (changed !== null) this.changedAt.set(changed, ++this.changes);
    switch (event.type) {
      case "message":
        if (this.live || this.find(event.data.id)) this.merge([event.data]);
        else this.hold(event.data);
        break;
      case "message_updated":
      case "message_deleted":
      case "reaction_added":
      case "reaction_removed":
        this.keep(changed!, event);
        this.apply(event);
        break;
      case "stream_start": {
        const { messageId, agentId } = event.data;
        const known = this.find(messageId);
        if (known && !known.streaming) break;
        // Detached: the reply would show after the gap; it comes stored with the pages forward.
        if (!known && !this.live) break;
        this.pending.delete(messageId);
        this.seqs.set(messageId, 0);
        if (known) {
          known.content = "";
          break;
        }
        const item: Item = reactive({
          id: messageId,
          channelId: this.channelId,
          agentId,
          userId: null,
          content: "",
          type: "text",
          metadata: {},
          createdAt: new Date().toISOString(),
          threadId: this.threadId,
          editedAt: null,
          deleted: false,
          reactions: [],
          thread: null,
          streaming: true,
          error: null,
          cancelled: false,
          interrupted: false,
          tools: [],
        });
        const next = this.items.slice();
        next.splice(lowerBound(next, messageId), 0, item);
        this.items = next;
        this.adoptOrphans(this.find(messageId)!);
        break;
      }
      case "stream_chunk": {
        const { messageId, content, seq } = event.data;
        const last = this.seqs.get(messageId);
        if (last === undefined) break;
        if (seq !== undefined) {
          if (seq <= last) break;
          this.seqs.set(messageId, seq);
        }
        this.pending.set(messageId, (this.pending.get(messageId) ?? "") + content);
        this.frame ||= requestAnimationFrame(() => this.flush());
        break;
      }
      case "stream_end": {
        this.flush();
        const item = this.find(event.data.messageId);
        this.seqs.delete(event.data.messageId);
        if (!item) break;
        item.streaming = false;
        item.error = event.data.error ?? null;
        item.cancelled = event.data.cancelled === true;
        item.interrupted = event.data.interrupted === true;
        break;
      }
      case "tool_call": {
        const item = this.find(event.data.messageId);
        if (!item) break;
        const { toolName, arguments: args, status } = event.data;
        if (status === "calling") {
          item.tools.push({ toolName, callId: null, arguments: args, status, result: null });
        } else {
          const card = item.tools.find((c) => c.toolName === toolName && c.status === "calling");
          if (card) card.status = status;
        }
        break;
      }
      case "tool_result": {
        const item = this.find(event.data.messageId);
        const card = item?.tools.find(
          (c) => c.toolName === event.data.toolName && c.status !== "calling" && c.result === null,
        );
        if (card) card.result = event.data.result;
        break;
      }
    }
  }

  private hold(m: Message): void {
    if (!this.holds(m)) return;
    if (this.held.length === 0) this.heldSince = this.changes;
    this.held.push(m);
    if (this.held.length > HELD_CAP) this.held.splice(0, this.held.length - HELD_CAP);
  }

  /** Apply the buffered stream text: one write per reply per frame. */
  flush(): void {
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
    for (const [id, text] of this.pending) {
      const item = this.find(id);
      if (item?.streaming) item.content += text;
    }
    this.pending.clear();
  }
}

/** Every timeline of the page: one per channel, and one per thread opened (or streaming). */
class Timelines {
  private byChannel = new Map<string, Timeline>();
  private byThread = new Map<string, Timeline>();
  /** Channels whose subscription the server has confirmed on this page, at least once. */
  private confirmed = new Set<string>();
  /** The inline editor open, if any: one at a time on the page. `scope` is where (the
   * channel's list, or a thread's: a root shows in both). */
  editing = $state<{ id: string; scope: string } | null>(null);
  /** A message to bring into view and flash in its timeline's list (a search result opened):
   * the list showing that timeline takes it once the message is loaded. */
  target = $state.raw<{ timeline: Timeline; id: string } | null>(null);

  constructor() {
    socket.on((event) => this.route(event));
    socket.onMissed((boundary) => {
      for (const timeline of this.byChannel.values()) timeline.missed(boundary);
      for (const timeline of this.byThread.values()) timeline.missed(boundary);
    });
  }

  /** The timelines an event of this channel may concern: its own and its open threads'. */
  private *of(channelId: string): Generator<Timeline> {
    const main = this.byChannel.get(channelId);
    if (main) yield main;
    for (const thread of this.byThread.values()) if (thread.channelId === channelId) yield thread;
  }

  route(event: ServerEvent): void {
    switch (event.type) {
      case "subscribed":
        this.confirmed.add(event.data.channelId);
        // The channel's threads catch up with it: a reconnect leaves no gap in an open panel.
        for (const timeline of this.of(event.data.channelId)) timeline.subscribed();
        return;
      case "message": {
        const { channelId, threadId } = event.data;
        const timeline = threadId ? this.byThread.get(threadId) : this.byChannel.get(channelId);
        timeline?.handle(event);
        return;
      }
      case "stream_start": {
        const { channelId, threadId } = event.data;
        // A reply may start where nothing is open yet: keep it, to show it when it is.
        const timeline = threadId ? this.thread(channelId, threadId) : this.get(channelId);
        timeline.handle(event);
        return;
      }
      case "message_updated":
      case "message_deleted":
        for (const timeline of this.of(event.data.channelId)) timeline.handle(event);
        if (event.type === "message_deleted" && this.editing?.id === event.data.id) this.editing = null;
        return;
      case "reaction_added":
      case "reaction_removed":
        for (const timeline of this.of(event.data.channelId)) timeline.handle(event);
        return;
      case "stream_chunk":
      case "stream_end":
      case "tool_call":
      case "tool_result": {
        // These carry no channel: the reply's timeline has it.
        const id = event.data.messageId;
        for (const timeline of [...this.byChannel.values(), ...this.byThread.values()]) {
          if (!timeline.find(id)) continue;
          timeline.handle(event);
          if (event.type === "stream_end") this.ended(timeline, id);
          break;
        }
      }
    }
  }

  /** A reply in the channel on screen ended: the status region says so, once. */
  private ended(timeline: Timeline, messageId: string): void {
    if (timeline.channelId !== channels.active) return;
    const item = timeline.find(messageId);
    if (!item) return;
    const name = (item.agentId && directory.agents[item.agentId]?.name) || "An agent";
    if (item.error) announcer.say(`${name}'s reply failed: ${item.error}`);
    else if (item.cancelled) announcer.say(`${name}'s reply was stopped`);
    else announcer.say(`${name} replied`);
  }

  /** A timeline made after its channel's subscription was confirmed counts it as its own: the
   * events since reach it, and its first page is then asked for, never one the page carried
   * from before the subscription (it would never catch up on what came between). */
  private confirm(timeline: Timeline): void {
    if (this.confirmed.has(timeline.channelId)) timeline.subscribed();
  }

  get(channelId: string): Timeline {
    let timeline = this.byChannel.get(channelId);
    if (!timeline) {
      timeline = new Timeline(channelId);
      this.confirm(timeline);
      this.byChannel.set(channelId, timeline);
    }
    return timeline;
  }

  /** A thread's timeline, by its root's id. */
  thread(channelId: string, threadId: string): Timeline {
    let timeline = this.byThread.get(threadId);
    if (!timeline) {
      timeline = new Timeline(channelId, threadId);
      this.confirm(timeline);
      this.byThread.set(threadId, timeline);
    }
    return timeline;
  }

  /** Whether the person takes part in a thread: wrote its root or a reply (what makes a reply
   * there count as unread, as on the server). Undefined when the page holds neither the root
   * nor a reply of theirs there: only the server can tell. */
  takesPart(channelId: string, threadId: string): boolean | undefined {
    const me = session.user?.id;
    if (me === undefined) return false;
    const root = this.byChannel.get(channelId)?.find(threadId) ?? this.byThread.get(threadId)?.root;
    if (root && (root.userId === me || root.thread?.participantIds.includes(me))) return true;
    if (this.byThread.get(threadId)?.items.some((i) => i.userId === me)) return true;
    return root ? false : undefined;
  }

  /** Where a message the person sent goes: its thread's timeline, or the channel's. */
  forSent(channelId: string, threadId: string | null | undefined): Timeline {
    return threadId ? this.thread(channelId, threadId) : this.get(channelId);
  }

  /** Save an edit; the answer (and the broadcast, in every page) settles the row. */
  async edit(channelId: string, id: string, content: string): Promise<void> {
    const asked = [...this.of(channelId)].map((timeline) => [timeline, timeline.changeCount] as const);
    const message = await api.editMessage(id, content);
    for (const [timeline, since] of asked) timeline.answered(message, since);
  }

  async remove(channelId: string, id: string): Promise<void> {
    await api.deleteMessage(id);
    for (const timeline of this.of(channelId)) timeline.remove(id);
  }

  /** Toggle the person's reaction: shown at once, undone if the server refuses. */
  async toggleReaction(channelId: string, id: string, emoji: string, add: boolean): Promise<void> {
    const me = session.user?.id;
    if (!me) return;
    const apply = (on: boolean) => {
      for (const timeline of this.of(channelId)) timeline.react(id, emoji, me, on);
    };
    apply(add);
    const mark = sessionMark();
    try {
      await (add ? api.react(id, emoji) : api.unreact(id, emoji));
    } catch (error) {
      // Not once the session ended: the timelines are the next session's.
      if (!sessionEnded(mark)) apply(!add);
      throw error;
    }
  }

  reset(): void {
    this.byChannel.clear();
    this.byThread.clear();
    this.editing = null;
    this.target = null;
  }
}

export const timelines = new Timelines();
readState.takesPart = (channelId, threadId) => timelines.takesPart(channelId, threadId);
session.onReset(() => timelines.reset());
