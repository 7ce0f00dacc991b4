import { describe, expect, it, vi } from "vitest";

let deliver: (event: unknown) => void = () => {};
vi.mock("../socket.svelte", () => ({
  socket: {
    on: (listener: (event: unknown) => void) => {
      deliver = listener;
      return () => (deliver = () => {});
    },
    onReconnect: () => () => {},
  },
}));

let finish: (answer: unknown) => void = () => {};
vi.mock("../api", async (importOriginal) => {
  const real = await importOriginal<typeof import("../api")>();
  return {
    ...real,
    uploadDocument: vi.fn((_file: File, _agent: string, progress: (p: number) => void) => {
      progress(0.4);
      return { promise: new Promise((resolve) => (finish = resolve)), abort: vi.fn() };
    }),
  };
});

const { api } = await import("../api");
const { knowledgeOf } = await import("./knowledge.svelte");

/** `api.documents` answering only when the test lets each answer land, in the order it likes. */
function heldAnswers(): ((list: unknown[]) => void)[] {
  const answers: ((list: unknown[]) => void)[] = [];
  vi.spyOn(api, "documents").mockImplementation(
    () => new Promise((resolve) => answers.push(resolve as (list: unknown[]) => void)),
  );
  return answers;
}

const doc = (status: string) => ({ id: "doc_1", status, error: null, progress: { done: 0, total: 0 } });

describe("knowledge store", () => {
  it("follows an upload through its upload and its embedding, from the events it owns", async () => {
    vi.spyOn(api, "documents").mockResolvedValue([]);
    const kb = knowledgeOf("agent_1");
    const stop = kb.follow();
    kb.upload([new File(["# hi"], "notes.md")]);
    expect(kb.uploads[0]).toMatchObject({ phase: "uploading", fraction: 0.4 });
    finish({ document: doc("indexing"), duplicate: false });
    await vi.waitFor(() => expect(kb.uploads[0].phase).toBe("indexing"));
    deliver({ type: "ingest_progress", data: { agentId: "agent_1", documentId: "doc_1", done: 2, total: 4, status: "indexing" } });
    expect(kb.uploads[0].fraction).toBe(0.5);
    deliver({ type: "ingest_progress", data: { agentId: "agent_2", documentId: "doc_1", done: 4, total: 4, status: "ready" } });
    expect(kb.uploads[0].phase).toBe("indexing");
    deliver({ type: "ingest_progress", data: { agentId: "agent_1", documentId: "doc_1", done: 4, total: 4, status: "ready" } });
    expect(kb.uploads[0]).toMatchObject({ phase: "ready", fraction: 1 });
    deliver({ type: "reindex_progress", data: { agentId: "agent_1", done: 3, total: 3 } });
    expect(kb.reindex).toEqual({ done: 3, total: 3 });
    stop();
    expect(knowledgeOf("agent_1")).toBe(kb);
  });

  it("ends an upload whose last event came before the upload's own answer", async () => {
    vi.spyOn(api, "documents").mockResolvedValue([]);
    const kb = knowledgeOf("agent_3");
    const stop = kb.follow();
    kb.upload([new File(["hi"], "late.txt")]);
    deliver({ type: "ingest_progress", data: { agentId: "agent_3", documentId: "doc_1", done: 1, total: 1, status: "ready" } });
    finish({ document: doc("indexing"), duplicate: false });
    await vi.waitFor(() => expect(kb.uploads[0]).toMatchObject({ phase: "ready", fraction: 1 }));
    stop();
  });

  it("shows the documents of the last refresh asked for, whatever order the answers land in", async () => {
    const answers = heldAnswers();
    const kb = knowledgeOf("agent_4");
    const first = kb.refresh();
    const second = kb.refresh();
    answers[1]([doc("ready")]);
    await second;
    answers[0]([doc("indexing")]);
    await first;
    expect(kb.documents).toMatchObject([{ id: "doc_1", status: "ready" }]);
  });

  it("shows each answer newer than the one shown, so refreshes asked in a stream are not all dropped", async () => {
    const answers = heldAnswers();
    const kb = knowledgeOf("agent_5");
    const first = kb.refresh();
    void kb.refresh();
    answers[0]([doc("indexing")]);
    await first;
    expect(kb.documents).toMatchObject([{ id: "doc_1", status: "indexing" }]);
  });

  it("does not let a refresh asked for before a delete bring the document back", async () => {
    const answers = heldAnswers();
    vi.spyOn(api, "deleteDocument").mockResolvedValue({ ok: true } as never);
    const kb = knowledgeOf("agent_6");
    kb.documents = [doc("ready")] as never;
    const late = kb.refresh();
    await kb.remove(doc("ready") as never);
    expect(kb.documents).toEqual([]);
    answers[0]([doc("ready")]);
    await late;
    expect(kb.documents).toEqual([]);
  });
});
