/**
 * The backup schedule (`settings.backups`) and what `GET /api/backups` answers (docs/SPEC.md,
 * section 20): owner only.
 */
import { request } from "./api";

export interface BackupSchedule {
  /** A whole number and a unit: `30m`, `6h`, `1d` (`s` too); null: no schedule. */
  every: string | null;
  keep: number;
  /** An absolute folder; null: `<data dir>/backups`. */
  dir: string | null;
}

export interface BackupResult {
  at: string;
  finishedAt: string | null;
  status: "ok" | "failed" | "interrupted";
  ok: boolean;
  file: string | null;
  bytes: number | null;
  error?: string;
  durationMs: number | null;
  node: string | null;
}

export interface BackupFile {
  name: string;
  bytes: number;
  at: string;
}

export interface Backups {
  settings: BackupSchedule;
  folder: string;
  running: { at: string; file: string | null; node: string | null } | null;
  last: BackupResult | null;
  next: string | null;
  files: BackupFile[];
}

export const backupsApi = {
  state: (signal?: AbortSignal) => request<Backups>("/api/backups", { signal }),
};

const EVERY = /^([1-9][0-9]{0,6})([smhd])$/;
const UNITS: Record<string, [string, string]> = {
  s: ["second", "seconds"],
  m: ["minute", "minutes"],
  h: ["hour", "hours"],
  d: ["day", "days"],
};

/** What the owner typed in the "every" box as the setting: null for empty, undefined when it
 * can be no period (the server would refuse it). */
export function parseEvery(text: string): string | null | undefined {
  const trimmed = text.trim().replace(/\s+/g, "");
  if (trimmed === "") return null;
  return EVERY.test(trimmed) ? trimmed : undefined;
}

/** "every 6 hours", "every day"; "never" without a schedule. */
export function describeEvery(every: string | null): string {
  const match = every === null ? null : EVERY.exec(every);
  if (match === null) return "never";
  const n = Number(match[1]);
  const [one, many] = UNITS[match[2]];
  return n === 1 ? `every ${one}` : `every ${n} ${many}`;
}

/** A duration for people: "850 ms", "4.2 s", "3 min 5 s". */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const seconds = Math.round(ms / 1000);
  return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
}
