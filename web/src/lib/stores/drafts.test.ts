import { afterEach, describe, expect, it, vi } from "vitest";
import { drafts } from "./drafts.svelte";
import { session } from "./session.svelte";

const USER = { id: "user_ann", name: "Ann", role: "owner" as const, createdAt: "2026-01-01T00:00:00Z" };

function stored(): string | null {
  return localStorage.getItem(`palaver:drafts:${USER.id}`);
}

describe("drafts", () => {
  afterEach(() => {
    vi.unstubAllGlobals();
    localStorage.clear();
  });

  it("are kept per user across reloads of the store", () => {
    session.user = { ...USER };
    drafts.set("ch_1", "half a thought");
    expect(JSON.parse(stored()!)).toEqual({ ch_1: "half a thought" });
    expect(drafts.get("ch_1")).toBe("half a thought");
  });

  it("leave the browser on logout", async () => {
    vi.stubGlobal("fetch", async () => {
      // As the server answers, it closes the session's sockets (4401): the page hears it first.
      window.dispatchEvent(new CustomEvent("palaver:unauthenticated"));
      return new Response('{"ok": true}', { status: 200 });
    });
    session.user = { ...USER };
    session.phase = "ready";
    drafts.set("ch_1", "not for the next person");
    await session.logout();
    expect(stored()).toBeNull();
    session.user = { ...USER };
    expect(drafts.get("ch_1")).toBe("");
  });

  it("stay when the session merely ended, for the same person logging in again", () => {
    session.user = { ...USER };
    session.phase = "ready";
    drafts.set("ch_1", "keep me");
    session.expired();
    expect(JSON.parse(stored()!)).toEqual({ ch_1: "keep me" });
  });
});
