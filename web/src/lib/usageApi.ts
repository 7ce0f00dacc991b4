/**
 * The owner's reports: what agents used (`GET /api/usage`, docs/SPEC.md section 13) and who
 * changed what (`GET /api/audit`). Both answer the owner only (403 for a guest).
 */
import { request } from "./api";

export type GroupBy = "agent" | "person" | "channel" | "model" | "day";

/** One group's sums; `key` is an agent, person or channel id, a model, or a day (UTC). */
export interface UsageRow {
  key: string;
  /** With `per=day`: the day (UTC) of these sums, as `YYYY-MM-DD`. */
  day?: string;
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  cost: number;
  calls: number;
  unpricedCalls: number;
}

/** One change to the install, as the audit log holds it. */
export interface AuditEntry {
  id: string;
  at: string;
  /** Who did it: a user's id; null when nobody is known (a failed login). */
  actorId: string | null;
  /** `resource.verb`: `settings.update`, `agent.create`, `login.failed`... */
  action: string;
  target: string | null;
  /** The changed fields; never a secret's value. Its shape varies by action. */
  changes: unknown;
  node: string | null;
  address: string | null;
}

export interface AuditQuery {
  before?: string;
  limit?: number;
  actor?: string;
  action?: string;
}

export const usageApi = {
  /** `from` and `to` are days (UTC), both included; omitted, the server takes this month.
   * `per: "day"` answers a row per key and day with use, ordered by day then key. */
  usage: async (
    groupBy: GroupBy,
    range: { from?: string; to?: string } = {},
    signal?: AbortSignal,
    per?: "day",
  ) =>
    (
      await request<{ rows: UsageRow[] }>("/api/usage", {
        query: { groupBy, from: range.from, to: range.to, per },
        signal,
      })
    ).rows,
  audit: async (query: AuditQuery, signal?: AbortSignal) =>
    (
      await request<{ entries: AuditEntry[] }>("/api/audit", {
        query: {
          before: query.before,
          limit: query.limit,
          actor: query.actor || undefined,
          action: query.action || undefined,
        },
        signal,
      })
    ).entries,
};
