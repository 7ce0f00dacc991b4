/**
 * Typed HTTP calls. The session lives in an HttpOnly cookie the browser sends by itself, so no
 * token ever passes through this code.
 */
import type {
  Agent,
  AgentFull,
  Chain,
  Channel,
  KbDocument,
  ListedChannel,
  Memory,
  MemoryType,
  MemoryVersion,
  Message,
  MessageVersion,
  Model,
  Passage,
  ReadState,
  ToolInfo,
  User,
} from "./types";
import type { SearchPage, SearchSort } from "./search";

export class ApiError extends Error {
  readonly status: number;
  /** Seconds to wait, from `Retry-After` (or `X-RateLimit-Reset`) on a 429. */
  readonly retryAfter: number | null;
  /** The body field the server's error is about, when it names one (forms show it there). */
  readonly field: string | null;

  constructor(status: number, message: string, retryAfter: number | null, field: string | null = null) {
    super(message);
    this.status = status;
    this.retryAfter = retryAfter;
    this.field = field;
  }
}

/** Called on any 401 other than a login attempt: the session is gone. */
let onUnauthenticated: () => void = () => {};

export function setUnauthenticatedHandler(handler: () => void): void {
  onUnauthenticated = handler;
}

function retryAfterOf(response: Response): number | null {
  const raw = response.headers.get("retry-after") ?? response.headers.get("x-ratelimit-reset");
  if (raw === null) return null;
  const seconds = Number(raw);
  if (Number.isFinite(seconds)) return Math.max(1, Math.ceil(seconds));
  const date = Date.parse(raw);
  return Number.isNaN(date) ? null : Math.max(1, Math.ceil((date - Date.now()) / 1000));
}

async function failure(response: Response): Promise<ApiError> {
  let message = `${response.status} ${response.statusText}`.trim();
  let field: string | null = null;
  try {
    const body: unknown = await response.json();
    if (body && typeof body === "object" && "error" in body && typeof body.error === "string") {
      message = body.error;
      if ("field" in body && typeof body.field === "string") field = body.field;
    }
  } catch {
    // not JSON: keep the status line
  }
  return new ApiError(response.status, message, retryAfterOf(response), field);
}

export interface RequestOptions {
  method?: string;
  body?: unknown;
  query?: Record<string, string | number | undefined>;
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** Finish even if the page is left meanwhile (a read marker sent as the page goes). */
  keepalive?: boolean;
  /** A GET of the first screen: take the answer the page carried (`provide`) or asked for as
   * it started (`preload`), if there is one. */
  early?: boolean;
}

type Query = Record<string, string | number | undefined>;

function urlOf(path: string, query: Query = {}): URL {
  const url = new URL(path, location.origin);
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined) url.searchParams.set(key, String(value));
  }
  return url;
}

/** Answers to the first screen's GETs, by address, until a request marked `early` takes one:
 * sent as the page starts (`preload`) or carried in the page (`provide`). Kept a few seconds at
 * most: one nobody takes (the person went elsewhere) is let go. */
const early = new Map<string, Promise<Response | null> | { carried: unknown }>();
const EARLY_FOR_MS = 10_000;

function keepEarly(url: string, answer: Promise<Response | null> | { carried: unknown }): void {
  early.set(url, answer);
  setTimeout(() => early.delete(url), EARLY_FOR_MS);
}

/**
 * Ask for the first screen's data before the code that shows it has mounted: its requests
 * would otherwise wait on each other (the session, then the shell, then the channel). The
 * answer, whatever its status, stands in for the fetch of the first `early` request of the same
 * address; a request that could not be sent is sent again then. Those sent without a session
 * answer 401: the session store drops them all when it finds none (`forgetEarly`).
 */
export function preload(path: string, query: Query = {}): void {
  const url = urlOf(path, query).href;
  keepEarly(
    url,
    fetch(url, { credentials: "same-origin" }).catch(() => null),
  );
}

/** An answer the page carried (`firstScreen.ts`), already parsed, for the first `early`
 * request of its address. */
export function provide(path: string, query: Query, body: unknown): void {
  keepEarly(urlOf(path, query).href, { carried: body });
}

/** Drop every answer not yet taken: they were the session's that just ended. */
export function forgetEarly(): void {
  early.clear();
}

/** Counts the sessions begun and ended on this page: each session, and each time logged out
 * between two, has a number of its own. */
let sessions = 0;

/** A login (or the page's session, found as it starts). */
export function beginSession(): void {
  sessions += 1;
}

/** The session ended (a logout, or the server's 401), and the stores were reset. */
export function endSession(): void {
  sessions += 1;
  forgetEarly();
}

/** Which session this is, taken as a request is sent (`request`, `sendForm`), or before a
 * store's own work that must not outlive it. */
export function sessionMark(): number {
  return sessions;
}

export function sessionEnded(mark: number): boolean {
  return mark !== sessions;
}

/**
 * What a request gets when its session ended before the answer landed, instead of the answer
 * or the error: the stores it was for were reset, and an answer landing after the next login
 * would put the last person's channel list, say, or the message they just sent, before the
 * next. It is an error, so the caller's `finally` still lets go of what it held.
 */
export class SessionEnded extends ApiError {
  constructor() {
    super(0, "The session ended.", null);
  }
}

export async function request<T>(path: string, options: RequestOptions = {}): Promise<T> {
  const session = sessionMark();
  const url = urlOf(path, options.query);
  const headers: Record<string, string> = { ...options.headers };
  if (options.body !== undefined) headers["content-type"] = "application/json";
  const taken = options.early ? early.get(url.href) : undefined;
  early.delete(url.href);
  // Carried in the page: the answer is here already, with no task between it and its store.
  if (taken && "carried" in taken) return taken.carried as T;
  let response: Response;
  try {
    response =
      (await taken) ??
      (await fetch(url, {
        method: options.method ?? "GET",
        headers,
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
        credentials: "same-origin",
        signal: options.signal,
        keepalive: options.keepalive,
      }));
  } catch {
    throw sessionEnded(session) ? new SessionEnded() : new ApiError(0, "The server could not be reached.", null);
  }
  if (!response.ok) {
    const error = await failure(response);
    // The 401 of a session already ended (logged out) says nothing of the one in use.
    if (response.status === 401 && path !== "/api/login" && !sessionEnded(session)) onUnauthenticated();
    throw sessionEnded(session) ? new SessionEnded() : error;
  }
  const body = (await response.json()) as T;
  if (sessionEnded(session)) throw new SessionEnded();
  return body;
}

export interface AgentFields {
  name?: string;
  avatar?: string;
  description?: string;
  model?: string;
  tools?: string[];
  soul?: string;
  autoInjectMemory?: boolean;
}

function memoriesPath(agentId: string): string {
  return `/api/agents/${encodeURIComponent(agentId)}/memories`;
}

export const api = {
  login: (password: string) =>
    request<{ ok: boolean }>("/api/login", { method: "POST", body: { password } }),
  logout: () => request<{ ok: boolean }>("/api/logout", { method: "POST" }),
  me: async () => (await request<{ user: User }>("/api/me", { early: true })).user,

  channels: async () =>
    (await request<{ channels: ListedChannel[] }>("/api/channels", { early: true })).channels,
  /** Move the caller's read marker forward (never back); answers the state after it. */
  markRead: (channelId: string, messageId: string) =>
    request<ReadState & { ok: boolean }>(`/api/channels/${encodeURIComponent(channelId)}/read`, {
      method: "POST",
      body: { messageId },
      keepalive: true,
    }),
  leaveChannel: (channelId: string) =>
    request<{ ok: boolean }>(`/api/channels/${encodeURIComponent(channelId)}/leave`, { method: "POST" }),
  deleteChannel: (channelId: string) =>
    request<{ ok: boolean }>(`/api/channels/${encodeURIComponent(channelId)}`, { method: "DELETE" }),
  createChannel: async (body: {
    name: string;
    type: "dm" | "group";
    agentIds: string[];
    memberIds: string[];
  }) => (await request<{ channel: Channel }>("/api/channels", { method: "POST", body })).channel,
  people: async (channelId: string) =>
    (await request<{ users: User[] }>(`/api/channels/${encodeURIComponent(channelId)}/people`))
      .users,

  agents: async () => (await request<{ agents: Agent[] }>("/api/agents", { early: true })).agents,
  agent: async (id: string) =>
    (await request<{ agent: AgentFull }>(`/api/agents/${encodeURIComponent(id)}`)).agent,
  createAgent: async (body: AgentFields) =>
    (await request<{ agent: AgentFull }>("/api/agents", { method: "POST", body })).agent,
  updateAgent: async (id: string, body: AgentFields) =>
    (
      await request<{ agent: AgentFull }>(`/api/agents/${encodeURIComponent(id)}`, {
        method: "PUT",
        body,
      })
    ).agent,
  deleteAgent: (id: string) =>
    request<{ ok: boolean }>(`/api/agents/${encodeURIComponent(id)}`, { method: "DELETE" }),
  models: () => request<{ models: Model[]; errors: Record<string, string> }>("/api/models"),
  tools: () =>
    request<{ tools: ToolInfo[]; mcpServers: Record<string, Record<string, unknown>> }>(
      "/api/tools",
    ),

  documents: async (agentId: string) =>
    (await request<{ documents: KbDocument[] }>("/api/rag/documents", { query: { agentId } }))
      .documents,
  deleteDocument: (id: string) =>
    request<{ ok: boolean }>(`/api/rag/documents/${encodeURIComponent(id)}`, { method: "DELETE" }),
  setVisibility: async (id: string, visibility: "owner" | "members") =>
    (
      await request<{ document: KbDocument }>(`/api/rag/documents/${encodeURIComponent(id)}`, {
        method: "PUT",
        body: { visibility },
      })
    ).document,
  ragQuery: (agentId: string, query: string, topK: number) =>
    request<{ results: Passage[]; reranked: boolean }>("/api/rag/query", {
      method: "POST",
      body: { agentId, query, topK },
    }),
  reindex: (agentId: string) =>
    request<{ ok: boolean }>(`/api/agents/${encodeURIComponent(agentId)}/reindex`, {
      method: "POST",
    }),

  memories: async (agentId: string, type?: MemoryType, q?: string, signal?: AbortSignal) =>
    (
      await request<{ memories: Memory[] }>(memoriesPath(agentId), {
        query: { type, q: q || undefined, limit: q ? 50 : undefined },
        signal,
      })
    ).memories,
  updateMemory: async (agentId: string, id: string, body: { content?: string; type?: MemoryType }) =>
    (
      await request<{ memory: Memory }>(`${memoriesPath(agentId)}/${encodeURIComponent(id)}`, {
        method: "PUT",
        body,
      })
    ).memory,
  deleteMemory: (agentId: string, id: string) =>
    request<{ ok: boolean }>(`${memoriesPath(agentId)}/${encodeURIComponent(id)}`, {
      method: "DELETE",
    }),
  memoryVersions: async (agentId: string, id: string) =>
    (
      await request<{ versions: MemoryVersion[] }>(
        `${memoriesPath(agentId)}/${encodeURIComponent(id)}/versions`,
      )
    ).versions,
  restoreMemory: async (agentId: string, id: string, version: number) =>
    (
      await request<{ memory: Memory }>(
        `${memoriesPath(agentId)}/${encodeURIComponent(id)}/restore`,
        { method: "POST", body: { version } },
      )
    ).memory,
  guests: async () => (await request<{ guests: User[] }>("/api/guests")).guests,

  /** A page, oldest first: the newest, or those `before` a message, or with `after` those
   * newer than it (a window opened far back pages forward to the live end). */
  messages: async (
    channelId: string,
    limit: number,
    before?: string,
    threadId?: string,
    after?: string,
    early = false,
  ) =>
    (
      await request<{ messages: Message[] }>("/api/messages", {
        query: { channelId, limit, before, threadId, after },
        early,
      })
    ).messages,
  search: (
    q: string,
    options: { limit?: number; cursor?: string | null; sort?: SearchSort; signal?: AbortSignal } = {},
  ) =>
    request<SearchPage>("/api/search", {
      query: {
        q,
        limit: options.limit ?? 20,
        cursor: options.cursor ?? undefined,
        sort: options.sort ?? "relevance",
      },
      signal: options.signal,
    }),
  post: (
    body: {
      channelId: string;
      content: string;
      type: string;
      metadata?: object;
      threadId?: string;
    },
    idempotencyKey: string,
  ) =>
    request<{ id: string; ok: boolean }>("/api/messages", {
      method: "POST",
      body,
      headers: { "idempotency-key": idempotencyKey },
    }),
  editMessage: async (id: string, content: string) =>
    (
      await request<{ message: Message }>(`/api/messages/${encodeURIComponent(id)}`, {
        method: "PATCH",
        body: { content },
      })
    ).message,
  deleteMessage: (id: string) =>
    request<{ ok: boolean }>(`/api/messages/${encodeURIComponent(id)}`, { method: "DELETE" }),
  versions: async (id: string) =>
    (
      await request<{ versions: MessageVersion[] }>(
        `/api/messages/${encodeURIComponent(id)}/versions`,
      )
    ).versions,
  react: (id: string, emoji: string) =>
    request<{ ok: boolean }>(`/api/messages/${encodeURIComponent(id)}/reactions`, {
      method: "POST",
      body: { emoji },
    }),
  unreact: (id: string, emoji: string) =>
    request<{ ok: boolean }>(
      `/api/messages/${encodeURIComponent(id)}/reactions/${encodeURIComponent(emoji)}`,
      { method: "DELETE" },
    ),
  cancelReply: (messageId: string) =>
    request<{ ok: boolean }>(`/api/messages/${encodeURIComponent(messageId)}/cancel`, {
      method: "POST",
    }),

  chains: async (channelId: string) =>
    (await request<{ chains: Chain[] }>("/api/chains", { query: { channelId } })).chains,
  chain: async (chainId: string) =>
    (await request<{ chain: Chain }>(`/api/chains/${encodeURIComponent(chainId)}`)).chain,
  steerChain: async (chainId: string, action: "pause" | "resume" | "cancel") =>
    (
      await request<{ chain: Chain }>(`/api/chains/${encodeURIComponent(chainId)}/${action}`, {
        method: "POST",
      })
    ).chain,
};

export interface UploadHandle<T> {
  promise: Promise<T>;
  abort: () => void;
}

/** Send a form with upload progress (fetch cannot report upload progress; XHR can). */
function sendForm<T>(
  url: string,
  form: FormData,
  headers: Record<string, string>,
  onProgress: (fraction: number) => void,
): UploadHandle<T> {
  const xhr = new XMLHttpRequest();
  const session = sessionMark();
  const promise = new Promise<T>((resolve, reject) => {
    xhr.open("POST", url);
    for (const [name, value] of Object.entries(headers)) xhr.setRequestHeader(name, value);
    xhr.responseType = "json";
    xhr.upload.onprogress = (e) => {
      if (e.lengthComputable) onProgress(e.loaded / e.total);
    };
    xhr.onload = () => {
      const body = xhr.response as (T & { error?: string; field?: string }) | null;
      if (xhr.status === 401 && !sessionEnded(session)) onUnauthenticated();
      if (sessionEnded(session)) {
        reject(new SessionEnded());
        return;
      }
      if (xhr.status >= 200 && xhr.status < 300 && body) {
        onProgress(1);
        resolve(body);
      } else {
        const retry = Number(xhr.getResponseHeader("retry-after"));
        reject(
          new ApiError(
            xhr.status,
            body?.error ?? `Upload failed (${xhr.status}).`,
            Number.isFinite(retry) && retry > 0 ? retry : null,
            body?.field ?? null,
          ),
        );
      }
    };
    xhr.onerror = () =>
      reject(sessionEnded(session) ? new SessionEnded() : new ApiError(0, "The upload failed: network error.", null));
    xhr.onabort = () =>
      reject(sessionEnded(session) ? new SessionEnded() : new ApiError(0, "The upload was cancelled.", null));
    xhr.send(form);
  });
  return { promise, abort: () => xhr.abort() };
}

/** Upload one file for a message; resolves with its URL. */
export function upload(file: File, onProgress: (fraction: number) => void): UploadHandle<string> {
  const form = new FormData();
  form.append("file", file, file.name);
  const sent = sendForm<{ url: string }>("/api/upload", form, {}, onProgress);
  return {
    promise: sent.promise.then((body) => body.url),
    abort: sent.abort,
  };
}

/**
 * Upload one document into an agent's knowledge base. `Prefer: respond-async` makes the server
 * answer once the file is parsed and recorded; its embedding then arrives as `ingest_progress`.
 */
export function uploadDocument(
  file: File,
  agentId: string,
  onProgress: (fraction: number) => void,
): UploadHandle<{ document: KbDocument; duplicate: boolean }> {
  const form = new FormData();
  form.append("agentId", agentId);
  form.append("file", file, file.name);
  return sendForm("/api/rag/upload", form, { Prefer: "respond-async" }, onProgress);
}
