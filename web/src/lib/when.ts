/** Schedule times: stored in UTC, shown and entered in the viewer's own time zone. */

const moment = new Intl.DateTimeFormat(undefined, {
  dateStyle: "medium",
  timeStyle: "medium",
});

/** The viewer's zone, as the page names it beside times ("Europe/Paris"). */
export const viewerZone = Intl.DateTimeFormat().resolvedOptions().timeZone;

export function localTime(iso: string | null): string {
  return iso ? moment.format(new Date(iso)) : "—";
}

/** A `datetime-local` value (the viewer's wall clock, no zone) as an ISO instant. */
export function localInputToIso(value: string): string {
  return new Date(value).toISOString();
}

/** Now plus `minutes`, as a `datetime-local` value in the viewer's zone. */
export function localInputValue(minutesAhead: number): string {
  const d = new Date(Date.now() + minutesAhead * 60_000);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

const REASONS: Record<string, string> = {
  missed: "skipped: a later run replaced it",
  late: "skipped: over an hour late",
  not_in_channel: "skipped: the agent left the channel",
  rate_limited: "skipped: the guest's message limit",
};

export function runLabel(run: { status: string; reason: string | null } | null): string {
  if (run === null) return "Not run yet";
  if (run.status === "fired") return "Posted";
  return REASONS[run.reason ?? ""] ?? `skipped (${run.reason ?? "no reason"})`;
}
