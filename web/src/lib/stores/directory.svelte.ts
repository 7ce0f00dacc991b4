/** Agents and people by id: what the page needs to put a name and an avatar on a message. */
import { api, sessionEnded, sessionMark } from "../api";
import type { Agent, User } from "../types";
import { session } from "./session.svelte";

class Directory {
  agents = $state<Record<string, Agent>>({});
  people = $state<Record<string, User>>({});
  agentsLoaded = $state(false);
  /** The list is being asked for. */
  agentsLoading = $state(false);
  private agentsAsked = new Set<string>();
  private peopleOf = new Set<string>();
  private asked = new Set<string>();

  agentList(ids?: string[]): Agent[] {
    const all = ids ? ids.map((id) => this.agents[id]).filter(Boolean) : Object.values(this.agents);
    return all.sort((a, b) => a.name.localeCompare(b.name));
  }

  async loadAgents(): Promise<void> {
    this.agentsLoading = true;
    const mark = sessionMark();
    try {
      const list = await api.agents();
      this.agents = Object.fromEntries(list.map((a) => [a.id, a]));
      this.agentsLoaded = true;
    } finally {
      // Not if the session ended: the next one's ask may be under way.
      if (!sessionEnded(mark)) this.agentsLoading = false;
    }
  }

  /** Whether a name may still come for these agents: the list is being asked for, or is
   * asked for now because one of them is unknown (made since the page loaded, or the first
   * ask failed). Each unknown id is asked for once; one still unknown after that was deleted. */
  awaitAgents(ids: string[]): boolean {
    if (this.agentsLoading) return true;
    const unknown = ids.filter((id) => !this.agents[id] && !this.agentsAsked.has(id));
    if (!unknown.length) return false;
    for (const id of unknown) this.agentsAsked.add(id);
    void this.loadAgents().catch(() => undefined);
    return true;
  }

  /** The people of a channel; once per channel, again after `refreshPeople`. */
  async loadPeople(channelId: string): Promise<void> {
    if (this.peopleOf.has(channelId)) return;
    this.peopleOf.add(channelId);
    const mark = sessionMark();
    try {
      for (const user of await api.people(channelId)) this.people[user.id] = user;
    } catch {
      if (!sessionEnded(mark)) this.peopleOf.delete(channelId);
    }
  }

  /** Someone not known yet reacted or replied (a member added since the list was asked
   * for): ask the channel's people again, once per unknown id. */
  know(channelId: string, ids: string[]): void {
    const unknown = ids.filter(
      (id) => id.startsWith("user_") && !this.people[id] && id !== session.user?.id && !this.asked.has(id),
    );
    if (!unknown.length) return;
    for (const id of unknown) this.asked.add(id);
    this.peopleOf.delete(channelId);
    void this.loadPeople(channelId);
  }

  /** The people of these ids the page knows (a channel's members, from `loadPeople`), the
   * person themself left out: whom a mention may name. */
  peopleIn(ids: string[]): User[] {
    const me = session.user?.id;
    return ids
      .filter((id) => id !== me)
      .map((id) => this.people[id])
      .filter((u): u is User => u !== undefined)
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  personName(userId: string | null): string {
    if (userId === null) return "Schedule";
    if (userId === session.user?.id) return session.user.name;
    return this.people[userId]?.name ?? "Someone";
  }

  reset(): void {
    this.agents = {};
    this.people = {};
    this.agentsLoaded = false;
    this.agentsLoading = false;
    this.agentsAsked.clear();
    this.peopleOf.clear();
    this.asked.clear();
  }
}

export const directory = new Directory();
session.onReset(() => directory.reset());
