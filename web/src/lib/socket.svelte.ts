/**
 * One WebSocket for the whole page: authenticated by the session cookie on the upgrade, kept
 * alive by `ping`, reconnected with exponential backoff and jitter, and re-subscribed to every
 * channel the page follows. After a reconnect, listeners are told so they can fetch what the
 * socket missed while it was down; after a close for a catch-up (1012, a Redis outage), from
 * where (`missedAfter`).
 */
import type { ServerEvent } from "./types";

export type SocketState = "idle" | "connecting" | "open" | "reconnecting" | "closed";

const PING_EVERY_MS = 25_000;
const PONG_WITHIN_MS = 10_000;
const BACKOFF_BASE_MS = 500;
const BACKOFF_MAX_MS = 15_000;

type Listener = (event: ServerEvent) => void;

const CLOSE_CATCH_UP = 1012;
const MISSED_AFTER = /^events missed after (msg_[0-9A-HJKMNP-TV-Z]{26})$/;

/**
 * The boundary a close for a catch-up names (docs/SPEC.md section 18): every message whose id
 * sorts after it may have been missed, even older ones than the newest the page had (the
 * node delivered its own messages live while it did not hear the others'). Null for any other
 * close, or a server that names none.
 */
export function missedAfter(code: number, reason: string): string | null {
  if (code !== CLOSE_CATCH_UP) return null;
  return MISSED_AFTER.exec(reason)?.[1] ?? null;
}

class Socket {
  state = $state<SocketState>("idle");
  /** When the next attempt starts, while reconnecting (ms since epoch). */
  retryAt = $state<number | null>(null);

  private ws: WebSocket | null = null;
  private channels = new Set<string>();
  private listeners = new Set<Listener>();
  private reconnectListeners = new Set<() => void>();
  private missedListeners = new Set<(boundary: string) => void>();
  private attempts = 0;
  private everOpened = false;
  private pingTimer: number | undefined;
  private pongTimer: number | undefined;
  private retryTimer: number | undefined;
  private stopped = true;

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.everOpened = false;
    this.attempts = 0;
    this.connect();
  }

  /** Close for good (logout). */
  stop(): void {
    this.stopped = true;
    this.channels.clear();
    this.clearTimers();
    const ws = this.ws;
    this.ws = null;
    ws?.close(1000);
    this.state = "closed";
  }

  on(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  onReconnect(listener: () => void): () => void {
    this.reconnectListeners.add(listener);
    return () => this.reconnectListeners.delete(listener);
  }

  /** Told the boundary of each close for a catch-up, before the socket reconnects. */
  onMissed(listener: (boundary: string) => void): () => void {
    this.missedListeners.add(listener);
    return () => this.missedListeners.delete(listener);
  }

  subscribe(channelId: string): void {
    if (this.channels.has(channelId)) return;
    this.channels.add(channelId);
    this.send({ type: "subscribe", channelId });
  }

  unsubscribe(channelId: string): void {
    if (!this.channels.delete(channelId)) return;
    this.send({ type: "unsubscribe", channelId });
  }

  /** Drop the connection now and reconnect as after a network failure. */
  reconnectNow(): void {
    if (this.ws) this.ws.close(4000);
    else if (!this.stopped) this.connect();
  }

  private send(message: object): void {
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(message));
  }

  private connect(): void {
    this.clearTimers();
    this.retryAt = null;
    this.state = this.everOpened ? "reconnecting" : "connecting";
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const ws = new WebSocket(`${scheme}//${location.host}/ws`);
    this.ws = ws;
    ws.onmessage = (e) => this.receive(ws, e);
    ws.onclose = (e) => this.closed(ws, e);
  }

  private receive(ws: WebSocket, e: MessageEvent): void {
    if (ws !== this.ws || typeof e.data !== "string") return;
    let event: ServerEvent;
    try {
      event = JSON.parse(e.data) as ServerEvent;
    } catch {
      return;
    }
    if (event.type === "auth_ok") {
      this.opened();
      return;
    }
    if (event.type === "pong") {
      window.clearTimeout(this.pongTimer);
      this.pongTimer = undefined;
      return;
    }
    for (const listener of this.listeners) listener(event);
  }

  private opened(): void {
    const again = this.everOpened;
    this.everOpened = true;
    this.attempts = 0;
    this.state = "open";
    for (const channelId of this.channels) this.send({ type: "subscribe", channelId });
    this.pingTimer = window.setInterval(() => this.ping(), PING_EVERY_MS);
    if (again) for (const listener of this.reconnectListeners) listener();
  }

  private ping(): void {
    this.send({ type: "ping" });
    if (this.pongTimer === undefined) {
      this.pongTimer = window.setTimeout(() => this.reconnectNow(), PONG_WITHIN_MS);
    }
  }

  private closed(ws: WebSocket, e: CloseEvent): void {
    if (ws !== this.ws) return;
    this.ws = null;
    this.clearTimers();
    if (this.stopped) return;
    if (e.code === 4401) {
      // The session is gone: the page goes back to the login screen.
      this.state = "closed";
      window.dispatchEvent(new CustomEvent("palaver:unauthenticated"));
      return;
    }
    const boundary = missedAfter(e.code, e.reason);
    if (boundary !== null) for (const listener of this.missedListeners) listener(boundary);
    this.everOpened = true;
    this.state = "reconnecting";
    const ceiling = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** this.attempts);
    const delay = ceiling / 2 + Math.random() * (ceiling / 2);
    this.attempts += 1;
    this.retryAt = Date.now() + delay;
    this.retryTimer = window.setTimeout(() => this.connect(), delay);
  }

  private clearTimers(): void {
    window.clearInterval(this.pingTimer);
    window.clearTimeout(this.pongTimer);
    window.clearTimeout(this.retryTimer);
    this.pingTimer = this.pongTimer = this.retryTimer = undefined;
  }
}

export const socket = new Socket();

// A laptop waking up or a network coming back: try at once rather than after the backoff.
if (typeof window !== "undefined") {
  window.addEventListener("online", () => {
    if (socket.state === "reconnecting") socket.reconnectNow();
  });
}
