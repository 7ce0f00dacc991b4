/**
 * The channels a person may see, kept live: `channel_created`, `channel_updated` and
 * `channel_removed` reach every page of the person without a subscription (SPEC 12). The page
 * subscribes to every channel it lists, so messages and counts move live; the read state of
 * each (marker, unread and mention counts) is the server's, held by `readState`.
 */
import { api, sessionEnded, sessionMark } from "../api";
import { channelPath, router } from "../router.svelte";
import { socket } from "../socket.svelte";
import type { Channel, ListedChannel } from "../types";
import { announcer } from "./announcer.svelte";
import { readState } from "./readState.svelte";
import { session } from "./session.svelte";

/** The channel's own fields, without the caller's read state. */
function plain(c: Channel | ListedChannel): Channel {
  const { id, name, type, agentIds, memberIds, createdAt, updatedAt } = c;
  return { id, name, type, agentIds, memberIds, createdAt, updatedAt };
}

function byName(a: Channel, b: Channel): number {
  return a.name.localeCompare(b.name);
}

class Channels {
  list = $state<Channel[]>([]);
  loaded = $state(false);
  /** Said on screen when the channel the person was in went away (removed, left, deleted). */
  notice = $state<string | null>(null);
  private doing = new Map<string, "left" | "deleted">();
  /** Channels whose subscription the server has not confirmed since the list was read. */
  private unconfirmed = new Set<string>();
  /** Live changes counted, and the count at each channel's latest: a list asked for before a
   * channel was created, changed or removed must not undo that on landing. */
  private changes = 0;
  private changedAt = new Map<string, number>();
  /** The channel on screen (the address names it, a thread's too). */
  get active(): string | null {
    const route = router.route;
    return route.name === "channel" || route.name === "thread" ? route.params.channelId : null;
  }

  constructor() {
    socket.on((event) => {
      switch (event.type) {
        case "channel_created": {
          const { lastReadId, unreadCount, mentionCount } = event.data;
          if (!this.get(event.data.id)) readState.set(event.data.id, { lastReadId, unreadCount, mentionCount });
          this.add(event.data);
          break;
        }
        case "channel_updated":
          this.update(event.data);
          break;
        case "channel_removed":
          this.removed(event.data.id);
          break;
        case "subscribed":
          this.confirmed(event.data.channelId);
          break;
      }
    });
    socket.onReconnect(() => void this.reload());
  }

  /** After a reconnect: the list again; a server that answers the socket but not yet the
   * request (still starting, or gone again) is asked again a little later, a few times. */
  private async reload(attempt = 0, mark = sessionMark()): Promise<void> {
    // A retry set before the session ended has nothing left to do.
    if (sessionEnded(mark)) return;
    try {
      await this.load();
    } catch {
      if (attempt < 5 && !sessionEnded(mark)) setTimeout(() => void this.reload(attempt + 1, mark), 1000 * 2 ** attempt);
    }
  }

  get(id: string): Channel | undefined {
    return this.list.find((c) => c.id === id);
  }

  /** The list with each channel's read state, in one request (at load and after a reconnect:
   * what changed while the socket was down comes with it). */
  async load(): Promise<void> {
    const since = this.changes;
    const answer = await api.channels();
    // A channel changed live since the list was asked for stays as the change left it.
    const late = (id: string) => (this.changedAt.get(id) ?? 0) > since;
    const answered = new Set(answer.map((c) => c.id));
    const list = answer.filter((c) => !late(c.id));
    const kept = this.list.filter((c) => late(c.id));
    const gone = this.list.filter((c) => !late(c.id) && !answered.has(c.id));
    this.list = [...list.map(plain), ...kept].sort(byName);
    // An event says nothing of the read state: the answer's counts stand for a channel it
    // has (all but the ones removed meanwhile); one created meanwhile keeps the page's.
    const counted = answer.filter((c) => !late(c.id) || kept.some((k) => k.id === c.id));
    const created = kept.filter((c) => !answered.has(c.id)).map((c) => c.id);
    readState.load(counted, created);
    this.loaded = true;
    for (const channel of [...list, ...kept]) {
      this.unconfirmed.add(channel.id);
      socket.subscribe(channel.id);
    }
    for (const channel of gone) this.removed(channel.id, channel);
  }

  private changed(id: string): void {
    this.changedAt.set(id, ++this.changes);
  }

  /** A message stored between the list's answer and the subscription's confirmation came by
   * neither road, so the read state asks for the counts again once it is confirmed. */
  private confirmed(channelId: string): void {
    if (this.unconfirmed.delete(channelId)) readState.subscribed(channelId);
  }

  add(channel: Channel): void {
    this.changed(channel.id);
    const known = this.get(channel.id);
    if (known) this.update(channel);
    else this.list = [...this.list, plain(channel)].sort(byName);
    if (!readState.states[channel.id]) readState.set(channel.id, { lastReadId: null, unreadCount: 0, mentionCount: 0 });
    if (!known) this.unconfirmed.add(channel.id);
    socket.subscribe(channel.id);
  }

  /** A rename, or a change of agents or members: only channels the page lists. */
  update(channel: Channel): void {
    if (!this.get(channel.id)) return;
    this.changed(channel.id);
    this.list = this.list.map((c) => (c.id === channel.id ? plain(channel) : c)).sort(byName);
  }

  /**
   * The person can no longer read the channel. If it is on screen, the page goes to the first
   * channel left (or home) and says why. `why` words the notice when the person did it.
   */
  removed(id: string, was?: Channel, why = this.doing.get(id)): void {
    const channel = this.get(id) ?? was;
    this.changed(id);
    this.list = this.list.filter((c) => c.id !== id);
    socket.unsubscribe(id);
    readState.drop(id);
    if (!channel || this.active !== id) {
      if (why && channel) announcer.say(this.words(channel, why));
      return;
    }
    this.notice = this.words(channel, why);
    announcer.say(this.notice);
    const next = this.list[0];
    router.go(next ? channelPath(next.id) : "/", true);
  }

  private words(channel: Channel, why?: "left" | "deleted"): string {
    const name = channel.type === "dm" ? channel.name : `#${channel.name}`;
    if (why === "left") return `You left ${name}.`;
    if (why === "deleted") return `${name} was deleted.`;
    return `${name} was deleted, or you are no longer a member of it.`;
  }

  /** The owner deletes a channel (after a confirmation naming it). */
  async remove(id: string): Promise<void> {
    await this.act(id, "deleted", () => api.deleteChannel(id));
  }

  /** A guest leaves a channel (after a confirmation). */
  async leave(id: string): Promise<void> {
    await this.act(id, "left", () => api.leaveChannel(id));
  }

  /** The person's own leave or delete: `channel_removed` may come before the answer, and the
   * notice must still say what they did. */
  private async act(id: string, why: "left" | "deleted", call: () => Promise<unknown>): Promise<void> {
    this.doing.set(id, why);
    try {
      await call();
      this.removed(id, undefined, why);
    } finally {
      this.doing.delete(id);
    }
  }

  reset(): void {
    this.list = [];
    this.loaded = false;
    this.notice = null;
    this.unconfirmed.clear();
    this.changedAt.clear();
  }
}

export const channels = new Channels();
session.onReset(() => channels.reset());
