/** The time, ticking once a minute while something reads it: relative times ("5 min ago")
 * move on without each row keeping its own timer. */
import { createSubscriber } from "svelte/reactivity";

class Clock {
  private subscribe = createSubscriber((update) => {
    const timer = window.setInterval(update, 30_000);
    return () => window.clearInterval(timer);
  });

  get now(): number {
    this.subscribe();
    return Date.now();
  }
}

export const clockTick = new Clock();
