/**
 * Load, error and reload for one thing a screen shows, where only the newest request counts:
 * each load aborts the one before (its `AbortSignal` goes to `fetch`), and an answer that
 * arrives after a newer load started is dropped, so a fast filter change can never show an
 * older filter's answer last.
 */
export class Resource<T> {
  value = $state<T | undefined>(undefined);
  error = $state<string | null>(null);
  loading = $state(false);

  private controller: AbortController | null = null;
  private readonly fetcher: (signal: AbortSignal) => Promise<T>;

  constructor(fetcher: (signal: AbortSignal) => Promise<T>) {
    this.fetcher = fetcher;
  }

  /** Ask again; resolves when this request's answer (or error) is shown, or was dropped. */
  async load(): Promise<void> {
    this.controller?.abort();
    const controller = new AbortController();
    this.controller = controller;
    this.loading = true;
    try {
      const value = await this.fetcher(controller.signal);
      if (controller !== this.controller) return;
      this.value = value;
      this.error = null;
    } catch (error) {
      if (controller !== this.controller) return;
      this.error = error instanceof Error ? error.message : String(error);
    } finally {
      if (controller === this.controller) {
        this.loading = false;
        this.controller = null;
      }
    }
  }

  /** Drop whatever is in flight (the screen is going away). */
  abort(): void {
    this.controller?.abort();
    this.controller = null;
    this.loading = false;
  }
}

/** `new Resource(fetcher)`, for symmetry with Svelte's own helpers. */
export function resource<T>(fetcher: (signal: AbortSignal) => Promise<T>): Resource<T> {
  return new Resource(fetcher);
}
