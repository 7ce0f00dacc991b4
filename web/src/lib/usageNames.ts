/**
 * The usage report's keys as people read them: agents, people and channels by the names the
 * page holds, days as dates, models as they are. Reading the stores, a `$derived` that calls
 * this follows their changes (an agents' list that arrives later).
 */
import { budgetWatch } from "./stores/budgets.svelte";
import { channels } from "./stores/channels.svelte";
import { directory } from "./stores/directory.svelte";
import { session } from "./stores/session.svelte";
import { formatDay, OTHERS } from "./usage";
import type { GroupBy } from "./usageApi";

export function nameOf(group: GroupBy, key: string): string {
  if (key === OTHERS) return "Others";
  if (group === "agent") return directory.agents[key]?.name ?? `Deleted agent (${key})`;
  if (group === "person") {
    if (key === "") return "No one (schedules, agents' own calls)";
    if (key === session.user?.id) return `${session.user.name} (you)`;
    return budgetWatch.guests[key] ?? `Deleted guest (${key})`;
  }
  if (group === "channel") {
    const channel = channels.get(key);
    return channel ? `#${channel.name}` : `Deleted channel (${key})`;
  }
  return group === "day" ? formatDay(key, true) : key;
}
