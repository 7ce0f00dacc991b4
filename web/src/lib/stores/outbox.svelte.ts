/**
 * Files on their way into channels: each is uploaded (XHR, with its progress), then posted as
 * its own `image` or `file` message, and shown at once through its timeline (the broadcast of
 * it settles into the same row). Kept per channel, so an upload carries on while the person
 * looks at another channel; a failure stays listed with its reason, for a retry.
 */
import { api, ApiError, upload, type UploadHandle } from "../api";
import { timelines } from "./messages.svelte";
import { session } from "./session.svelte";

export interface Attachment {
  key: number;
  file: File;
  progress: number;
  state: "uploading" | "sending" | "failed";
  error: string | null;
  url: string | null;
  handle: UploadHandle<string> | null;
}

type OnError = (error: ApiError) => void;

class Outbox {
  private byChannel = $state<Record<string, Attachment[]>>({});
  private nextKey = 0;

  list(channelId: string): Attachment[] {
    return this.byChannel[channelId] ?? [];
  }

  attach(channelId: string, files: File[], onerror?: OnError): void {
    for (const file of files) {
      if (!this.byChannel[channelId]) this.byChannel[channelId] = [];
      // Read back: the state's proxy of the list, not the plain array assigned.
      const items = this.byChannel[channelId];
      items.push({ key: this.nextKey++, file, progress: 0, state: "uploading", error: null, url: null, handle: null });
      // The proxy the list holds, so progress written to it shows.
      void this.send(channelId, items[items.length - 1], onerror);
    }
  }

  async send(channelId: string, item: Attachment, onerror?: OnError): Promise<void> {
    item.state = "uploading";
    item.error = null;
    try {
      if (item.url === null) {
        item.handle = upload(item.file, (p) => (item.progress = p));
        item.url = await item.handle.promise;
      }
      item.state = "sending";
      const isImage = item.file.type.startsWith("image/") && item.file.type !== "image/svg+xml";
      const type = isImage ? "image" : "file";
      const metadata = { name: item.file.name, size: item.file.size, mime: item.file.type };
      const { id } = await api.post({ channelId, content: item.url, type, metadata }, `upload-${item.url}`);
      timelines.get(channelId).addSent(id, item.url, type, metadata);
      this.drop(channelId, item);
    } catch (e) {
      item.state = "failed";
      item.error = e instanceof ApiError ? e.message : "The upload failed.";
      if (e instanceof ApiError) onerror?.(e);
    }
  }

  remove(channelId: string, item: Attachment): void {
    item.handle?.abort();
    this.drop(channelId, item);
  }

  private drop(channelId: string, item: Attachment): void {
    this.byChannel[channelId] = this.list(channelId).filter((a) => a.key !== item.key);
  }

  reset(): void {
    for (const items of Object.values(this.byChannel)) for (const item of items) item.handle?.abort();
    this.byChannel = {};
  }
}

export const outbox = new Outbox();
session.onReset(() => outbox.reset());
