/**
 * An agent's knowledge base as the owner's screen shows it: the documents, the uploads under
 * way and their embedding progress, and a re-index. The store owns the socket events
 * (`ingest_progress`, `reindex_progress`) and the optimistic changes (sharing, deleting), so the
 * screen's components only render it.
 */
import { api, uploadDocument, type UploadHandle } from "../api";
import { socket } from "../socket.svelte";
import type { KbDocument } from "../types";
import { session } from "./session.svelte";

export interface Upload {
  key: number;
  name: string;
  phase: "uploading" | "indexing" | "ready" | "duplicate" | "failed";
  fraction: number;
  documentId: string | null;
  error: string | null;
  handle: UploadHandle<unknown> | null;
}

type Progress = { done: number; total: number };

export class Knowledge {
  readonly agentId: string;
  documents = $state<KbDocument[] | null>(null);
  error = $state<string | null>(null);
  uploads = $state<Upload[]>([]);
  reindex = $state<Progress | null>(null);
  reindexing = $state(false);
  reindexError = $state<string | null>(null);
  /** Embedding progress by document id, from the events. */
  private live = $state<Record<string, Progress>>({});
  /** How each document's embedding ended, from the events: the last event can come before
   * the upload's own answer (which said "indexing"), and nothing would follow it. */
  private ended: Record<string, Upload["phase"]> = {};
  private nextKey = 0;
  /** Refreshes asked for so far, and the newest whose answer is shown (see `refresh`). */
  private refreshes = 0;
  private shown = 0;

  constructor(agentId: string) {
    this.agentId = agentId;
  }

  /** Follow the socket while a screen shows this knowledge base; answers how to stop. */
  follow(): () => void {
    const off = socket.on((event) => {
      if (event.type === "ingest_progress" && event.data.agentId === this.agentId) {
        const { documentId, done, total, status } = event.data;
        this.live[documentId] = { done, total };
        if (status !== "indexing") this.ended[documentId] = status;
        for (const item of this.uploads) {
          if (item.documentId !== documentId) continue;
          item.fraction = total ? done / total : 1;
          if (status !== "indexing") item.phase = status;
        }
        if (status !== "indexing" || !this.documents?.some((d) => d.id === documentId)) void this.refresh();
      } else if (event.type === "reindex_progress" && event.data.agentId === this.agentId) {
        this.reindex = { done: event.data.done, total: event.data.total };
        if (event.data.done >= event.data.total) this.reindexing = false;
      }
    });
    const offReconnect = socket.onReconnect(() => void this.refresh());
    return () => {
      off();
      offReconnect();
    };
  }

  /** The documents again. Several may be on their way at once (an upload's answer, progress
   * events, a reconnect): an answer older than the one shown, or than the owner's own change
   * (`settled`), is dropped, so it does not put back how things were. */
  async refresh(): Promise<void> {
    const asked = ++this.refreshes;
    try {
      const documents = await api.documents(this.agentId);
      if (asked <= this.shown) return;
      this.shown = asked;
      this.documents = documents;
      this.error = null;
    } catch (e) {
      if (asked > this.shown) this.error = (e as Error).message;
    }
  }

  /** The owner's own change is shown: refreshes asked for before it are older than it. */
  private settled(): void {
    this.shown = this.refreshes;
  }

  progressOf(document: KbDocument): Progress {
    return this.live[document.id] ?? document.progress;
  }

  upload(files: File[]): void {
    for (const file of files) {
      this.uploads.push({
        key: this.nextKey++,
        name: file.name,
        phase: "uploading",
        fraction: 0,
        documentId: null,
        error: null,
        handle: null,
      });
      // The state's proxy of the row, so what is written to it shows.
      const item = this.uploads[this.uploads.length - 1];
      const handle = uploadDocument(file, this.agentId, (p) => {
        if (item.phase === "uploading") item.fraction = p;
      });
      item.handle = handle;
      handle.promise.then(
        ({ document, duplicate }) => {
          item.documentId = document.id;
          item.handle = null;
          if (duplicate) {
            item.phase = "duplicate";
            item.fraction = 1;
          } else if (document.status === "indexing" && this.ended[document.id]) {
            item.phase = this.ended[document.id];
            item.fraction = 1;
          } else if (document.status === "indexing") {
            const seen = this.live[document.id];
            item.phase = "indexing";
            item.fraction = seen && seen.total ? seen.done / seen.total : 0;
          } else {
            item.phase = document.status;
            item.fraction = 1;
            item.error = document.error;
          }
          void this.refresh();
        },
        (e: Error) => {
          item.handle = null;
          item.phase = "failed";
          item.error = e.message;
        },
      );
    }
  }

  async startReindex(): Promise<void> {
    this.reindexError = null;
    this.reindex = null;
    this.reindexing = true;
    try {
      await api.reindex(this.agentId);
    } catch (e) {
      this.reindexing = false;
      this.reindexError = (e as Error).message;
    }
  }

  async share(document: KbDocument, visibility: "owner" | "members"): Promise<void> {
    try {
      const changed = await api.setVisibility(document.id, visibility);
      this.settled();
      this.documents = (this.documents ?? []).map((d) => (d.id === changed.id ? changed : d));
    } catch (e) {
      this.error = (e as Error).message;
    }
  }

  async remove(document: KbDocument): Promise<void> {
    try {
      await api.deleteDocument(document.id);
      this.settled();
      this.documents = (this.documents ?? []).filter((d) => d.id !== document.id);
    } catch (e) {
      this.error = (e as Error).message;
    }
  }
}

const byAgent = new Map<string, Knowledge>();

export function knowledgeOf(agentId: string): Knowledge {
  let found = byAgent.get(agentId);
  if (!found) {
    found = new Knowledge(agentId);
    byAgent.set(agentId, found);
  }
  return found;
}

session.onReset(() => byAgent.clear());
