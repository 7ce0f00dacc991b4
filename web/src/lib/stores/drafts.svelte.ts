/** What a person has typed in each channel and not sent yet; kept across channel switches and
 * reloads (in localStorage, per user), so text is never lost by moving away or a failed send.
 * Logging out removes them from the browser: the next person at it must not read them. */
import { session, type ResetReason } from "./session.svelte";

class Drafts {
  private texts = $state<Record<string, string>>({});
  private loadedFor: string | null = null;

  private key(): string {
    return `palaver:drafts:${session.user?.id ?? ""}`;
  }

  private ensure(): void {
    const who = session.user?.id ?? "";
    if (this.loadedFor === who) return;
    this.loadedFor = who;
    try {
      this.texts = JSON.parse(localStorage.getItem(this.key()) ?? "{}");
    } catch {
      this.texts = {};
    }
  }

  get(channelId: string): string {
    this.ensure();
    return this.texts[channelId] ?? "";
  }

  set(channelId: string, text: string): void {
    this.ensure();
    if (text) this.texts[channelId] = text;
    else delete this.texts[channelId];
    try {
      localStorage.setItem(this.key(), JSON.stringify(this.texts));
    } catch {
      // storage full or disabled: the draft still lives in memory
    }
  }

  reset(why: ResetReason): void {
    if (why === "logout") {
      try {
        localStorage.removeItem(this.key());
      } catch {
        // storage disabled: there is nothing in it
      }
    }
    this.texts = {};
    this.loadedFor = null;
  }
}

export const drafts = new Drafts();
session.onReset((why) => drafts.reset(why));
