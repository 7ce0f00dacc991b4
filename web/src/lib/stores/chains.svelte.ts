/** The chain of each channel worth showing: running or paused, or just ended until dismissed. */
import { api, sessionEnded, sessionMark } from "../api";
import { socket } from "../socket.svelte";
import type { Chain, ChainStatusEvent } from "../types";
import { session } from "./session.svelte";

class Chains {
  byChannel = $state<Record<string, Chain | null>>({});
  private chainChannel = new Map<string, string>();
  /** The newest `collab_status` of each chain, and the count of events when it came: laid over
   * a chain fetched before it, which is older. */
  private latest = new Map<string, { status: ChainStatusEvent; at: number }>();
  private events = 0;
  private loadedFor = new Set<string>();

  constructor() {
    socket.on((event) => {
      if (event.type === "collab_status") this.follow(event.data);
    });
    socket.onReconnect(() => {
      for (const channelId of this.loadedFor) void this.load(channelId, true);
    });
  }

  async load(channelId: string, again = false): Promise<void> {
    if (this.loadedFor.has(channelId) && !again) return;
    this.loadedFor.add(channelId);
    const mark = sessionMark();
    try {
      // The status events that came while the list was on its way are newer than it: a chain
      // ended meanwhile is not shown running, and one started meanwhile is not dropped.
      const since = this.events;
      const list = (await api.chains(channelId)).map((c) => this.overlay(c, since));
      for (const chain of list) this.chainChannel.set(chain.id, chain.channelId);
      const live = list.filter((c) => c.status === "running" || c.status === "paused");
      const current = this.byChannel[channelId];
      const startedMeanwhile = current && (this.latest.get(current.id)?.at ?? 0) > since;
      const refreshed = current
        ? (list.find((c) => c.id === current.id) ?? (startedMeanwhile ? current : undefined))
        : undefined;
      this.byChannel[channelId] = live[live.length - 1] ?? refreshed ?? null;
    } catch {
      // Not if the session ended: the next one may have asked for the channel's chains since.
      if (!sessionEnded(mark)) this.loadedFor.delete(channelId);
    }
  }

  /** `collab_status` names no channel: the chain is fetched once to learn it, and its steps. */
  private async follow(status: ChainStatusEvent): Promise<void> {
    this.latest.set(status.chainId, { status, at: ++this.events });
    let channelId = this.chainChannel.get(status.chainId);
    if (channelId === undefined) {
      try {
        const since = this.events;
        const chain = this.overlay(await api.chain(status.chainId), since);
        channelId = chain.channelId;
        this.chainChannel.set(chain.id, channelId);
        this.byChannel[channelId] = chain;
      } catch {
        return;
      }
    }
    const chain = this.byChannel[channelId];
    if (chain && chain.id === status.chainId) {
      this.overlay(chain, 0);
      if (chain.steps.length !== status.totalSteps) void this.refresh(chain.id, channelId);
    } else {
      void this.refresh(status.chainId, channelId);
    }
  }

  /** Put the chain's newest status event over what a fetch answered, if it came after the
   * fetch was asked for (`since`, a count of events; 0 for a chain shown, not fetched). */
  private overlay(chain: Chain, since: number): Chain {
    const latest = this.latest.get(chain.id);
    if (latest && latest.at > since) {
      const { status } = latest;
      Object.assign(chain, {
        status: status.status,
        step: status.step,
        totalSteps: status.totalSteps,
        currentAgent: status.currentAgent,
        reason: status.reason ?? null,
        requested: null,
      });
    }
    return chain;
  }

  private async refresh(chainId: string, channelId: string): Promise<void> {
    try {
      const since = this.events;
      this.byChannel[channelId] = this.overlay(await api.chain(chainId), since);
    } catch {
      // gone or not visible: leave the strip as it was
    }
  }

  async steer(chain: Chain, action: "pause" | "resume" | "cancel"): Promise<void> {
    const updated = await api.steerChain(chain.id, action);
    const current = this.byChannel[updated.channelId];
    if (current && current.id === updated.id && current.status === "running") {
      // A request (pause, cancel) waits for the running step. The status itself comes from
      // the events, which may already be newer than this answer.
      current.requested = updated.requested;
    }
  }

  dismiss(channelId: string): void {
    this.byChannel[channelId] = null;
  }

  reset(): void {
    this.byChannel = {};
    this.chainChannel.clear();
    this.latest.clear();
    this.loadedFor.clear();
  }
}

export const chains = new Chains();
session.onReset(() => chains.reset());
