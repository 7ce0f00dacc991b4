/**
 * Each channel's timeline: stored messages and replies still streaming, in id order (ids sort
 * by creation), with the tool calls of a reply folded into it.
 *
 * Streamed text is buffered and applied once per animation frame, so a fast model costs one
 * render per frame rather than one per chunk. A reply is keyed by its message id from
 * `stream_start` to the stored `message`, so it never shows twice; a stream replayed on
 * (re)subscribe starts the text over, since the server sends the whole text so far again.
 */
import { api } from "../api";
import { socket } from "../socket.svelte";
import type { Message, ServerEvent, ToolStatus } from "../types";
import { announcer } from "./announcer.svelte";
import { channels } from "./channels.svelte";
import { directory } from "./directory.svelte";
import { session } from "./session.svelte";

export const PAGE_SIZE = 50;
/** How far back a reconnect looks for what it missed before it gives up and starts afresh. */
const CATCH_UP_PAGES = 20;

export interface ToolCard {
  toolName: string;
  callId: string | null;
  arguments: Record<string, unknown>;
  status: ToolStatus;
  result: string | null;
}

export interface Item {
  id: string;
  channelId: string;
  agentId: string | null;
  userId: string | null;
  content: string;
  type: Message["type"];
  metadata: Record<string, unknown>;
  createdAt: string;
  streaming: boolean;
  error: string | null;
  cancelled: boolean;
  interrupted: boolean;
  tools: ToolCard[];
}

function isToolRecord(m: Message): boolean {
  return m.type === "tool_call" || m.type === "tool_result";
}

/** A message's fields as an item's; `reactive` makes the one live object a row renders. */
function fields(m: Message): Item {
  return {
    ...m,
    streaming: false,
    error: typeof m.metadata.error === "string" ? m.metadata.error : null,
    cancelled: m.metadata.cancelled === true,
    interrupted: m.metadata.interrupted === true,
    tools: [],
  };
}

/**
 * Each item is its own deep reactive object (streamed text and tool cards change in place),
 * while the list holding them is a plain array replaced on change: a 10,000-item reactive
 * array would turn one page of older messages into 10,000 signal writes.
 */
function reactive(item: Item): Item {
  const live = $state(item);
  return live;
}

/** Binary search: the index of the first item whose id is not less than `id`. */
export function lowerBound(items: { id: string }[], id: string): number {
  let lo = 0;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (items[mid].id < id) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export class Timeline {
  readonly channelId: string;
  items = $state.raw<Item[]>([]);
  loaded = $state(false);
  loadingOlder = $state(false);
  hasOlder = $state(true);
  error = $state<string | null>(null);
  /** The oldest message id fetched, tool records included: where the next page starts. */
  private oldestId: string | null = null;
  private newestId: string | null = null;
  /** Tool records whose reply is not loaded (yet): attached when it arrives. */
  private orphanTools = new Map<string, Message[]>();
  private seqs = new Map<string, number>();
  private pending = new Map<string, string>();
  private frame = 0;
  /** Confirmed subscriptions so far (see `subscribed`). */
  private subscriptions = 0;

  constructor(channelId: string) {
    this.channelId = channelId;
  }

  find(id: string): Item | undefined {
    const i = lowerBound(this.items, id);
    return this.items[i]?.id === id ? this.items[i] : undefined;
  }

  async loadLatest(): Promise<void> {
    const subscriptions = this.subscriptions;
    try {
      const page = await api.messages(this.channelId, PAGE_SIZE);
      this.hasOlder = page.length === PAGE_SIZE;
      this.merge(page);
      this.error = null;
    } catch (error) {
      this.error = (error as Error).message;
    } finally {
      this.loaded = true;
    }
    // Subscribed while the page was on its way: what was stored between the two came in
    // neither, so it is fetched now.
    if (this.subscriptions !== subscriptions) await this.catchUp();
  }

  /**
   * The server confirmed the channel's subscription (first, or again after a reconnect).
   * A message stored after the history was fetched but before this point came by neither
   * road: a reply ending while the page loads would be lost. So the timeline catches up.
   */
  subscribed(): void {
    this.subscriptions++;
    if (this.loaded) void this.catchUp();
  }

  /** The page before the oldest loaded: `limit` up to 200, larger ahead of a fast scroll. */
  async loadOlder(limit = PAGE_SIZE): Promise<void> {
    if (this.loadingOlder || !this.hasOlder || this.oldestId === null) return;
    this.loadingOlder = true;
    try {
      const page = await api.messages(this.channelId, limit, this.oldestId);
      this.hasOlder = page.length === limit;
      this.merge(page);
    } catch (error) {
      this.error = (error as Error).message;
    } finally {
      this.loadingOlder = false;
    }
  }

  /** After a reconnect: fetch back until the newest id known, so nothing is missed. */
  async catchUp(): Promise<void> {
    if (!this.loaded) return;
    const known = this.newestId;
    const fetched: Message[] = [];
    let before: string | undefined;
    for (let i = 0; i < CATCH_UP_PAGES; i++) {
      const page = await api.messages(this.channelId, 200, before);
      fetched.push(...page);
      if (page.length < 200 || known === null || page[0].id <= known) break;
      before = page[0].id;
    }
    this.merge(fetched);
    // Replies the page was following that ended while the socket was down are stored now.
    for (const item of this.items) {
      if (item.streaming && fetched.some((m) => m.id === item.id)) item.streaming = false;
    }
  }

  /** The person's own message, on screen as soon as the server accepted it (optimistic: its
   * broadcast settles into the same row, by id). */
  addSent(id: string, content: string, type: string, metadata: Record<string, unknown>): void {
    this.merge([
      {
        id,
        channelId: this.channelId,
        agentId: null,
        userId: session.user?.id ?? null,
        content,
        type: type as Message["type"],
        metadata,
        createdAt: new Date().toISOString(),
      },
    ]);
  }

  /** Put stored messages in place: new ones inserted in order, known ones replaced. */
  merge(messages: Message[]): void {
    const fresh: Item[] = [];
    for (const m of messages) {
      if (this.oldestId === null || m.id < this.oldestId) this.oldestId = m.id;
      if (this.newestId === null || m.id > this.newestId) this.newestId = m.id;
      if (isToolRecord(m)) continue;
      const known = this.find(m.id);
      if (known) this.settle(known, m);
      else fresh.push(reactive(fields(m)));
    }
    if (fresh.length) {
      fresh.sort((a, b) => (a.id < b.id ? -1 : 1));
      const first = fresh[0].id;
      const items = this.items;
      if (items.length === 0 || first > items[items.length - 1].id) {
        this.items = items.concat(fresh);
      } else if (fresh[fresh.length - 1].id < items[0].id) {
        this.items = fresh.concat(items);
      } else {
        const next = items.slice();
        for (const item of fresh) next.splice(lowerBound(next, item.id), 0, item);
        this.items = next;
      }
    }
    for (const m of messages) if (isToolRecord(m)) this.attachTool(m);
    for (const item of fresh) this.adoptOrphans(item);
  }

  private settle(item: Item, m: Message): void {
    this.pending.delete(m.id);
    this.seqs.delete(m.id);
    Object.assign(item, fields(m), { tools: item.tools });
  }

  private adoptOrphans(item: Item): void {
    const orphans = this.orphanTools.get(item.id);
    if (!orphans) return;
    this.orphanTools.delete(item.id);
    for (const m of orphans) this.attachTool(m);
  }

  private attachTool(m: Message): void {
    const replyId = typeof m.metadata.replyId === "string" ? m.metadata.replyId : null;
    if (replyId === null) return;
    const reply = this.find(replyId);
    if (!reply) {
      const list = this.orphanTools.get(replyId) ?? [];
      if (!list.some((o) => o.id === m.id)) list.push(m);
      this.orphanTools.set(replyId, list);
      return;
    }
    const callId = typeof m.metadata.callId === "string" ? m.metadata.callId : null;
    const toolName = String(m.metadata.toolName ?? "");
    const status = (m.metadata.status as ToolStatus | undefined) ?? "completed";
    if (m.type === "tool_call") {
      const card =
        reply.tools.find((c) => callId !== null && c.callId === callId) ??
        reply.tools.find((c) => c.callId === null && c.toolName === toolName);
      const args = (m.metadata.arguments as Record<string, unknown> | undefined) ?? {};
      if (card) Object.assign(card, { callId, arguments: args, status });
      else reply.tools.push({ toolName, callId, arguments: args, status, result: null });
    } else {
      const card =
        reply.tools.find((c) => callId !== null && c.callId === callId) ??
        reply.tools.find((c) => c.toolName === toolName && c.result === null);
      if (card) Object.assign(card, { result: m.content, status, callId: card.callId ?? callId });
      else reply.tools.push({ toolName, callId, arguments: {}, status, result: m.content });
    }
  }

  handle(event: ServerEvent): void {
    switch (event.type) {
      case "message":
        this.merge([event.data]);
        break;
      case "stream_start": {
        const { messageId, agentId } = event.data;
        const known = this.find(messageId);
        if (known && !known.streaming) break;
        this.pending.delete(messageId);
        this.seqs.set(messageId, 0);
        if (known) {
          known.content = "";
          break;
        }
        const item: Item = reactive({
          id: messageId,
          channelId: this.channelId,
          agentId,
          userId: null,
          content: "",
          type: "text",
          metadata: {},
          createdAt: new Date().toISOString(),
          streaming: true,
          error: null,
          cancelled: false,
          interrupted: false,
          tools: [],
        });
        const next = this.items.slice();
        next.splice(lowerBound(next, messageId), 0, item);
        this.items = next;
        this.adoptOrphans(this.find(messageId)!);
        break;
      }
      case "stream_chunk": {
        const { messageId, content, seq } = event.data;
        const last = this.seqs.get(messageId);
        if (last === undefined) break;
        if (seq !== undefined) {
          if (seq <= last) break;
          this.seqs.set(messageId, seq);
        }
        this.pending.set(messageId, (this.pending.get(messageId) ?? "") + content);
        this.frame ||= requestAnimationFrame(() => this.flush());
        break;
      }
      case "stream_end": {
        this.flush();
        const item = this.find(event.data.messageId);
        this.seqs.delete(event.data.messageId);
        if (!item) break;
        item.streaming = false;
        item.error = event.data.error ?? null;
        item.cancelled = event.data.cancelled === true;
        item.interrupted = event.data.interrupted === true;
        break;
      }
      case "tool_call": {
        const item = this.find(event.data.messageId);
        if (!item) break;
        const { toolName, arguments: args, status } = event.data;
        if (status === "calling") {
          item.tools.push({ toolName, callId: null, arguments: args, status, result: null });
        } else {
          const card = item.tools.find((c) => c.toolName === toolName && c.status === "calling");
          if (card) card.status = status;
        }
        break;
      }
      case "tool_result": {
        const item = this.find(event.data.messageId);
        const card = item?.tools.find(
          (c) => c.toolName === event.data.toolName && c.status !== "calling" && c.result === null,
        );
        if (card) card.result = event.data.result;
        break;
      }
    }
  }

  /** Apply the buffered stream text: one write per reply per frame. */
  flush(): void {
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
    for (const [id, text] of this.pending) {
      const item = this.find(id);
      if (item?.streaming) item.content += text;
    }
    this.pending.clear();
  }
}

class Timelines {
  private byChannel = new Map<string, Timeline>();

  constructor() {
    socket.on((event) => {
      if (event.type === "subscribed") {
        this.byChannel.get(event.data.channelId)?.subscribed();
        return;
      }
      const channelId = channelOf(event);
      if (channelId !== null) {
        // A reply may start in a channel not opened yet: keep it, to show it when it is.
        const timeline =
          event.type === "stream_start" ? this.get(channelId) : this.byChannel.get(channelId);
        timeline?.handle(event);
      }
      else if ("data" in event && event.data && "messageId" in event.data) {
        // stream_chunk, stream_end, tool_* carry no channel: the reply's timeline has it.
        for (const timeline of this.byChannel.values()) {
          if (timeline.find(event.data.messageId)) {
            timeline.handle(event);
            if (event.type === "stream_end") this.ended(timeline, event.data.messageId);
            break;
          }
        }
      }
    });
  }

  /** A reply in the channel on screen ended: the status region says so, once. */
  private ended(timeline: Timeline, messageId: string): void {
    if (timeline.channelId !== channels.active) return;
    const item = timeline.find(messageId);
    if (!item) return;
    const name = (item.agentId && directory.agents[item.agentId]?.name) || "An agent";
    if (item.error) announcer.say(`${name}'s reply failed: ${item.error}`);
    else if (item.cancelled) announcer.say(`${name}'s reply was stopped`);
    else announcer.say(`${name} replied`);
  }

  get(channelId: string): Timeline {
    let timeline = this.byChannel.get(channelId);
    if (!timeline) {
      timeline = new Timeline(channelId);
      this.byChannel.set(channelId, timeline);
    }
    return timeline;
  }

  reset(): void {
    this.byChannel.clear();
  }
}

function channelOf(event: ServerEvent): string | null {
  if (event.type === "message") return event.data.channelId;
  if (event.type === "stream_start") return event.data.channelId;
  return null;
}

export const timelines = new Timelines();
session.onReset(() => timelines.reset());
