/**
 * Reading follows the eyes: a feed (the channel's list or a thread's) tells the read state the
 * lowest stored message the reader sees, a moment after the view settles (a scroll, new rows,
 * the tab shown again), never while the tab is hidden. Call it inside a component's `$effect`.
 *
 * The channel's marker is one for its timeline and its threads (ids sort by time), so:
 * - the channel's list read to its newest message also reads what the page counted after it
 *   (replies in threads, whose roots show their summary);
 * - a thread's list moves the marker only once the channel's own list is read to its end:
 *   otherwise it would pass over channel messages the reader has not seen;
 * - a timeline holding a window far back (opened from a search) moves nothing until it has
 *   paged forward to the live end.
 */
import type { Feed } from "./feed.svelte";
import type { Item, Timeline } from "./stores/messages.svelte";
import { readState } from "./stores/readState.svelte";

/** How long the view rests before what it shows counts as seen. */
const SETTLE_MS = 200;

/** The newest stored (not streaming) message at or above `index`. */
export function storedAt(items: Item[], index: number): Item | undefined {
  for (let i = Math.min(index, items.length - 1); i >= 0; i--) {
    if (!items[i].streaming) return items[i];
  }
  return undefined;
}

export function trackReading(feed: Feed, timeline: Timeline, channel: Timeline): () => void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const check = () => {
    timer = undefined;
    // A flick's rows pass as placeholders: what it passes over is not seen.
    if (feed.fast) return soon();
    // A window opened far back (a search result) is not read up to: what lies between it
    // and the marker was skipped, not seen.
    if (document.visibilityState !== "visible" || !timeline.live) return;
    const items = timeline.items;
    const index = feed.seenThrough();
    const item = index < 0 ? undefined : storedAt(items, index);
    if (!item) return;
    const channelId = timeline.channelId;
    if (timeline.threadId === null) {
      const atEnd = item === storedAt(items, items.length - 1);
      const beyond = atEnd ? readState.newestKnown(channelId) : undefined;
      const to = beyond !== undefined && beyond > item.id ? beyond : item.id;
      readState.seen(channelId, to, items);
      return;
    }
    const main = storedAt(channel.items, channel.items.length - 1);
    const marker = readState.get(channelId).lastReadId;
    if (main && (marker === null || marker < main.id)) return;
    readState.seen(channelId, item.id, items);
  };
  const soon = () => {
    if (timer === undefined) timer = setTimeout(check, SETTLE_MS);
  };
  const scroller = feed.scroller;
  scroller.addEventListener("scroll", soon, { passive: true });
  document.addEventListener("visibilitychange", soon);
  // New rows (a message, an older page), and the list placed once loaded.
  $effect(() => {
    void timeline.items;
    void timeline.loaded;
    void feed.stuck;
    soon();
  });
  return () => {
    clearTimeout(timer);
    scroller.removeEventListener("scroll", soon);
    document.removeEventListener("visibilitychange", soon);
  };
}
