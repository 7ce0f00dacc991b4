import { beforeEach, describe, expect, it, vi } from "vitest";

const { api } = await import("../api");
const { directory } = await import("./directory.svelte");

const agent = (id: string, name: string) => ({ id, name }) as never;

describe("the directory's agents", () => {
  beforeEach(() => {
    directory.reset();
    vi.restoreAllMocks();
  });

  it("says a name may come while the list is asked for", async () => {
    vi.spyOn(api, "agents").mockResolvedValue([agent("agent_a", "Ada")]);
    const loading = directory.loadAgents();
    expect(directory.awaitAgents(["agent_a"])).toBe(true);
    await loading;
    expect(directory.awaitAgents(["agent_a"])).toBe(false);
  });

  it("asks for the list itself when the page's first ask failed", async () => {
    const agents = vi.spyOn(api, "agents").mockRejectedValueOnce(new Error("offline"));
    await expect(directory.loadAgents()).rejects.toThrow("offline");
    agents.mockResolvedValue([agent("agent_a", "Ada")]);
    expect(directory.awaitAgents(["agent_a"])).toBe(true);
    await vi.waitFor(() => expect(directory.agentsLoading).toBe(false));
    expect(directory.awaitAgents(["agent_a"])).toBe(false);
    expect(directory.agents.agent_a.name).toBe("Ada");
  });

  it("asks again once for an agent made since the page loaded, then gives up on it", async () => {
    const agents = vi.spyOn(api, "agents").mockResolvedValue([agent("agent_a", "Ada")]);
    await directory.loadAgents();
    agents.mockResolvedValue([agent("agent_a", "Ada"), agent("agent_b", "Bo")]);
    expect(directory.awaitAgents(["agent_b"])).toBe(true);
    expect(directory.awaitAgents(["agent_b"])).toBe(true);
    await vi.waitFor(() => expect(directory.agentsLoading).toBe(false));
    expect(directory.agents.agent_b.name).toBe("Bo");
    expect(directory.awaitAgents(["agent_b", "agent_gone"])).toBe(true);
    await vi.waitFor(() => expect(directory.agentsLoading).toBe(false));
    expect(directory.awaitAgents(["agent_gone"])).toBe(false);
    expect(agents).toHaveBeenCalledTimes(3);
  });

  it("does not stay waiting when asking again fails", async () => {
    const agents = vi.spyOn(api, "agents").mockResolvedValue([]);
    await directory.loadAgents();
    agents.mockRejectedValue(new Error("offline"));
    expect(directory.awaitAgents(["agent_x"])).toBe(true);
    await vi.waitFor(() => expect(directory.agentsLoading).toBe(false));
    expect(directory.awaitAgents(["agent_x"])).toBe(false);
  });
});
