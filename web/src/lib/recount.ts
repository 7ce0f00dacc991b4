/**
 * Channels whose counts the page cannot keep by itself (a reply in a thread whose root it does
 * not hold), asked of the server together: one request for every channel named within `delay`
 * ms of the first (and up to `jitter` ms more, so that the pages of everyone in a busy channel
 * do not all ask at the same moment), never one per message or per channel. One request is in flight at a time;
 * a channel named meanwhile waits for the next, since the answer on its way may predate it.
 */
export type Ask = (channelIds: ReadonlySet<string>) => Promise<void>;

export class Recount {
  private waiting = new Set<string>();
  private asking: ReadonlySet<string> | null = null;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private ask: Ask,
    private delay = 1000,
    private jitter = 0,
  ) {}

  /** The channel's counts need the server's answer. */
  add(channelId: string): void {
    this.waiting.add(channelId);
    this.schedule();
  }

  /** Whether an answer on its way covers the channel (something arriving there meanwhile may
   * be in it or not: the caller names the channel again). */
  inFlight(channelId: string): boolean {
    return this.asking?.has(channelId) ?? false;
  }

  /** Whether the channel waits for the next request (named again while one was in flight:
   * that one's answer may predate what named it). */
  pending(channelId: string): boolean {
    return this.waiting.has(channelId);
  }

  private schedule(): void {
    if (this.timer !== undefined || this.asking !== null || this.waiting.size === 0) return;
    this.timer = setTimeout(() => void this.run(), this.delay + Math.random() * this.jitter);
  }

  private async run(): Promise<void> {
    this.timer = undefined;
    const ids = this.waiting;
    this.waiting = new Set();
    this.asking = ids;
    try {
      await this.ask(ids);
    } catch {
      // the counts stay as the page kept them; the next answer (or reconnect) corrects them
    } finally {
      this.asking = null;
      this.schedule();
    }
  }

  /** Forget a channel (gone), or everything (logout). */
  drop(channelId?: string): void {
    if (channelId !== undefined) {
      this.waiting.delete(channelId);
      return;
    }
    clearTimeout(this.timer);
    this.timer = undefined;
    this.waiting.clear();
  }
}
