/**
 * The channels a person may see, and how many messages in each they have not read.
 *
 * The page subscribes to every channel it lists, so counts move live. What was last read is
 * kept per user in localStorage (message ids only, nothing secret); counts at load come from
 * one request for all channels (`POST /api/channels/unread`), capped at 50 ("50+").
 */
import { untrack } from "svelte";
import { api } from "../api";
import { router } from "../router.svelte";
import { socket } from "../socket.svelte";
import type { Channel, Message } from "../types";
import { session } from "./session.svelte";

/** Counts stop here ("50+"): a count is a nudge, not a statistic. */
export const UNREAD_CAP = 50;

/** Thread replies are left out, as on the server (they are read in their thread). */
function counts(m: Message): boolean {
  return (
    (m.type === "text" || m.type === "image" || m.type === "file") &&
    m.userId !== session.user?.id &&
    !m.threadId
  );
}

class Channels {
  list = $state<Channel[]>([]);
  loaded = $state(false);
  unread = $state<Record<string, number>>({});
  /** The newest message of each channel's loaded timeline (what opening it reads up to). */
  private newest: Record<string, string | undefined> = {};
  /** The channel on screen (the address names it, a thread's too): its messages are read as
   * they arrive, while the tab is seen. Derived from the route, not copied in by the shell. */
  get active(): string | null {
    const route = router.route;
    return route.name === "channel" || route.name === "thread" ? route.params.channelId : null;
  }
  /** Whether the tab is seen: a message arriving in a hidden tab is not read yet. */
  visible = $state(document.visibilityState === "visible");
  private lastRead: Record<string, string> = {};

  constructor() {
    socket.on((event) => {
      if (event.type !== "message") return;
      const m = event.data;
      if (!counts(m)) return;
      if (m.channelId === this.active && this.visible) {
        this.markRead(m.channelId, m.id);
      } else if (m.id > (this.lastRead[m.channelId] ?? "")) {
        this.unread[m.channelId] = (this.unread[m.channelId] ?? 0) + 1;
      }
    });
    socket.onReconnect(() => void this.load());
    document.addEventListener("visibilitychange", () => {
      this.visible = document.visibilityState === "visible";
    });
    // Opening a channel, or seeing the tab again, reads it up to its newest loaded message: a
    // side effect of the route and the tab (it writes the read marker), not a copy of state.
    $effect.root(() => {
      $effect(() => {
        const id = this.active;
        if (id && this.visible) untrack(() => this.clear(id, this.newest[id]));
      });
    });
  }

  /** A channel's timeline changed (its messages store tells): on screen, it is read. */
  seen(channelId: string, newestId: string | undefined): void {
    this.newest[channelId] = newestId;
    if (channelId === this.active) this.clear(channelId, newestId);
  }

  get(id: string): Channel | undefined {
    return this.list.find((c) => c.id === id);
  }

  private storageKey(): string {
    return `palaver:lastRead:${session.user?.id ?? ""}`;
  }

  async load(): Promise<void> {
    const list = await api.channels();
    list.sort((a, b) => a.name.localeCompare(b.name));
    this.list = list;
    this.loaded = true;
    try {
      this.lastRead = JSON.parse(localStorage.getItem(this.storageKey()) ?? "{}");
    } catch {
      this.lastRead = {};
    }
    for (const channel of list) socket.subscribe(channel.id);
    await this.countUnread(list.filter((c) => c.id !== this.active));
  }

  /** One request for every channel's count (`POST /api/channels/unread`), not one each. */
  private async countUnread(list: Channel[]): Promise<void> {
    if (!list.length) return;
    const after: Record<string, string | null> = {};
    for (const channel of list) after[channel.id] = this.lastRead[channel.id] ?? null;
    let answer: Awaited<ReturnType<typeof api.unread>>;
    try {
      answer = await api.unread(after, UNREAD_CAP);
    } catch {
      return; // counts stay as they were; the next load or reconnect asks again
    }
    for (const [channelId, { count, newestId }] of Object.entries(answer)) {
      if (this.lastRead[channelId] === undefined) {
        // First visit from this browser: what is there now counts as read (in an empty
        // channel, "" is before every id: whatever comes later counts).
        this.lastRead[channelId] = newestId ?? "";
        this.saveLastRead();
        continue;
      }
      if (channelId !== this.active || !this.visible) this.unread[channelId] = count;
    }
  }

  add(channel: Channel): void {
    if (!this.get(channel.id)) {
      this.list = [...this.list, channel].sort((a, b) => a.name.localeCompare(b.name));
    }
    socket.subscribe(channel.id);
  }

  markRead(channelId: string, messageId: string): void {
    if (messageId <= (this.lastRead[channelId] ?? "")) return;
    this.lastRead[channelId] = messageId;
    this.saveLastRead();
  }

  private saveLastRead(): void {
    try {
      localStorage.setItem(this.storageKey(), JSON.stringify(this.lastRead));
    } catch {
      // storage full or disabled: counts still move for this page
    }
  }

  /** The person looks at the channel: everything in it up to `newestId` is read. Nothing is
   * read while the tab is hidden. */
  clear(channelId: string, newestId?: string): void {
    if (!this.visible) return;
    this.unread[channelId] = 0;
    if (newestId) this.markRead(channelId, newestId);
  }

  reset(): void {
    this.list = [];
    this.loaded = false;
    this.unread = {};
    this.newest = {};
    this.lastRead = {};
  }
}

export const channels = new Channels();
session.onReset(() => channels.reset());
