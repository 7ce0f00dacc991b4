/**
 * The search box's state: whether it is open, the query and sort, and the results of the
 * newest search (a search typed over an earlier one aborts it: only the newest answer counts).
 * A 400 is the server's words about the query, shown by the box; it is not thrown.
 */
import { api, ApiError } from "../api";
import type { SearchResult, SearchSort } from "../search";
import { session } from "./session.svelte";

export const SEARCH_PAGE = 20;
/** Typing pauses this long before a search is sent. */
export const DEBOUNCE_MS = 250;

export class Search {
  open = $state(false);
  query = $state("");
  sort = $state<SearchSort>("relevance");
  results = $state.raw<SearchResult[]>([]);
  nextCursor = $state<string | null>(null);
  /** The query the results are for (null before any answer). */
  searched = $state<string | null>(null);
  error = $state<string | null>(null);
  loading = $state(false);
  loadingMore = $state(false);

  private controller: AbortController | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;

  show(): void {
    this.open = true;
  }

  close(): void {
    this.open = false;
    this.cancel();
  }

  /** The query changed: search it after a pause (an empty one clears the results). */
  typed(query: string): void {
    this.query = query;
    if (this.timer) clearTimeout(this.timer);
    if (!query.trim()) {
      this.cancel();
      this.results = [];
      this.nextCursor = null;
      this.searched = null;
      this.error = null;
      return;
    }
    this.timer = setTimeout(() => void this.run(), DEBOUNCE_MS);
  }

  setSort(sort: SearchSort): void {
    if (sort === this.sort) return;
    this.sort = sort;
    if (this.query.trim()) void this.run();
  }

  /** Search now (Enter with no result chosen, a sort change, the debounce's end). */
  async run(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const q = this.query.trim();
    if (!q) return;
    this.controller?.abort();
    const controller = new AbortController();
    this.controller = controller;
    this.loading = true;
    this.loadingMore = false;
    try {
      const page = await api.search(q, { limit: SEARCH_PAGE, sort: this.sort, signal: controller.signal });
      if (controller.signal.aborted) return;
      this.results = page.results;
      this.nextCursor = page.nextCursor;
      this.error = null;
    } catch (error) {
      if (controller.signal.aborted) return;
      this.results = [];
      this.nextCursor = null;
      this.error = message(error);
    } finally {
      if (this.controller === controller) {
        this.searched = q;
        this.loading = false;
        this.controller = null;
      }
    }
  }

  /** The next page of the same search, appended. */
  async more(): Promise<void> {
    const cursor = this.nextCursor;
    const q = this.searched;
    if (!cursor || q === null || this.loadingMore || this.loading) return;
    const controller = new AbortController();
    this.controller = controller;
    this.loadingMore = true;
    try {
      const page = await api.search(q, {
        limit: SEARCH_PAGE,
        sort: this.sort,
        cursor,
        signal: controller.signal,
      });
      if (controller.signal.aborted) return;
      const known = new Set(this.results.map((r) => r.message.id));
      this.results = this.results.concat(page.results.filter((r) => !known.has(r.message.id)));
      this.nextCursor = page.nextCursor;
      this.error = null;
    } catch (error) {
      if (!controller.signal.aborted) this.error = message(error);
    } finally {
      if (this.controller === controller) {
        this.loadingMore = false;
        this.controller = null;
      }
    }
  }

  private cancel(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.controller?.abort();
    this.controller = null;
    this.loading = false;
    this.loadingMore = false;
  }

  reset(): void {
    this.close();
    this.query = "";
    this.sort = "relevance";
    this.results = [];
    this.nextCursor = null;
    this.searched = null;
    this.error = null;
  }
}

function message(error: unknown): string {
  if (error instanceof ApiError) return error.message;
  return "The search failed. Try again.";
}

export const search = new Search();
session.onReset(() => search.reset());
