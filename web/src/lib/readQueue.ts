/**
 * Read markers on their way to the server: the newest message seen per channel, posted once the
 * person has stopped reading for `delay` ms (at most `maxWait` ms after the first one), never
 * one request per message. A channel has at most one post in flight; what is seen meanwhile
 * waits for the next.
 */
export type Post = (channelId: string, messageId: string) => Promise<void>;

export class ReadQueue {
  private waiting = new Map<string, string>();
  private inFlight = new Set<string>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private firstAt = 0;

  constructor(
    private post: Post,
    private delay = 800,
    private maxWait = 3000,
  ) {}

  /** The person saw `channelId` up to `messageId`. */
  add(channelId: string, messageId: string): void {
    const known = this.waiting.get(channelId);
    if (known !== undefined && known >= messageId) return;
    this.waiting.set(channelId, messageId);
    const now = Date.now();
    if (this.timer === undefined) this.firstAt = now;
    else clearTimeout(this.timer);
    const wait = Math.max(0, Math.min(this.delay, this.firstAt + this.maxWait - now));
    this.timer = setTimeout(() => void this.flush(), wait);
  }

  /** Post what waits now (the page is being hidden or left). */
  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const sends: Promise<void>[] = [];
    for (const [channelId, messageId] of this.waiting) {
      if (this.inFlight.has(channelId)) continue;
      this.waiting.delete(channelId);
      this.inFlight.add(channelId);
      sends.push(
        this.post(channelId, messageId)
          .catch(() => undefined)
          .finally(() => {
            this.inFlight.delete(channelId);
            if (this.waiting.has(channelId) && this.timer === undefined) {
              this.firstAt = Date.now();
              this.timer = setTimeout(() => void this.flush(), this.delay);
            }
          }),
      );
    }
    await Promise.all(sends);
  }

  /** Forget what waits (logout, or the channel is gone). */
  drop(channelId?: string): void {
    if (channelId !== undefined) {
      this.waiting.delete(channelId);
      return;
    }
    clearTimeout(this.timer);
    this.timer = undefined;
    this.waiting.clear();
  }

  get pending(): number {
    return this.waiting.size;
  }
}
