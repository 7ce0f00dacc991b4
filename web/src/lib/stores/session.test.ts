/** Answers to requests of a session that land after it ended (a logout, and the next login). */
import { afterEach, describe, expect, it, vi } from "vitest";
import { listed } from "./channelFixture";
import type { Message } from "../types";

vi.mock("../socket.svelte", () => ({
  socket: {
    on: () => () => {},
    onReconnect: () => () => {},
    onMissed: () => () => {},
    start: () => {},
    stop: () => {},
    subscribe: () => {},
    unsubscribe: () => {},
  },
}));

const { api, SessionEnded, upload } = await import("../api");
const { session } = await import("./session.svelte");
const { channels } = await import("./channels.svelte");
const { chains } = await import("./chains.svelte");
const { directory } = await import("./directory.svelte");
const { budgetWatch } = await import("./budgets.svelte");
const { timelines } = await import("./messages.svelte");
const { Sending } = await import("../sending.svelte");

type Answer = { status: number; body: unknown } | "unreachable";

/** Lets every answer given so far reach its caller. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 10));

/** A server whose answers the test gives, address by address, in the order it chooses. */
function server() {
  const waiting = new Map<string, ((answer: Answer) => void)[]>();
  const fetch = vi.fn((url: URL | string) => {
    const path = new URL(String(url)).pathname;
    return new Promise<Response>((resolve, reject) => {
      const queue = waiting.get(path) ?? [];
      queue.push((answer) => {
        if (answer === "unreachable") reject(new TypeError("Failed to fetch"));
        else {
          const headers = { "content-type": "application/json" };
          resolve(new Response(JSON.stringify(answer.body), { status: answer.status, headers }));
        }
      });
      waiting.set(path, queue);
    });
  });
  vi.stubGlobal("fetch", fetch);
  return {
    answer(path: string, status: number, body: unknown): Promise<void> {
      return this.give(path, { status, body });
    },
    /** The connection fails: the server could not be reached. */
    cut(path: string): Promise<void> {
      return this.give(path, "unreachable");
    },
    /** How many requests to the address wait for their answer. */
    waiting(path: string): number {
      return waiting.get(path)?.length ?? 0;
    },
    /** Once the request has reached `fetch` (a few tasks after it was asked for). */
    async give(path: string, answer: Answer): Promise<void> {
      await settle();
      const next = waiting.get(path)?.shift();
      if (!next) throw new Error(`nothing asked for ${path}`);
      next(answer);
    },
  };
}

/** An upload's request, answered when the test says. */
class FakeUpload {
  static sent: FakeUpload[] = [];
  status = 0;
  response: unknown = null;
  responseType = "";
  upload = { onprogress: null };
  onload: (() => void) | null = null;
  onerror: (() => void) | null = null;
  onabort: (() => void) | null = null;
  open(): void {}
  setRequestHeader(): void {}
  getResponseHeader(): string | null {
    return null;
  }
  send(): void {
    FakeUpload.sent.push(this);
  }
  abort(): void {
    this.onabort?.();
  }
  answer(status: number, body: unknown): void {
    this.status = status;
    this.response = body;
    this.onload?.();
  }
}

function stored(id: string): Message {
  return {
    id,
    channelId: "ch_1",
    agentId: null,
    userId: "user_b",
    content: "hello",
    type: "text",
    metadata: {},
    createdAt: "2026-01-01T00:00:00Z",
    threadId: null,
  };
}


const USER = { id: "user_a", name: "Ada", role: "owner" };

async function loggedIn(net: ReturnType<typeof server>): Promise<void> {
  const checking = session.check();
  await net.answer("/api/me", 200, { user: USER });
  await checking;
}

async function logout(net: ReturnType<typeof server>): Promise<void> {
  const leaving = session.logout();
  await net.answer("/api/logout", 200, { ok: true });
  await leaving;
}

afterEach(() => {
  vi.unstubAllGlobals();
  for (const store of [channels, chains, directory, budgetWatch, timelines]) store.reset();
});

describe("a session's answers after it ended", () => {
  it("do not put the last person's channels, agents, people or chains before the next", async () => {
    const net = server();
    await loggedIn(net);
    const loading = Promise.allSettled([
      channels.load(),
      directory.loadAgents(),
      directory.loadPeople("ch_owner"),
      chains.load("ch_owner"),
    ]);
    await logout(net);
    await loggedIn(net);
    const agent = { id: "agent_owner", name: "Ledger" };
    const chain = { id: "chain_1", channelId: "ch_owner", status: "running", steps: [] };
    await net.answer("/api/channels", 200, { channels: [listed("ch_owner", "owners-only")] });
    await net.answer("/api/agents", 200, { agents: [agent] });
    await net.answer("/api/channels/ch_owner/people", 200, { users: [{ id: "user_b", name: "Bo" }] });
    await net.answer("/api/chains", 200, { chains: [chain] });
    const ended = await loading;
    expect(ended.map((e) => e.status)).toEqual(["rejected", "rejected", "fulfilled", "fulfilled"]);
    expect((ended[0] as PromiseRejectedResult).reason).toBeInstanceOf(SessionEnded);
    expect(channels.list).toEqual([]);
    expect(directory.agents).toEqual({});
    expect(directory.people).toEqual({});
    expect(chains.byChannel).toEqual({});
    // The next session's own are shown, and asked for again where the last one asked.
    const next = [channels.load(), directory.loadAgents(), directory.loadPeople("ch_owner")];
    await net.answer("/api/channels", 200, { channels: [listed("ch_guest", "lobby")] });
    await net.answer("/api/agents", 200, { agents: [{ id: "agent_guest", name: "Helper" }] });
    await net.answer("/api/channels/ch_owner/people", 200, { users: [{ id: "user_c", name: "Cy" }] });
    await Promise.all(next);
    expect(channels.list.map((c) => c.name)).toEqual(["lobby"]);
    expect(Object.keys(directory.agents)).toEqual(["agent_guest"]);
    expect(Object.keys(directory.people)).toEqual(["user_c"]);
  });

  it("do not put a message sent just before a logout in the next session's timeline", async () => {
    const net = server();
    await loggedIn(net);
    const sending = new Sending("ch_1", null);
    const sent = sending.send("the last person's words");
    await logout(net);
    await loggedIn(net);
    await net.answer("/api/messages", 201, { id: "msg_1" });
    expect(await sent).toBe(false);
    expect(timelines.get("ch_1").items).toEqual([]);
    // Nor an upload's.
    vi.stubGlobal("XMLHttpRequest", FakeUpload);
    FakeUpload.sent = [];
    const uploading = upload(new File(["x"], "x.txt"), () => {}).promise;
    await logout(net);
    await loggedIn(net);
    FakeUpload.sent[0].answer(200, { url: "/uploads/x.txt" });
    await expect(uploading).rejects.toBeInstanceOf(SessionEnded);
  });

  it("do not undo a reaction in the next session's timeline", async () => {
    const net = server();
    await loggedIn(net);
    timelines.get("ch_1").merge([stored("msg_1")]);
    const reacting = timelines.toggleReaction("ch_1", "msg_1", "👍", true);
    await logout(net);
    await loggedIn(net);
    // The next session's page holds the message with the reaction the server stored.
    const next = timelines.get("ch_1");
    next.merge([{ ...stored("msg_1"), reactions: [{ emoji: "👍", count: 1, userIds: [USER.id] }] }]);
    await net.answer("/api/messages/msg_1/reactions", 200, { ok: true });
    await expect(reacting).rejects.toBeInstanceOf(SessionEnded);
    expect(next.items[0]).toMatchObject({ id: "msg_1", reactions: [{ emoji: "👍", count: 1 }] });
  });

  it("leave the next session's budget ask alone, and its ask again", async () => {
    const net = server();
    await loggedIn(net);
    const last = budgetWatch.refresh();
    await logout(net);
    await loggedIn(net);
    const next = budgetWatch.refresh();
    // An ask that must see what was written after the one under way read: one more follows it.
    const fresh = budgetWatch.refresh(true);
    await net.answer("/api/settings", 200, { settings: { budgets: null } });
    await last;
    expect(budgetWatch.loaded).toBe(false);
    await settle();
    expect(net.waiting("/api/settings")).toBe(1);
    await net.answer("/api/settings", 200, { settings: { budgets: null } });
    await settle();
    expect(budgetWatch.loaded).toBe(true);
    expect(net.waiting("/api/settings")).toBe(1);
    await net.answer("/api/settings", 200, { settings: { budgets: null } });
    await Promise.all([next, fresh]);
  });

  it("do not end the session logged in since with the 401 of the one logged out", async () => {
    const net = server();
    await loggedIn(net);
    const before = api.agents();
    await logout(net);
    await loggedIn(net);
    await net.answer("/api/agents", 401, { error: "not logged in" });
    await expect(before).rejects.toBeInstanceOf(SessionEnded);
    expect(session.phase).toBe("ready");
    expect(session.user?.id).toBe(USER.id);
    // A 401 of the session in use still ends it; its caller, reset, hears that it ended.
    const now = api.agents();
    await net.answer("/api/agents", 401, { error: "not logged in" });
    await expect(now).rejects.toBeInstanceOf(SessionEnded);
    expect(session.phase).toBe("anonymous");
    expect(session.notice).toBe("Your session has ended; log in again.");
  });

  it("nor with the 401 of an upload of the one logged out", async () => {
    const net = server();
    vi.stubGlobal("XMLHttpRequest", FakeUpload);
    FakeUpload.sent = [];
    const file = new File(["x"], "x.txt");
    await loggedIn(net);
    const before = upload(file, () => {}).promise;
    await logout(net);
    await loggedIn(net);
    FakeUpload.sent[0].answer(401, { error: "not logged in" });
    await expect(before).rejects.toBeInstanceOf(SessionEnded);
    expect(session.phase).toBe("ready");
    const now = upload(file, () => {}).promise;
    FakeUpload.sent[1].answer(401, { error: "not logged in" });
    await expect(now).rejects.toBeInstanceOf(SessionEnded);
    expect(session.phase).toBe("anonymous");
  });

  it("leave the session in use answered as before, a wrong password included", async () => {
    const net = server();
    await loggedIn(net);
    const asked = api.agents();
    await net.answer("/api/agents", 200, { agents: [] });
    await expect(asked).resolves.toEqual([]);
    const failing = api.agents();
    await net.answer("/api/agents", 500, { error: "boom" });
    await expect(failing).rejects.toMatchObject({ status: 500, message: "boom" });
    const unreachable = api.people("ch_1");
    await net.cut("/api/channels/ch_1/people");
    await expect(unreachable).rejects.toMatchObject({ status: 0 });
    await logout(net);
    const wrong = session.login("nope");
    await net.answer("/api/login", 401, { error: "Wrong password." });
    await expect(wrong).rejects.toMatchObject({ status: 401, message: "Wrong password." });
    expect(session.phase).toBe("anonymous");
  });
});
