/** Whole seconds left until a time (a 429's retry time), ticking while it runs. */
export class Countdown {
  private until = $state<number | null>(null);
  private now = $state(Date.now());
  private timer: ReturnType<typeof setInterval> | undefined;

  get seconds(): number {
    return this.until === null ? 0 : Math.max(0, Math.ceil((this.until - this.now) / 1000));
  }

  start(seconds: number, onend?: () => void): void {
    this.stop();
    this.now = Date.now();
    const until = this.now + seconds * 1000;
    this.until = until;
    this.timer = setInterval(() => {
      this.now = Date.now();
      if (this.now >= until) {
        this.stop();
        onend?.();
      }
    }, 250);
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.until = null;
  }
}
