/**
 * What the person has read of each channel, as the server keeps it (SPEC 12): the read marker,
 * the unread and mention counts of every channel, from `GET /api/channels` (through the
 * channels store) and kept live by `message`, `mention` and `read_updated` events.
 *
 * The marker moves when the person has seen the messages (the tab visible, the rows scrolled
 * into view: lib/readTracker.svelte.ts tells `seen`), never when they arrive. The page moves
 * its own counts at once and posts the marker later, batched (lib/readQueue.ts); the answer,
 * and `read_updated` from the person's other pages, give the exact counts.
 */
import { api } from "../api";
import { after, counted, judged, newer, readUpTo, type Countable } from "../readCounts";
import { ReadQueue } from "../readQueue";
import { Recount } from "../recount";
import { router } from "../router.svelte";
import { socket } from "../socket.svelte";
import type { ListedChannel, Message, ReadState } from "../types";
import { session } from "./session.svelte";

/** Where the person had read a channel when they opened it: the "new messages" line's place
 * for the visit (it stays while they read on, as in Slack and Zulip). */
export interface Visit {
  channelId: string;
  marker: string | null;
  unread: number;
}

/** How many answers in a row a channel's counts may set aside (see `setAside`). */
const MAX_SET_ASIDE = 2;

const EMPTY: ReadState = { lastReadId: null, unreadCount: 0, mentionCount: 0 };

class ReadStates {
  states = $state<Record<string, ReadState>>({});
  visit = $state<Visit | null>(null);
  /** Whether the tab is seen: nothing is read while it is hidden. */
  visible = $state(typeof document === "undefined" || document.visibilityState === "visible");
  /** Whether the person takes part in a thread (set by the messages store, which knows the
   * threads' roots): a reply there counts as unread. Undefined when the page cannot tell (it
   * does not hold the root): the server is asked. */
  takesPart: (channelId: string, threadId: string) => boolean | undefined = () => false;
  /** Per channel, the messages counted live after the marker (id: whether a mention), so that
   * a message told twice (`message`, then `mention`) counts once and reading can uncount it. */
  private known = new Map<string, Map<string, boolean>>();
  private queue = new ReadQueue((channelId, messageId) => this.post(channelId, messageId));
  /** Channels with a reply the page could not judge, asked of the server together. */
  private recount = new Recount((channelIds) => this.ask(channelIds), 1000, 1000);
  /** Channels whose subscription the server confirmed: a message stored between the list's
   * answer and the confirmation came by neither road, so their counts are asked again. */
  private confirmed = new Recount((channelIds) => this.ask(channelIds), 250);
  /** Per channel, how many answers in a row were set aside for a message counted while they
   * were on their way: after `MAX_SET_ASIDE`, the next one stands (a channel busier than a
   * message per round trip would otherwise be asked for ever). */
  private setAside = new Map<string, number>();
  /** Per channel, the replies after the marker the page could not judge: the server's answer
   * counts them, so a later `mention` of one (an edit naming the person) is asked again, not
   * added to a count that may hold it already. */
  private unsure = new Map<string, Set<string>>();
  /** Per channel with a marker's post on its way: whether a message was counted meanwhile (the
   * answer's counts may predate it, so the counts are asked again instead). */
  private posting = new Map<string, boolean>();
  /** Moves on at logout, so that an answer asked for before it is not applied after. */
  private generation = 0;

  constructor() {
    socket.on((event) => {
      switch (event.type) {
        case "message":
          this.arrived(event.data);
          break;
        case "mention": {
          const { channelId, messageId } = event.data;
          this.count(channelId, messageId, true);
          break;
        }
        case "read_updated": {
          const { channelId, ...state } = event.data;
          // Counts that may predate a message counted since (this page's own post's echo,
          // above all) wait for the counts asked again (see `post`).
          if (this.posting.get(channelId) || this.recount.pending(channelId)) break;
          this.apply(channelId, state);
          break;
        }
      }
    });
    if (typeof document !== "undefined") {
      document.addEventListener("visibilitychange", () => {
        this.visible = document.visibilityState === "visible";
        // Leaving the tab sends what was read so far, so that another device sees it.
        if (!this.visible) void this.queue.flush();
      });
      window.addEventListener("pagehide", () => void this.queue.flush());
    }
    // Opening a channel fixes where its "new messages" line goes for the visit.
    $effect.root(() => {
      $effect(() => {
        const route = router.route;
        const id = route.name === "channel" || route.name === "thread" ? route.params.channelId : null;
        const state = id ? this.states[id] : undefined;
        if (id === null) this.visit = null;
        else if (state && this.visit?.channelId !== id) {
          this.visit = { channelId: id, marker: state.lastReadId, unread: state.unreadCount };
        }
      });
    });
  }

  get(channelId: string): ReadState {
    return this.states[channelId] ?? EMPTY;
  }

  /** All unread messages, for the title. */
  get total(): number {
    let sum = 0;
    for (const state of Object.values(this.states)) sum += state.unreadCount;
    return sum;
  }

  /** The channel list as the server answered it (at load and after a reconnect); `kept` are
   * channels the page gained live while it was on its way, whose state stays as it is. */
  load(list: ListedChannel[], kept: string[] = []): void {
    const next: Record<string, ReadState> = {};
    for (const id of kept) if (this.states[id]) next[id] = this.states[id];
    for (const c of list) {
      next[c.id] = { lastReadId: c.lastReadId, unreadCount: c.unreadCount, mentionCount: c.mentionCount };
    }
    this.states = next;
    for (const id of this.known.keys()) if (!kept.includes(id)) this.known.delete(id);
  }

  /** The server confirmed the subscription of a channel the list named: its counts are asked
   * again, with every channel confirmed close together, in one request. */
  subscribed(channelId: string): void {
    this.confirmed.add(channelId);
  }

  /** A channel the person gained (`channel_created`), or one the page did not have. */
  set(channelId: string, state: ReadState): void {
    this.states[channelId] = state;
    this.known.delete(channelId);
  }

  drop(channelId: string): void {
    delete this.states[channelId];
    this.known.delete(channelId);
    this.unsure.delete(channelId);
    this.queue.drop(channelId);
    this.recount.drop(channelId);
    this.confirmed.drop(channelId);
    this.setAside.delete(channelId);
  }

  /** The server's state of a channel (an answer, `read_updated`): markers never move back. */
  apply(channelId: string, state: ReadState): void {
    const current = this.states[channelId];
    if (!current || !newer(state, current)) return;
    this.states[channelId] = {
      lastReadId: state.lastReadId,
      unreadCount: state.unreadCount,
      mentionCount: state.mentionCount,
    };
    const known = this.known.get(channelId);
    if (known && state.lastReadId !== null) {
      for (const id of known.keys()) if (id <= state.lastReadId) known.delete(id);
    }
    const unsure = this.unsure.get(channelId);
    if (unsure && state.lastReadId !== null) {
      for (const id of unsure) if (id <= state.lastReadId) unsure.delete(id);
    }
  }

  private arrived(m: Message): void {
    const how = judged(m, session.user?.id, (threadId) => this.takesPart(m.channelId, threadId));
    if (how === "unsure") {
      // A reply in a thread whose root the page does not hold (an old thread, a channel not
      // open): the server's counts say whether it counts, asked once for all such replies.
      const state = this.states[m.channelId];
      if (state && after(m.id, state.lastReadId)) {
        let ids = this.unsure.get(m.channelId);
        if (!ids) this.unsure.set(m.channelId, (ids = new Set()));
        ids.add(m.id);
        this.recount.add(m.channelId);
      }
    } else if (how) this.count(m.channelId, m.id, how.mention);
  }

  /** The server's counts of channels the page could not keep: each replaces the page's where
   * its marker is not behind the page's own (a read not posted yet stays; its post's answer
   * brings the counts). */
  private async ask(channelIds: ReadonlySet<string>): Promise<void> {
    const generation = this.generation;
    const list = await api.channels();
    if (generation !== this.generation) return;
    for (const c of list) {
      if (!channelIds.has(c.id)) continue;
      // A channel counted into while this was on its way is asked again: this answer may
      // predate that message, and would take it off the count until the next one.
      if (this.recount.pending(c.id) || this.confirmed.pending(c.id)) {
        const times = (this.setAside.get(c.id) ?? 0) + 1;
        if (times <= MAX_SET_ASIDE) {
          this.setAside.set(c.id, times);
          continue;
        }
        this.recount.drop(c.id);
        this.confirmed.drop(c.id);
      }
      this.setAside.delete(c.id);
      this.apply(c.id, { lastReadId: c.lastReadId, unreadCount: c.unreadCount, mentionCount: c.mentionCount });
    }
  }

  /** A message that counts arrived: once, and only after the marker. */
  private count(channelId: string, messageId: string, mention: boolean): void {
    const state = this.states[channelId];
    if (!state || !after(messageId, state.lastReadId)) return;
    let known = this.known.get(channelId);
    if (!known) this.known.set(channelId, (known = new Map()));
    const was = known.get(messageId);
    if (was === undefined && this.unsure.get(channelId)?.has(messageId)) {
      this.recount.add(channelId);
      return;
    }
    // An answer on its way for this channel may or may not hold this message (or its mention):
    // ask again after.
    if (was === undefined || (mention && !was)) {
      if (this.recount.inFlight(channelId)) this.recount.add(channelId);
      if (this.confirmed.inFlight(channelId)) this.confirmed.add(channelId);
      if (this.posting.has(channelId)) this.posting.set(channelId, true);
    }
    if (was === undefined) {
      known.set(messageId, mention);
      state.unreadCount += 1;
      if (mention) state.mentionCount += 1;
    } else if (mention && !was) {
      known.set(messageId, true);
      state.mentionCount += 1;
    }
  }

  /**
   * The person has seen the channel up to `messageId` (a stored message of it): its counts move
   * at once by what the page knows (`items`: messages it holds, such as the channel's loaded
   * timeline), and the marker goes to the server with the next batch. Nothing moves while the
   * tab is hidden.
   */
  seen(channelId: string, messageId: string, items: Iterable<Message | Countable> = []): void {
    if (!this.visible) return;
    const state = this.states[channelId];
    if (!state || !after(messageId, state.lastReadId)) return;
    const known = new Map(this.known.get(channelId) ?? []);
    const me = session.user?.id;
    for (const item of items) {
      if (!after(item.id, state.lastReadId) || item.id > messageId || known.has(item.id)) continue;
      const how = counted(item, me, (threadId) => this.takesPart(channelId, threadId) ?? false);
      if (how) known.set(item.id, how.mention);
    }
    this.states[channelId] = readUpTo(state, messageId, known);
    const mine = this.known.get(channelId);
    if (mine) for (const id of mine.keys()) if (id <= messageId) mine.delete(id);
    this.queue.add(channelId, messageId);
  }

  /** The message the "new messages" line goes above in the channel's list: the first one that
   * counted after where the person had read when they opened the channel; none when nothing
   * was unread then. */
  lineBefore(channelId: string, items: Countable[]): string | null {
    const visit = this.visit;
    if (visit?.channelId !== channelId || visit.unread === 0) return null;
    const me = session.user?.id;
    for (const item of items) {
      if (after(item.id, visit.marker) && counted(item, me)) return item.id;
    }
    return null;
  }

  /** The newest message the page counted in a channel (a reply in a thread, say), if any. */
  newestKnown(channelId: string): string | undefined {
    let newest: string | undefined;
    for (const id of this.known.get(channelId)?.keys() ?? []) if (newest === undefined || id > newest) newest = id;
    return newest;
  }

  private async post(channelId: string, messageId: string): Promise<void> {
    if (!this.states[channelId]) return;
    const generation = this.generation;
    this.posting.set(channelId, false);
    let answer: ReadState;
    let countedMeanwhile = false;
    try {
      answer = await api.markRead(channelId, messageId);
    } finally {
      // The page moved the marker itself when the person read; a message counted since the
      // post left may be missing from the answer's counts, which are asked for again instead
      // (after a failed post too: a `read_updated` set aside meanwhile waits for them).
      if (generation === this.generation) {
        countedMeanwhile = this.posting.get(channelId) ?? false;
        this.posting.delete(channelId);
        if (countedMeanwhile) this.recount.add(channelId);
      }
    }
    if (generation !== this.generation || !this.states[channelId] || countedMeanwhile) return;
    this.apply(channelId, answer);
  }

  reset(): void {
    this.queue.drop();
    this.recount.drop();
    this.confirmed.drop();
    this.setAside.clear();
    this.generation += 1;
    this.posting.clear();
    this.states = {};
    this.visit = null;
    this.known.clear();
    this.unsure.clear();
  }
}

export const readState = new ReadStates();
session.onReset(() => readState.reset());
