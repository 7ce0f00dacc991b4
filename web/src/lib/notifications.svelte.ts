/**
 * Browser notifications for mentions of the person and direct messages, while the tab is
 * hidden. Asked for only from a button (the user menu), never on load. On is each person's
 * own choice (kept per user in localStorage), so another person at the same browser does not
 * get them because the browser's permission was granted once; the person may turn them off.
 * A click focuses the tab and opens the message itself in its channel or thread, brought
 * into view and flashed (`jump.openMessage`), however much was written after it.
 */
import { openMessage } from "./jump";
import { socket } from "./socket.svelte";
import { channels } from "./stores/channels.svelte";
import { directory } from "./stores/directory.svelte";
import { session } from "./stores/session.svelte";
import { counted } from "./readCounts";
import type { Channel, Message } from "./types";

export type Permission = NotificationPermission | "unsupported";

/** How many recent messages are kept to word a `mention` (which carries ids only). */
const RECENT = 100;

function supported(): boolean {
  return typeof window !== "undefined" && "Notification" in window;
}

/** A notification's words: who, where, and the start of what they wrote. */
export function describe(
  m: Pick<Message, "content" | "type">,
  author: string,
  channel: Pick<Channel, "name" | "type"> | undefined,
  mention: boolean,
): { title: string; body: string } {
  const where = channel ? (channel.type === "dm" ? channel.name : `#${channel.name}`) : "a channel";
  const title = mention ? `${author} mentioned you in ${where}` : `${author} in ${where}`;
  const text =
    m.type === "image" ? "sent an image" : m.type === "file" ? "sent a file" : m.content.replace(/\s+/g, " ").trim();
  return { title, body: text.length > 140 ? `${text.slice(0, 139)}…` : text };
}

class Notifier {
  permission = $state<Permission>(supported() ? Notification.permission : "unsupported");
  /** The person's own switch, turned on from the button. */
  on = $state(false);
  private recent = new Map<string, Message>();
  private shown = new Set<string>();

  constructor() {
    socket.on((event) => {
      if (event.type === "message") this.arrived(event.data);
      else if (event.type === "mention") {
        // Its message came first when the page follows the channel; if not, the ids say enough.
        const { messageId, channelId, threadId, from } = event.data;
        const m = this.recent.get(messageId) ?? {
          id: messageId,
          channelId,
          threadId,
          agentId: from?.startsWith("agent_") ? from : null,
          userId: from?.startsWith("agent_") ? null : from,
          content: "",
          type: "text",
          metadata: {},
          createdAt: "",
        };
        this.show(m, true);
      }
    });
  }

  get enabled(): boolean {
    return this.permission === "granted" && this.on;
  }

  private key(): string {
    return `palaver:notifications:${session.user?.id ?? ""}`;
  }

  /** What this browser and this person chose (at login). */
  restore(): void {
    if (supported()) this.permission = Notification.permission;
    try {
      this.on = localStorage.getItem(this.key()) === "on";
    } catch {
      this.on = false;
    }
  }

  /** The button: on (asking the browser first if it has not been asked), or off again. */
  async toggle(): Promise<void> {
    if (!supported()) return;
    if (this.enabled) {
      this.switch(false);
      return;
    }
    if (this.permission !== "granted") this.permission = await Notification.requestPermission();
    this.switch(this.permission === "granted");
  }

  private switch(on: boolean): void {
    this.on = on;
    try {
      if (on) localStorage.setItem(this.key(), "on");
      else localStorage.removeItem(this.key());
    } catch {
      // storage disabled: the switch holds for this page
    }
  }

  private arrived(m: Message): void {
    this.recent.set(m.id, m);
    if (this.recent.size > RECENT) this.recent.delete(this.recent.keys().next().value!);
    // A mention of the person, or any message of a dm channel that counts for them.
    const how = counted(m, session.user?.id, () => true);
    if (!how) return;
    if (how.mention || channels.get(m.channelId)?.type === "dm") this.show(m, how.mention);
  }

  private show(m: Message, mention: boolean): void {
    if (!this.enabled || document.visibilityState !== "hidden" || this.shown.has(m.id)) return;
    this.shown.add(m.id);
    const author = m.agentId ? (directory.agents[m.agentId]?.name ?? "An agent") : directory.personName(m.userId);
    const { title, body } = describe(m, author, channels.get(m.channelId), mention);
    try {
      const note = new Notification(title, { body, tag: m.id });
      note.onclick = () => {
        window.focus();
        // The message itself, brought into view and flashed, as a search result opens.
        void openMessage(m);
        note.close();
      };
    } catch {
      // Some browsers (Android Chrome) only notify through a service worker: nothing then.
    }
  }

  reset(): void {
    this.recent.clear();
    this.shown.clear();
  }
}

export const notifier = new Notifier();
session.onReset(() => notifier.reset());
