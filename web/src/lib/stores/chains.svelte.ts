/** The chain of each channel worth showing: running or paused, or just ended until dismissed. */
import { api } from "../api";
import { socket } from "../socket.svelte";
import type { Chain, ChainStatusEvent } from "../types";
import { session } from "./session.svelte";

class Chains {
  byChannel = $state<Record<string, Chain | null>>({});
  private chainChannel = new Map<string, string>();
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
    try {
      const list = await api.chains(channelId);
      for (const chain of list) this.chainChannel.set(chain.id, chain.channelId);
      const live = list.filter((c) => c.status === "running" || c.status === "paused");
      const current = this.byChannel[channelId];
      const refreshed = current ? list.find((c) => c.id === current.id) : undefined;
      this.byChannel[channelId] = live[live.length - 1] ?? refreshed ?? null;
    } catch {
      this.loadedFor.delete(channelId);
    }
  }

  /** `collab_status` names no channel: the chain is fetched once to learn it, and its steps. */
  private async follow(status: ChainStatusEvent): Promise<void> {
    let channelId = this.chainChannel.get(status.chainId);
    if (channelId === undefined) {
      try {
        const chain = await api.chain(status.chainId);
        channelId = chain.channelId;
        this.chainChannel.set(chain.id, channelId);
        this.byChannel[channelId] = chain;
      } catch {
        return;
      }
    }
    const chain = this.byChannel[channelId];
    if (chain && chain.id === status.chainId) {
      Object.assign(chain, {
        status: status.status,
        step: status.step,
        totalSteps: status.totalSteps,
        currentAgent: status.currentAgent,
        reason: status.reason ?? null,
        requested: null,
      });
      if (chain.steps.length !== status.totalSteps) void this.refresh(chain.id, channelId);
    } else {
      void this.refresh(status.chainId, channelId);
    }
  }

  private async refresh(chainId: string, channelId: string): Promise<void> {
    try {
      this.byChannel[channelId] = await api.chain(chainId);
    } catch {
      // gone or not visible: leave the strip as it was
    }
  }

  async steer(chain: Chain, action: "pause" | "resume" | "cancel"): Promise<void> {
    const updated = await api.steerChain(chain.id, action);
    const current = this.byChannel[updated.channelId];
    if (current && current.id === updated.id) {
      // A request (pause, cancel) waits for the running step; the status events follow.
      current.requested = updated.requested;
      current.status = updated.status;
    }
  }

  dismiss(channelId: string): void {
    this.byChannel[channelId] = null;
  }

  reset(): void {
    this.byChannel = {};
    this.chainChannel.clear();
    this.loadedFor.clear();
  }
}

export const chains = new Chains();
session.onReset(() => chains.reset());
