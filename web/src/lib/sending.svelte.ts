/**
 * One composer's sending: the message is shown at once when the server accepted it; a
 * failure keeps the text and says why (a 429 with its countdown, the server unreachable); a
 * retry of the same text reuses its `Idempotency-Key`, so a send that did arrive is not doubled.
 */
import { api, ApiError } from "./api";
import { Countdown } from "./countdown.svelte";
import { timelines } from "./stores/messages.svelte";

export class Sending {
  busy = $state(false);
  error = $state<string | null>(null);
  /** After a 429: the seconds until sending is allowed again. */
  readonly wait = new Countdown();
  private idempotency: { text: string; key: string } | null = null;
  private readonly channelId: string;
  private readonly threadId: string | null;

  constructor(channelId: string, threadId: string | null) {
    this.channelId = channelId;
    this.threadId = threadId;
  }

  /** Post the text; true once the server accepted it. */
  async send(content: string): Promise<boolean> {
    if (!content.trim() || this.busy || this.wait.seconds > 0) return false;
    this.busy = true;
    this.error = null;
    if (this.idempotency?.text !== content) {
      this.idempotency = { text: content, key: crypto.randomUUID() };
    }
    try {
      const body = { channelId: this.channelId, content, type: "text", threadId: this.threadId ?? undefined };
      const { id } = await api.post(body, this.idempotency.key);
      this.idempotency = null;
      timelines.forSent(this.channelId, this.threadId).addSent(id, content, "text", {});
      return true;
    } catch (e) {
      this.fail(e);
      return false;
    } finally {
      this.busy = false;
    }
  }

  fail(e: unknown): void {
    if (e instanceof ApiError && e.status === 429) {
      this.wait.start(e.retryAfter ?? 5, () => (this.error = null));
      this.error = `${e.message} Your message is kept. Try again in ${e.retryAfter ?? 5} s.`;
    } else if (e instanceof ApiError && e.status === 0) {
      this.error = "The server could not be reached; your message is kept. Try again.";
    } else {
      this.error = (e as Error).message;
    }
  }
}
