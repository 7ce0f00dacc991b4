/**
 * The owner's budgets against this month's use, for the page's warning at 80% (and at 100%)
 * and the usage screen's bars. Asked for when the page loads, a few seconds after an agent's
 * reply ends (at most once per 15 s), every 5 minutes while the tab is visible, and when the
 * owner changes a budget. With no cap set, only the settings are read.
 */
import {
  anyCap,
  budgetUses,
  budgetWarnings,
  NO_BUDGETS,
  warningKey,
  type BudgetUse,
  type Budgets,
} from "../budgets";
import { sessionEnded, sessionMark } from "../api";
import { settingsApi } from "../settingsApi";
import { socket } from "../socket.svelte";
import { usageApi, type UsageRow } from "../usageApi";
import { directory } from "./directory.svelte";
import { session } from "./session.svelte";

const EVERY_MS = 5 * 60_000;
const AFTER_REPLY_MS = 3_000;
const GAP_MS = 15_000;

class BudgetWatch {
  budgets = $state<Budgets>(NO_BUDGETS);
  byAgent = $state<UsageRow[]>([]);
  byPerson = $state<UsageRow[]>([]);
  /** Guests' names by id, for the guests' budgets. */
  guests = $state<Record<string, string>>({});
  loaded = $state(false);
  error = $state<string | null>(null);
  /** Warnings the owner closed, each at the level it had (a higher level shows again). */
  dismissed = $state<string[]>([]);

  uses: BudgetUse[] = $derived(budgetUses(this.budgets, this.byAgent, this.byPerson));
  warnings: BudgetUse[] = $derived(budgetWarnings(this.uses));
  shown: BudgetUse[] = $derived(this.warnings.filter((w) => !this.dismissed.includes(warningKey(w))));

  private running: Promise<void> | null = null;
  private again = false;
  private last = 0;
  private timer: number | undefined;

  /** Ask again now. A call while an ask is under way joins it, unless `fresh`: what it must
   * see may have been written after that ask read (a reply that just ended), so one more
   * follows it (one, however many such calls came meanwhile). */
  async refresh(fresh = false): Promise<void> {
    if (this.running) {
      if (fresh) this.again = true;
      return this.running;
    }
    const running = this.load();
    this.running = running;
    try {
      await running;
    } finally {
      // A logout meanwhile let it go (`reset`): the next session's ask may be under way, and
      // the ask again it may owe is its own.
      if (this.running === running) this.running = null;
    }
    if (this.running === null && this.again) {
      this.again = false;
      await this.refresh();
    }
  }

  private async load(): Promise<void> {
    if (!session.isOwner) return;
    this.last = Date.now();
    const mark = sessionMark();
    try {
      const settings = await settingsApi.settings();
      const budgets = settings.budgets ?? NO_BUDGETS;
      if (anyCap(budgets)) {
        const [byAgent, byPerson] = await Promise.all([usageApi.usage("agent"), usageApi.usage("person")]);
        this.byAgent = byAgent;
        this.byPerson = byPerson;
        if (Object.keys(budgets.guests).some((id) => !(id in this.guests))) await this.loadGuests();
      } else {
        this.byAgent = [];
        this.byPerson = [];
      }
      this.budgets = budgets;
      this.error = null;
    } catch (e) {
      // Not if the session ended: the next one's state is not this one's.
      if (!sessionEnded(mark)) this.error = (e as Error).message;
    } finally {
      if (!sessionEnded(mark)) this.loaded = true;
    }
  }

  async loadGuests(): Promise<void> {
    const list = await settingsApi.guests();
    this.guests = Object.fromEntries(list.map((g) => [g.id, g.name]));
  }

  /** The budgets as the server saved them (the answer to a `PUT /api/settings`). */
  setBudgets(budgets: Budgets): void {
    this.budgets = budgets;
    this.dismissed = [];
    // Fresh: an ask under way may have read the settings before this change.
    void this.refresh(true);
  }

  /** Whose budget, by name: an agent or guest deleted since shows as such. */
  nameOf(use: Pick<BudgetUse, "scope" | "id">): string {
    if (use.scope === "agent") return directory.agents[use.id]?.name ?? "(a deleted agent)";
    if (use.scope === "guest") return this.guests[use.id] ?? "(a deleted guest)";
    return "";
  }

  dismiss(uses: BudgetUse[]): void {
    this.dismissed = [...this.dismissed, ...uses.map(warningKey)];
  }

  /** Keep the numbers current while the page shows the warning; the returned function stops. */
  watch(): () => void {
    void this.refresh();
    const off = socket.on((event) => {
      if (event.type === "stream_end") this.soon();
    });
    const every = window.setInterval(() => {
      if (document.visibilityState === "visible") void this.refresh();
    }, EVERY_MS);
    const onVisible = () => {
      if (document.visibilityState === "visible" && Date.now() - this.last > EVERY_MS) void this.refresh();
    };
    document.addEventListener("visibilitychange", onVisible);
    return () => {
      off();
      window.clearInterval(every);
      window.clearTimeout(this.timer);
      this.timer = undefined;
      document.removeEventListener("visibilitychange", onVisible);
    };
  }

  /** After a reply: its calls are in the ledger once it ended; one ask covers a burst. */
  private soon(): void {
    if (this.timer !== undefined) return;
    const wait = Math.max(AFTER_REPLY_MS, this.last + GAP_MS - Date.now());
    this.timer = window.setTimeout(() => {
      this.timer = undefined;
      void this.refresh(true);
    }, wait);
  }

  reset(): void {
    this.running = null;
    this.again = false;
    this.budgets = NO_BUDGETS;
    this.byAgent = [];
    this.byPerson = [];
    this.guests = {};
    this.loaded = false;
    this.error = null;
    this.dismissed = [];
  }
}

export const budgetWatch = new BudgetWatch();
session.onReset(() => budgetWatch.reset());
