/**
 * The channels a person may see, and how many messages in each they have not read.
 *
 * The page subscribes to every channel it lists, so counts move live. What was last read is
 * kept per user in localStorage (message ids only, nothing secret); counts at load come from
 * the newest page of each channel, so they stop at one page ("50+").
 */
import { api } from "../api";
import { socket } from "../socket.svelte";
import type { Channel, Message } from "../types";
import { PAGE_SIZE } from "./messages.svelte";
import { session } from "./session.svelte";

function counts(m: Message): boolean {
  return (
    (m.type === "text" || m.type === "image" || m.type === "file") &&
    m.userId !== session.user?.id
  );
}

class Channels {
  list = $state<Channel[]>([]);
  loaded = $state(false);
  unread = $state<Record<string, number>>({});
  /** The channel on screen: its messages are read as they arrive. */
  active = $state<string | null>(null);
  private lastRead: Record<string, string> = {};

  constructor() {
    socket.on((event) => {
      if (event.type !== "message") return;
      const m = event.data;
      if (!counts(m)) return;
      if (m.channelId === this.active && document.visibilityState === "visible") {
        this.markRead(m.channelId, m.id);
      } else if (m.id > (this.lastRead[m.channelId] ?? "")) {
        this.unread[m.channelId] = (this.unread[m.channelId] ?? 0) + 1;
      }
    });
    socket.onReconnect(() => void this.load());
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible" && this.active) this.clear(this.active);
    });
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

  private async countUnread(list: Channel[]): Promise<void> {
    const queue = [...list];
    const worker = async () => {
      for (let channel = queue.shift(); channel; channel = queue.shift()) {
        try {
          const page = await api.messages(channel.id, PAGE_SIZE);
          const seen = this.lastRead[channel.id];
          if (seen === undefined) {
            // First visit from this browser: what is there now counts as read.
            if (page.length) this.markRead(channel.id, page[page.length - 1].id);
            continue;
          }
          this.unread[channel.id] = page.filter((m) => m.id > seen && counts(m)).length;
        } catch {
          // A channel that vanished meanwhile: nothing to count.
        }
      }
    };
    await Promise.all([worker(), worker(), worker()]);
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
    localStorage.setItem(this.storageKey(), JSON.stringify(this.lastRead));
  }

  /** The person looks at the channel: everything in it up to `newestId` is read. */
  clear(channelId: string, newestId?: string): void {
    this.unread[channelId] = 0;
    if (newestId) this.markRead(channelId, newestId);
  }

  reset(): void {
    this.list = [];
    this.loaded = false;
    this.unread = {};
    this.active = null;
    this.lastRead = {};
  }
}

export const channels = new Channels();
session.onReset(() => channels.reset());
