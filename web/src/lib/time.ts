/** Times in the reader's own zone and language. */

const timeFormat = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit" });
const dayFormat = new Intl.DateTimeFormat(undefined, {
  weekday: "long",
  month: "long",
  day: "numeric",
});
const dayYearFormat = new Intl.DateTimeFormat(undefined, {
  weekday: "long",
  year: "numeric",
  month: "long",
  day: "numeric",
});
const fullFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "full", timeStyle: "medium" });

/** Hours and minutes are all a clock time shows: one formatting per minute of the day, not one
 * per message (`Intl` formatting costs about as much as the rest of a message row). */
const clocks = new Map<number, string>();

export function clock(iso: string): string {
  const d = new Date(iso);
  const minute = d.getHours() * 60 + d.getMinutes();
  let text = clocks.get(minute);
  if (text === undefined) {
    text = timeFormat.format(d);
    clocks.set(minute, text);
  }
  return text;
}

export function full(iso: string): string {
  return fullFormat.format(new Date(iso));
}

/** Each row asks for its own day and its previous row's: the last few answers are kept. */
const dayKeys = new Map<string, string>();

/** A key that changes at local midnight: two messages on one day share it. */
export function dayKey(iso: string): string {
  let key = dayKeys.get(iso);
  if (key === undefined) {
    const d = new Date(iso);
    key = `${d.getFullYear()}-${d.getMonth()}-${d.getDate()}`;
    if (dayKeys.size >= 512) dayKeys.clear();
    dayKeys.set(iso, key);
  }
  return key;
}

export function dayLabel(iso: string, now = new Date()): string {
  const d = new Date(iso);
  const today = new Date(now.getFullYear(), now.getMonth(), now.getDate());
  const that = new Date(d.getFullYear(), d.getMonth(), d.getDate());
  const days = Math.round((today.getTime() - that.getTime()) / 86_400_000);
  if (days === 0) return "Today";
  if (days === 1) return "Yesterday";
  return (d.getFullYear() === now.getFullYear() ? dayFormat : dayYearFormat).format(d);
}
