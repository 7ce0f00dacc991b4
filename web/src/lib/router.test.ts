import { describe, expect, it } from "vitest";
import { channelPath, match, threadPath } from "./router.svelte";

describe("router", () => {
  it("matches routes and decodes their parameters", () => {
    expect(match("/c/ch_1")).toEqual({ name: "channel", params: { channelId: "ch_1" } });
    expect(match(channelPath("a b/ü"))).toEqual({ name: "channel", params: { channelId: "a b/ü" } });
    expect(match("/admin/agents/new")).toEqual({ name: "adminAgentNew", params: {} });
    expect(match("/admin/agents/agent_1/memories").name).toBe("adminMemories");
    expect(match("/")).toEqual({ name: "home", params: {} });
    expect(match("/admin/usage")).toEqual({ name: "adminUsage", params: {} });
    expect(match("/admin/audit")).toEqual({ name: "adminAudit", params: {} });
    expect(match("/admin/backups")).toEqual({ name: "adminBackups", params: {} });
  });

  it("matches a thread under its channel", () => {
    expect(match(threadPath("ch_1", "msg_2"))).toEqual({
      name: "thread",
      params: { channelId: "ch_1", threadId: "msg_2" },
    });
  });

  it.each(["/c/%", "/c/%E0%A4%A", "/c/%zz", "/admin/agents/%/knowledge", "/c/%C0%AF"])(
    "answers notFound for a malformed escape in %s instead of throwing",
    (path) => {
      expect(match(path)).toEqual({ name: "notFound", params: {} });
    },
  );

  it("answers notFound for unknown and over-long paths", () => {
    expect(match("/c")).toEqual({ name: "notFound", params: {} });
    expect(match("/c/x/y")).toEqual({ name: "notFound", params: {} });
    expect(match("/nothing/here")).toEqual({ name: "notFound", params: {} });
  });

  it("ignores doubled and trailing slashes as before", () => {
    expect(match("//c//ch_1/").name).toBe("channel");
  });
});
