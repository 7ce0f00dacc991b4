import { afterEach, describe, expect, it, vi } from "vitest";
import { api, forgetEarly } from "./api";
import { CARRIED_ID, preloadFirstScreen } from "./firstScreen";
import { timelines } from "./stores/messages.svelte";

function carry(data: unknown): void {
  const element = document.createElement("script");
  element.type = "application/json";
  element.id = CARRIED_ID;
  element.textContent = typeof data === "string" ? data : JSON.stringify(data);
  document.head.append(element);
}

/** A server that answers every address with the address itself, and counts. */
function network(): ReturnType<typeof vi.fn> {
  const fetch = vi.fn(async (url: URL | string) => {
    const path = new URL(String(url)).pathname;
    const body = { user: { id: `net ${path}` }, channels: [], agents: [], messages: [{ id: `net ${path}` }] };
    return new Response(JSON.stringify(body), { headers: { "content-type": "application/json" } });
  });
  vi.stubGlobal("fetch", fetch);
  return fetch;
}

const CARRIED = {
  me: { user: { id: "u_carried" } },
  channels: { channels: [] },
  agents: { agents: [] },
  messages: { channelId: "ch_1", limit: 50, page: { messages: [{ id: "m_carried" }] } },
};

describe("the first screen's data", () => {
  afterEach(() => {
    forgetEarly();
    document.getElementById(CARRIED_ID)?.remove();
    vi.unstubAllGlobals();
  });

  it("answers the first early requests from what the page carried, once each", async () => {
    const fetch = network();
    carry(CARRIED);
    preloadFirstScreen("/c/ch_1");
    expect(document.getElementById(CARRIED_ID)).toBeNull();
    expect(await api.me()).toEqual({ id: "u_carried" });
    expect(await api.messages("ch_1", 50, undefined, undefined, undefined, true)).toEqual([{ id: "m_carried" }]);
    expect(fetch).not.toHaveBeenCalled();
    expect(await api.me()).toEqual({ id: "net /api/me" });
    expect(fetch).toHaveBeenCalledTimes(1);
  });

  it("leaves carried messages to the early request of the same page only", async () => {
    const fetch = network();
    carry(CARRIED);
    preloadFirstScreen("/c/ch_1");
    // Another channel, another size, or a request that is not the timeline's first: the server.
    expect(await api.messages("ch_2", 50, undefined, undefined, undefined, true)).toEqual([{ id: "net /api/messages" }]);
    expect(await api.messages("ch_1", 100, undefined, undefined, undefined, true)).toEqual([{ id: "net /api/messages" }]);
    expect(await api.messages("ch_1", 50)).toEqual([{ id: "net /api/messages" }]);
    // That one went to the server, so the carried page (older now) is not taken afterwards.
    expect(await api.messages("ch_1", 50, undefined, undefined, undefined, true)).toEqual([{ id: "net /api/messages" }]);
    expect(fetch).toHaveBeenCalledTimes(4);
  });

  it("forgets what was carried when the session ends", async () => {
    const fetch = network();
    carry(CARRIED);
    preloadFirstScreen("/c/ch_1");
    forgetEarly();
    expect(await api.messages("ch_1", 50, undefined, undefined, undefined, true)).toEqual([{ id: "net /api/messages" }]);
    expect(await api.me()).toEqual({ id: "net /api/me" });
    expect(fetch).toHaveBeenCalledTimes(2);
  });

  it("asks for everything at once when the page carries nothing usable", async () => {
    const fetch = network();
    carry("{not json");
    preloadFirstScreen("/c/ch_9");
    expect(document.getElementById(CARRIED_ID)).toBeNull();
    const asked = fetch.mock.calls.map(([url]) => {
      const u = new URL(String(url));
      return u.pathname + u.search;
    });
    expect(asked.sort()).toEqual(["/api/agents", "/api/channels", "/api/me", "/api/messages?channelId=ch_9&limit=50"]);
    expect(await api.me()).toEqual({ id: "net /api/me" });
    expect(await api.channels()).toEqual([]);
    expect(fetch).toHaveBeenCalledTimes(4);
  });

  it("asks only who is logged in from the login screen", () => {
    const fetch = network();
    preloadFirstScreen("/login");
    expect(fetch).toHaveBeenCalledTimes(1);
  });
});

describe("a timeline and the page's carried messages", () => {
  afterEach(() => {
    forgetEarly();
    vi.restoreAllMocks();
  });

  it("takes them before its channel's subscription is confirmed, and catches up when it is", async () => {
    const spy = vi.spyOn(api, "messages").mockResolvedValue([]);
    const timeline = timelines.get("ch_early");
    await timeline.loadLatest();
    expect(spy.mock.calls[0]).toEqual(["ch_early", 50, undefined, undefined, undefined, true]);
    timelines.route({ type: "subscribed", data: { channelId: "ch_early" } });
    await vi.waitFor(() => expect(spy).toHaveBeenCalledTimes(2));
  });

  it("asks the server when made after its channel's subscription was confirmed", async () => {
    const spy = vi.spyOn(api, "messages").mockResolvedValue([]);
    timelines.route({ type: "subscribed", data: { channelId: "ch_late" } });
    await timelines.get("ch_late").loadLatest();
    expect(spy.mock.calls[0]).toEqual(["ch_late", 50, undefined, undefined, undefined, false]);
  });
});
