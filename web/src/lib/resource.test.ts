import { describe, expect, it } from "vitest";
import { resource } from "./resource.svelte";

function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe("resource", () => {
  it("shows the newest request's answer even when an older one arrives last", async () => {
    const answers = [deferred<string>(), deferred<string>()];
    const signals: AbortSignal[] = [];
    let call = 0;
    const r = resource((signal) => {
      signals.push(signal);
      return answers[call++].promise;
    });
    const first = r.load();
    const second = r.load();
    expect(signals[0].aborted).toBe(true);
    expect(signals[1].aborted).toBe(false);
    answers[1].resolve("type=episodic");
    await second;
    expect(r.value).toBe("type=episodic");
    expect(r.loading).toBe(false);
    answers[0].resolve("all types");
    await first;
    expect(r.value).toBe("type=episodic");
  });

  it("drops a stale error too, and shows the current one", async () => {
    const answers = [deferred<string>(), deferred<string>()];
    let call = 0;
    const r = resource(() => answers[call++].promise);
    const first = r.load();
    const second = r.load();
    answers[0].reject(new Error("aborted"));
    await first;
    expect(r.error).toBeNull();
    expect(r.loading).toBe(true);
    answers[1].reject(new Error("The server could not be reached."));
    await second;
    expect(r.error).toBe("The server could not be reached.");
    expect(r.loading).toBe(false);
  });

  it("clears the error once a load succeeds", async () => {
    let fail = true;
    const r = resource(async () => {
      if (fail) throw new Error("no");
      return 1;
    });
    await r.load();
    expect(r.error).toBe("no");
    fail = false;
    await r.load();
    expect([r.value, r.error]).toEqual([1, null]);
  });
});
