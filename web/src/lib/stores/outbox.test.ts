import { describe, expect, it, vi } from "vitest";

vi.mock("../api", async (importOriginal) => {
  const real = await importOriginal<typeof import("../api")>();
  return {
    ...real,
    upload: vi.fn((file: File, progress: (p: number) => void) => {
      progress(0.5);
      const url = `/uploads/2026-01/${file.name}`;
      return { promise: file.name.startsWith("bad") ? Promise.reject(new real.ApiError(413, "Too large.", null)) : Promise.resolve(url), abort: vi.fn() };
    }),
  };
});

const { api } = await import("../api");
const { outbox } = await import("./outbox.svelte");
const { timelines } = await import("./messages.svelte");

describe("outbox", () => {
  it("uploads, posts each file as its own message, shows it at once and forgets it", async () => {
    const post = vi.spyOn(api, "post").mockResolvedValue({ id: "msg_9", ok: true });
    outbox.attach("ch_1", [new File(["x"], "cat.png", { type: "image/png" })]);
    expect(outbox.list("ch_1")).toHaveLength(1);
    await vi.waitFor(() => expect(outbox.list("ch_1")).toHaveLength(0));
    expect(post).toHaveBeenCalledWith(
      { channelId: "ch_1", content: "/uploads/2026-01/cat.png", type: "image", metadata: { name: "cat.png", size: 1, mime: "image/png" } },
      "upload-/uploads/2026-01/cat.png",
    );
    expect(timelines.get("ch_1").find("msg_9")).toMatchObject({ type: "image", content: "/uploads/2026-01/cat.png" });
  });

  it("keeps a failed file listed with its reason, per channel", async () => {
    const onerror = vi.fn();
    outbox.attach("ch_2", [new File(["x"], "bad.pdf")], onerror);
    await vi.waitFor(() => expect(outbox.list("ch_2")[0]?.state).toBe("failed"));
    expect(outbox.list("ch_2")[0].error).toBe("Too large.");
    expect(onerror).toHaveBeenCalledTimes(1);
    expect(outbox.list("ch_1")).toHaveLength(0);
    outbox.remove("ch_2", outbox.list("ch_2")[0]);
    expect(outbox.list("ch_2")).toHaveLength(0);
  });
});
