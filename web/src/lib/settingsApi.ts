/**
 * The owner's calls for schedules, settings, guests and a channel's settings. Secrets come back
 * masked (`••••` and at most the last four characters); sending a masked value back keeps the
 * stored secret, so forms send what they were given unless the owner typed a new one.
 */
import { request } from "./api";
import type { BackupSchedule } from "./backups";
import type { Budgets, BudgetsPatch } from "./budgets";
import type { Channel, User } from "./types";

/** What a secret's masked form starts with. */
export const SECRET_MASK = "••••";

export interface ScheduleRun {
  status: "fired" | "skipped";
  reason: string | null;
  dueAt: string;
  messageId: string | null;
}

export interface Schedule {
  id: string;
  agentId: string;
  channelId: string;
  createdBy: string | null;
  schedule: string | null;
  at: string | null;
  prompt: string;
  nextRunAt: string | null;
  lastRunAt: string | null;
  active: boolean;
  state: "active" | "paused" | "done";
  lastResult: ScheduleRun | null;
  createdAt: string;
}

export interface NewSchedule {
  agentId: string;
  channelId: string;
  prompt: string;
  schedule?: string;
  at?: string;
}

export type ProviderType = "openai" | "anthropic" | "builtin";

export interface ProviderConfig {
  type: ProviderType;
  baseUrl: string | null;
  apiKey: string | null;
  contextWindow: number;
  timeoutSeconds: number;
}

export interface McpServerConfig {
  command: string | null;
  args: string[];
  env: Record<string, string>;
  url: string | null;
  headers: Record<string, string>;
  timeoutSeconds: number;
  availableToGuests: boolean;
}

export interface Limits {
  messagesPerMinute: number;
  messageBurst: number;
  maxMessageChars: number;
  maxUploadBytes: number;
  guestSchedules: number;
}

export interface Settings {
  providers: Record<string, ProviderConfig>;
  defaultModel: string;
  embedding: { provider: string; model: string };
  webSearch: { provider: "searxng" | "brave" | "tavily" | null; baseUrl: string | null; apiKey: string | null };
  mcpServers: Record<string, McpServerConfig>;
  limits: Limits;
  sessionIdleDays: number;
  /** Per model as agents name it, per million tokens (docs/SPEC.md section 13). */
  prices: Record<string, Price>;
  budgets: Budgets;
  backups: BackupSchedule;
}

export interface Price {
  input: number;
  output: number;
  cachedInput?: number | null;
}

/** A name-to-value map as a patch: an entry set to null is removed, one left out is kept. */
export type MapPatch = Record<string, string | null>;

/** An MCP server as a patch: its `env` and `headers` merge by name (null removes an entry). */
export type McpServerPatch = Omit<McpServerConfig, "env" | "headers"> & { env: MapPatch; headers: MapPatch };

/** A patch: only the parts sent change; a provider or MCP server set to null is removed. */
export type SettingsPatch = {
  backups?: Partial<BackupSchedule>;
  providers?: Record<string, ProviderConfig | null>;
  mcpServers?: Record<string, McpServerPatch | null>;
  defaultModel?: string;
  embedding?: Settings["embedding"];
  webSearch?: Settings["webSearch"];
  limits?: Partial<Limits>;
  sessionIdleDays?: number;
  /** A model set to null loses its price. */
  prices?: Record<string, Price | null>;
  budgets?: BudgetsPatch;
};

/** What turns the saved map `before` into `after`: every entry of `after`, and null for each
 * saved name no longer there (the server keeps entries a patch leaves out). */
export function mapPatch(before: Record<string, string>, after: Record<string, string>): MapPatch {
  const patch: MapPatch = { ...after };
  for (const name of Object.keys(before)) if (!(name in after)) patch[name] = null;
  return patch;
}

export interface ProviderTest {
  ok: boolean;
  models?: string[];
  error?: string;
}

export interface ToolInfo {
  name: string;
  description: string;
  source: "builtin" | "mcp";
}

export interface McpStatus {
  state?: string;
  error?: string | null;
  [key: string]: unknown;
}

export interface ModelInfo {
  id: string;
  provider: string;
  name: string;
}

const id = encodeURIComponent;

export const settingsApi = {
  schedules: async (signal?: AbortSignal) =>
    (await request<{ schedules: Schedule[] }>("/api/schedules", { signal })).schedules,
  createSchedule: async (body: NewSchedule) =>
    (await request<{ schedule: Schedule }>("/api/schedules", { method: "POST", body })).schedule,
  setScheduleActive: async (scheduleId: string, active: boolean) =>
    (
      await request<{ schedule: Schedule }>(`/api/schedules/${id(scheduleId)}`, {
        method: "PATCH",
        body: { active },
      })
    ).schedule,
  deleteSchedule: (scheduleId: string) =>
    request<{ ok: boolean }>(`/api/schedules/${id(scheduleId)}`, { method: "DELETE" }),

  settings: async () => (await request<{ settings: Settings }>("/api/settings")).settings,
  updateSettings: async (body: SettingsPatch) =>
    (await request<{ settings: Settings }>("/api/settings", { method: "PUT", body })).settings,
  testProvider: (body: { id?: string; type: ProviderType; baseUrl: string | null; apiKey: string | null }) =>
    request<ProviderTest>("/api/settings/providers/test", { method: "POST", body }),
  tools: () =>
    request<{ tools: ToolInfo[]; mcpServers: Record<string, McpStatus> }>("/api/tools"),
  models: () => request<{ models: ModelInfo[]; errors: Record<string, string> }>("/api/models"),

  guests: async () => (await request<{ guests: User[] }>("/api/guests")).guests,
  invite: (name: string) =>
    request<{ user: User; key: string }>("/api/guests", { method: "POST", body: { name } }),
  deleteGuest: (guestId: string) =>
    request<{ ok: boolean }>(`/api/guests/${id(guestId)}`, { method: "DELETE" }),

  updateChannel: async (
    channelId: string,
    body: { name?: string; agentIds?: string[]; memberIds?: string[] },
  ) =>
    (await request<{ channel: Channel }>(`/api/channels/${id(channelId)}`, { method: "PUT", body }))
      .channel,
};
