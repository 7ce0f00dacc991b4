/**
 * The scroll and window controller of a virtualized message feed (the channel's list and a
 * thread's): only the rows near the viewport are rendered, the rest are gaps whose heights come
 * from a Fenwick tree of measured heights (an estimate for rows never shown), updated a row at
 * a time (lib/offsets.ts).
 *
 * The view sticks to the bottom while new messages arrive, unless the person scrolled up.
 * Otherwise one message is the anchor: the row at the top of the view, and how far into it the
 * view starts. Nothing polls: when a row above the anchor changes height (measured by a
 * ResizeObserver, before the frame is painted) or rows come in above it (an older page), the
 * view is moved by exactly that much with a relative `scrollBy`, so a scroll the reader has
 * under way carries on. The rendered range is plain indices, kept while it still covers the
 * viewport with a margin (lib/window.ts). A focused row stays in the DOM while scrolled away.
 *
 * During a flick, rows coming into the range are placeholders of their height (a box, no
 * message): a full row costs some 50 KB of allocations, which at 30,000 px/s turned into a
 * garbage collection every second or so. The rows already shown stay; once the scroll
 * settles, the placeholders become rows, the viewport's first, a viewport's worth a frame.
 */
import { tick } from "svelte";
import { Offsets } from "./offsets";
import { itemId, lowerBound, type Item, type Timeline } from "./stores/messages.svelte";
import { EMPTY, cut, grow, nextRange, type Range } from "./window";

/** The height of a row never rendered, until some are: then their average. */
const FIRST_ESTIMATE = 72;
/** Rows are rendered this far beyond the viewport... */
const FAR = 1000;
/** ...and re-cut only once less than this is left on a side: more than a wheel step or a
 * flick's frame moves, so the view rarely lands in a gap. */
const NEAR = 750;
/** A re-cut adds at most this much (px) of rows in a frame's time (FRAME_MS), the rest a task
 * later: a flick's rows are made over two or three frames, not in one. Never less than the
 * viewport and SAFE px beyond it. */
const GROW = 250;
const SAFE = 250;
const FRAME_MS = 16;
const STICK_WITHIN = 48;
/** How long a message opened from a search stays highlighted (its fade is CSS's). */
export const FLASH_MS = 2600;
/** A scroll faster than this (px/ms) is fast: the rows stop taking the pointer until... */
const FAST = 2;
/** ...this long after its last scroll event. Faster than this (8,000 px/s, some ten
 * viewports a second: nobody reads at that speed) it is a flick, and rows coming in are
 * placeholders until it settles as well. */
const FLICK = 8;
const SETTLE_MS = 150;
/** How much of a row must be in view for it to count as seen. */
const MIN_SEEN = 24;

export type Segment =
  | { key: string; item: Item; index: number; light: boolean }
  | { key: string; from: number; to: number };

/** Where each list was read (a channel's, a thread's), so coming back lands at the same place. */
const places = new Map<string, { id: string; offset: number } | "bottom">();

export class Feed {
  readonly timeline: Timeline;
  scroller!: HTMLDivElement;
  content!: HTMLDivElement;
  firstGap: HTMLDivElement | undefined = undefined;
  viewport = $state(600);
  stuck = $state(true);
  unseen = $state(0);
  /** Bumped when row heights change: the gaps read it. */
  version = $state(0);
  range = $state.raw<Range>(EMPTY);
  focusedId = $state<string | null>(null);
  /** The row just opened from a search, highlighted for a moment. */
  flashId = $state<string | null>(null);
  /** A flick is under way: rows coming in are placeholders. */
  fast = $state(false);
  /** A fast scroll is under way: the rows take no pointer. */
  private scrolling = false;
  /** Bumped when placeholders become rows. */
  private upgraded = $state(0);
  /** The rows shown as placeholders, by id. */
  private light = new Set<string>();
  private upgradeTimer = 0;

  private heights = new Map<string, number>();
  private measuredSum = 0;
  private offsets = new Offsets();
  /** The list the offsets were built for. */
  private built: Item[] = [];
  /** Where the rows start inside the scrolled content (padding and the channel's start note). */
  private origin = 0;
  /** The row at the top of the view, and how far (px) the view starts below its top. */
  private anchor = { index: 0, id: "", offset: 0 };
  /** The last scroll position the page knows of (its own moves included). */
  private known = 0;
  private lastScroll = { top: 0, time: 0, speed: 0 };
  private placed = false;
  /** The timeline's count of pages forward seen: their rows are not "new messages". */
  private pagedNewer = 0;
  private flashTimer = 0;
  private settleTimer = 0;
  private growTimer = 0;
  /** The part of a correction (px) that rounding to the scroll position's pixels left out. */
  private shiftRest = 0;
  private growBudget = { since: -Infinity, left: GROW };
  /** The last segments handed out, by key: a row whose item and place are unchanged gets the
   * same object again, so the list's keyed each sees no change and the row updates nothing. */
  private lastSegments = new Map<string, Segment>();
  readonly rowObserver: ResizeObserver;

  constructor(timeline: Timeline) {
    this.timeline = timeline;
    this.rowObserver = new ResizeObserver((entries) => this.measured(entries));
  }

  private get key(): string {
    return this.timeline.threadId ?? this.timeline.channelId;
  }

  private get items(): Item[] {
    return this.timeline.items;
  }

  private estimate(): number {
    return this.heights.size ? this.measuredSum / this.heights.size : FIRST_ESTIMATE;
  }

  private rebuild(list: Item[]) {
    const guess = this.estimate();
    this.offsets = new Offsets(list.map((item) => this.heights.get(itemId(item)) ?? guess));
    this.built = list;
    // Gaps and placeholders whose indices did not change still take the new estimate.
    this.version += 1;
  }

  private measureOrigin() {
    if (this.firstGap) this.origin = this.firstGap.offsetTop;
  }

  private atBottom(): boolean {
    const s = this.scroller;
    return s.scrollHeight - s.scrollTop - s.clientHeight <= STICK_WITHIN;
  }

  /** The anchor for a scroll position, from the offsets alone (no layout read). */
  private anchorAt(top: number) {
    const y = top - this.origin;
    const index = this.offsets.indexAt(y);
    this.anchor = { index, id: this.built[index]?.id ?? "", offset: y - this.offsets.top(index) };
  }

  private updateRange(top: number) {
    const y = top - this.origin;
    const next = nextRange(this.offsets, this.range, y, this.viewport, NEAR, FAR);
    if (next === this.range) return;
    // GROW px of rows a frame's time, whatever asks (a scroll event, the row measurements of
    // the same frame, the task finishing a re-cut): only what the view needs goes beyond it.
    const now = performance.now();
    const budget = this.growBudget;
    if (now - budget.since >= FRAME_MS) {
      budget.since = now;
      budget.left = GROW;
    }
    const current = this.range;
    const grown = grow(this.offsets, current, next, y, this.viewport, SAFE, budget.left);
    const o = this.offsets;
    const added =
      Math.max(0, o.top(Math.min(current.start, grown.end)) - o.top(grown.start)) +
      Math.max(0, o.top(grown.end) - o.top(Math.max(current.end, grown.start)));
    budget.left = Math.max(0, budget.left - added);
    this.range = grown;
    if (grown !== next && !this.growTimer) {
      this.growTimer = window.setTimeout(
        () => {
          this.growTimer = 0;
          this.updateRange(this.known);
        },
        Math.max(0, FRAME_MS - (now - budget.since)),
      );
    }
  }

  private toBottom() {
    this.scroller.scrollTop = this.scroller.scrollHeight;
    this.movedTo();
  }

  /** The page moved the view itself: that move is not the reader's scroll speed. */
  private movedTo() {
    this.known = this.scroller.scrollTop;
    this.lastScroll.top = this.known;
  }

  private remember() {
    places.set(this.key, this.stuck ? "bottom" : { id: this.anchor.id, offset: this.anchor.offset });
  }

  onScroll = () => {
    const top = this.scroller.scrollTop;
    const now = performance.now();
    const previous = this.known;
    const last = this.lastScroll;
    this.known = top;
    // A scroll event where the page's own last move left the view is that move's echo.
    const moved = top !== last.top;
    if (moved) {
      last.speed = now - last.time < 200 ? Math.abs(top - last.top) / Math.max(1, now - last.time) : 0;
      last.time = now;
    }
    last.top = top;
    // Only the reader scrolling up lets go of the bottom: the page's own moves go down. The
    // bottom of a window far back (detached) is not the live end: nothing sticks there.
    if (this.atBottom() && this.timeline.live) this.stuck = true;
    else if (top < previous - 1) this.stuck = false;
    if (this.stuck) this.unseen = 0;
    // Stuck at the bottom, the moves are the page's own or the browser's (clamping the
    // position as rows measure shorter than their estimate), never a flick.
    else if (moved) this.flick(last.speed);
    this.anchorAt(top);
    this.updateRange(top);
    this.remember();
    this.prefetch(top);
  };

  /** During a fast scroll the rows take no pointer (a class on the content): rows passing under
   * a still pointer would each restyle for hover (read back, forced, by the next scroll event)
   * and each be "reached" and build its actions. Hover and clicks are back once it settles. */
  private flick(speed: number) {
    if (!this.scrolling && speed <= FAST) return;
    if (!this.scrolling) {
      this.scrolling = true;
      this.content.classList.add("scrolling");
    }
    if (!this.fast && speed > FLICK) {
      this.fast = true;
      clearTimeout(this.upgradeTimer);
      this.upgradeTimer = 0;
    }
    clearTimeout(this.settleTimer);
    this.settleTimer = window.setTimeout(() => {
      this.scrolling = false;
      this.content.classList.remove("scrolling");
      this.fast = false;
      this.upgrade();
    }, SETTLE_MS);
  }

  /** The placeholders nearest the viewport become rows: a viewport and SAFE px of them, the
   * rest a frame later (a flick that starts again leaves them as they are). */
  private upgrade = () => {
    this.upgradeTimer = 0;
    if (this.fast || !this.light.size) return;
    const y = this.known - this.origin;
    const distance = (i: number) => Math.max(0, this.offsets.top(i) - (y + this.viewport), y - this.offsets.top(i + 1));
    const waiting: { id: string; index: number }[] = [];
    for (const id of this.light) {
      const index = lowerBound(this.built, id);
      if (index < this.built.length && itemId(this.built[index]) === id) waiting.push({ id, index });
      else this.light.delete(id);
    }
    waiting.sort((a, b) => distance(a.index) - distance(b.index));
    let budget = this.viewport + SAFE;
    for (const { id, index } of waiting) {
      if (budget <= 0) break;
      budget -= this.offsets.top(index + 1) - this.offsets.top(index);
      this.light.delete(id);
    }
    this.upgraded += 1;
    if (this.light.size) this.upgradeTimer = window.setTimeout(this.upgrade, FRAME_MS);
  };

  /** Older pages are asked for well before the edge, and larger when the reader flicks; in a
   * detached window, newer pages likewise before its bottom edge. */
  private prefetch(top: number) {
    const t = this.timeline;
    if (!t.live && t.loaded && !t.loadingNewer) {
      const below = this.origin + this.offsets.total() - (top + this.viewport);
      const ahead = Math.max(3 * this.viewport, this.lastScroll.speed * 1000);
      if (below < ahead) void t.loadNewer(this.lastScroll.speed > 2 ? 200 : 100);
    }
    // At the bottom the reader is not going back; the first scroll up starts it.
    if (this.stuck || !t.loaded || !t.hasOlder || t.loadingOlder) return;
    const ahead = Math.max(3 * this.viewport, this.lastScroll.speed * 1000);
    if (top - this.origin < ahead) void t.loadOlder(this.lastScroll.speed > 2 ? 200 : 100);
  }

  /** The list changed (a page came in above, a message below, a reply started): rebuild the
   * offsets and keep the anchor's message where the reader saw it. Run before the DOM updates. */
  listChanged(list: Item[]): void {
    const before = this.built;
    const scroller = this.scroller as HTMLDivElement | undefined;
    const paged = this.pagedNewer !== this.timeline.pagedNewer;
    this.pagedNewer = this.timeline.pagedNewer;
    if (!this.stuck && !paged && this.timeline.live && scroller && before.length && list.length > before.length) {
      const last = before[before.length - 1]?.id;
      if (last !== undefined && list[list.length - 1].id > last) this.unseen += 1;
    }
    // A scroll of the reader's not handled yet moves the anchor first (once placed: before,
    // there is none, and reading the position would force a layout of the page still mounting).
    if (this.placed && scroller && scroller.scrollTop !== this.known) this.onScroll();
    const oldTop = this.offsets.top(this.anchor.index);
    this.rebuild(list);
    if (!scroller) return;
    if (this.stuck) {
      this.range = cut(this.offsets, this.offsets.total() - this.viewport, this.viewport, FAR);
      void tick().then(() => this.stuck && this.toBottom());
      return;
    }
    const index = this.anchor.id ? lowerBound(list, this.anchor.id) : 0;
    const shift = this.offsets.top(index) - oldTop;
    this.anchor = { ...this.anchor, index };
    const top = this.known + shift;
    this.range = nextRange(this.offsets, EMPTY, top - this.origin, this.viewport, NEAR, FAR);
    if (shift) {
      void tick().then(() => {
        this.moveBy(shift);
        this.prefetch(this.known);
      });
    }
  }

  private measured(entries: ResizeObserverEntry[]) {
    if (this.scroller.scrollTop !== this.known) this.onScroll();
    let above = 0;
    let changed = false;
    for (const entry of entries) {
      const row = entry.target as HTMLElement;
      const id = row.dataset.id;
      if (!id || !row.isConnected) continue;
      // Fractional: rounded heights would drift by half a pixel a row.
      const height = entry.borderBoxSize?.[0]?.blockSize ?? row.getBoundingClientRect().height;
      const was = this.heights.get(id);
      if (was === height) continue;
      this.measuredSum += height - (was ?? 0);
      this.heights.set(id, height);
      const index = lowerBound(this.built, id);
      if (this.built[index]?.id !== id) continue;
      const delta = this.offsets.set(index, height);
      if (index < this.anchor.index) above += delta;
      changed = true;
    }
    if (!changed) return;
    this.version += 1;
    if (this.stuck) {
      this.keepBottom();
    } else if (above) {
      // A row above the anchor grew or shrank: the view moves with it.
      this.moveBy(above);
    }
    this.updateRange(this.known);
  }

  /** Move the view by `delta` px, relatively (a scroll under way carries on). The scroll
   * position is kept in whole pixels: what rounding left out is carried to the next move, or
   * pages coming in above and rows measured a few at a time would drift the view a pixel each. */
  private moveBy(delta: number): void {
    const want = delta + this.shiftRest;
    const from = this.scroller.scrollTop;
    this.scroller.scrollBy({ top: want, behavior: "instant" });
    this.movedTo();
    const rest = want - (this.known - from);
    this.shiftRest = Math.abs(rest) < 1 ? rest : 0;
  }

  /** At the bottom, stay there: now, and once the gaps and rows this change moves are in. */
  private keepBottom() {
    this.toBottom();
    void tick().then(() => this.stuck && this.toBottom());
  }

  /** Watch the viewport and the content: at the bottom, stay there. This runs after layout
   * and before paint, so the view never shows a frame off the bottom. */
  observe(): () => void {
    const resize = new ResizeObserver(() => {
      this.viewport = this.scroller.clientHeight;
      this.measureOrigin();
      this.updateRange(this.known);
      if (this.stuck) this.keepBottom();
    });
    resize.observe(this.scroller);
    resize.observe(this.content);
    return () => {
      resize.disconnect();
      this.rowObserver.disconnect();
      clearTimeout(this.settleTimer);
      clearTimeout(this.growTimer);
      clearTimeout(this.upgradeTimer);
    };
  }

  /** Once the first page is in: back to where this list was read, or the newest messages. */
  place(): void {
    if (!this.timeline.loaded || this.placed) return;
    this.placed = true;
    const items = this.items;
    const place = places.get(this.key);
    const index = place && place !== "bottom" ? lowerBound(items, place.id) : -1;
    if (place && place !== "bottom" && items[index]?.id === place.id) {
      this.stuck = false;
      this.anchor = { index, id: place.id, offset: place.offset };
      const top = this.offsets.top(index) + place.offset;
      this.range = cut(this.offsets, top, this.viewport, FAR);
      void tick().then(() => {
        this.measureOrigin();
        this.scroller.scrollTop = this.origin + this.offsets.top(this.anchor.index) + this.anchor.offset;
        this.movedTo();
      });
    } else {
      this.range = cut(this.offsets, this.offsets.total() - this.viewport, this.viewport, FAR);
      void tick().then(() => {
        this.measureOrigin();
        this.toBottom();
      });
    }
  }

  /** The rows to render, and the gaps between them: the focused row stays, wherever it is,
   * and so does the row being edited (`editingId`: its editor takes focus, which scrolls it
   * into view, even when the up-arrow opened it on a row scrolled away). During a flick a row
   * not already shown comes in as a placeholder (`light`); pinned rows never do. */
  segments(list: Item[], editingId: string | null = null): Segment[] {
    const { start, end } = this.range;
    const fast = this.fast;
    void this.upgraded;
    const light = new Set<string>();
    const out: Segment[] = [];
    const pinned: number[] = [];
    for (const id of new Set([this.focusedId, editingId])) {
      if (id === null) continue;
      const i = lowerBound(list, id);
      if (list[i]?.id === id && (i < start || i >= end)) pinned.push(i);
    }
    pinned.sort((a, b) => a - b);
    let from = 0;
    const last = this.lastSegments;
    const next = new Map<string, Segment>();
    const push = (segment: Segment) => {
      const was = last.get(segment.key);
      const same =
        was !== undefined &&
        ("item" in segment
          ? "item" in was && was.item === segment.item && was.index === segment.index && was.light === segment.light
          : "from" in was && was.from === segment.from && was.to === segment.to);
      const kept = same ? was : segment;
      next.set(kept.key, kept);
      out.push(kept);
    };
    const row = (index: number) => {
      if (index > from) push({ key: `gap:${out.length}`, from, to: index });
      const id = itemId(list[index]);
      const was = last.get(id);
      const pin = id === this.focusedId || id === editingId;
      const placeholder = !pin && (this.light.has(id) || (fast && !(was && "item" in was)));
      if (placeholder) light.add(id);
      push({ key: id, item: list[index], index, light: placeholder });
      from = index + 1;
    };
    for (const i of pinned) if (i < start) row(i);
    for (let i = start; i < Math.min(end, list.length); i++) row(i);
    for (const i of pinned) if (i >= end) row(i);
    push({ key: "gap:end", from, to: list.length });
    this.lastSegments = next;
    this.light = light;
    return out;
  }

  gap(from: number, to: number): number {
    void this.version;
    return to > from ? this.offsets.top(to) - this.offsets.top(from) : 0;
  }

  /** A placeholder's height: the row's, measured or estimated, as the offsets count it. */
  height(index: number): number {
    return this.gap(index, index + 1);
  }

  onFocusIn = (event: FocusEvent) => {
    const row = (event.target as HTMLElement).closest<HTMLElement>("[data-id]");
    this.focusedId = row?.dataset.id ?? null;
  };

  onFocusOut = (event: FocusEvent) => {
    const next = event.relatedTarget as Node | null;
    if (!next || !this.content.contains(next)) this.focusedId = null;
  };

  private articleOf(id: string): HTMLElement | null {
    return this.content.querySelector<HTMLElement>(`[data-id="${CSS.escape(id)}"] article`);
  }

  /** The feed pattern's keys: Page Down and Page Up move to the next and previous message,
   * rendering it first when the focused row was scrolled away from the rest. */
  onKeydown = async (event: KeyboardEvent) => {
    if (event.key !== "PageDown" && event.key !== "PageUp") return;
    const article = (event.target as HTMLElement).closest("article");
    const id = article?.closest<HTMLElement>("[data-id]")?.dataset.id;
    if (!id) return;
    const items = this.items;
    const index = lowerBound(items, id) + (event.key === "PageDown" ? 1 : -1);
    if (index < 0 || index >= items.length) return;
    event.preventDefault();
    const target = items[index].id;
    // Focused before it is shown: a focused row is never a placeholder, even during a flick.
    this.focusedId = target;
    if (!this.articleOf(target)) {
      this.scroller.scrollTop = this.origin + this.offsets.top(index) - this.viewport / 3;
      this.lastScroll.top = this.scroller.scrollTop;
      this.onScroll();
    }
    await tick();
    this.articleOf(target)?.focus();
    // Focus scrolls a row partly out of view into it: not the reader's speed (but a move up
    // still lets go of the bottom, so the position the scroll event compares with is kept).
    this.lastScroll.top = this.scroller.scrollTop;
  };

  /** Bring a message into view (a third down the viewport), focus it and flash it: a search
   * result just opened. The timeline holds it (see `Timeline.jumpTo`). */
  async reveal(id: string): Promise<void> {
    const index = lowerBound(this.items, id);
    if (this.items[index]?.id !== id) return;
    if (this.built !== this.items) this.rebuild(this.items);
    this.stuck = false;
    this.unseen = 0;
    const lead = Math.round(this.viewport / 3);
    this.anchor = { index, id, offset: -lead };
    this.range = cut(this.offsets, this.offsets.top(index) - lead, this.viewport, FAR);
    await tick();
    this.measureOrigin();
    this.scroller.scrollTop = this.origin + this.offsets.top(index) - lead;
    this.movedTo();
    this.anchorAt(this.known);
    this.remember();
    this.articleOf(id)?.focus({ preventScroll: true });
    this.flashId = id;
    clearTimeout(this.flashTimer);
    this.flashTimer = window.setTimeout(() => {
      if (this.flashId === id) this.flashId = null;
    }, FLASH_MS);
    this.prefetch(this.known);
  }

  /** The index of the lowest row the reader sees (at least `MIN_SEEN` px of it), from the
   * offsets (no layout read); -1 before the list is placed. Read markers follow it. */
  seenThrough(): number {
    if (!this.placed || !this.built.length) return -1;
    if (this.stuck) return this.built.length - 1;
    const bottom = this.known + this.viewport - this.origin - MIN_SEEN;
    return Math.min(this.built.length - 1, this.offsets.indexAt(Math.max(0, bottom)));
  }

  jumpToLatest = () => {
    if (!this.timeline.live) void this.timeline.toLive();
    this.stuck = true;
    this.unseen = 0;
    this.toBottom();
    this.remember();
  };
}
