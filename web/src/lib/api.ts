/**
 * Typed HTTP calls. The session lives in an HttpOnly cookie the browser sends by itself, so no
 * token ever passes through this code.
 */
import type { Agent, Chain, Channel, Message, User } from "./types";

export class ApiError extends Error {
  readonly status: number;
  /** Seconds to wait, from `Retry-After` (or `X-RateLimit-Reset`) on a 429. */
  readonly retryAfter: number | null;

  constructor(status: number, message: string, retryAfter: number | null) {
    super(message);
    this.status = status;
    this.retryAfter = retryAfter;
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
  try {
    const body: unknown = await response.json();
    if (body && typeof body === "object" && "error" in body && typeof body.error === "string") {
      message = body.error;
    }
  } catch {
    // not JSON: keep the status line
  }
  return new ApiError(response.status, message, retryAfterOf(response));
}

export interface RequestOptions {
  method?: string;
  body?: unknown;
  query?: Record<string, string | number | undefined>;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

export async function request<T>(path: string, options: RequestOptions = {}): Promise<T> {
  const url = new URL(path, location.origin);
  for (const [key, value] of Object.entries(options.query ?? {})) {
    if (value !== undefined) url.searchParams.set(key, String(value));
  }
  const headers: Record<string, string> = { ...options.headers };
  if (options.body !== undefined) headers["content-type"] = "application/json";
  let response: Response;
  try {
    response = await fetch(url, {
      method: options.method ?? "GET",
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      credentials: "same-origin",
      signal: options.signal,
    });
  } catch {
    throw new ApiError(0, "The server could not be reached.", null);
  }
  if (!response.ok) {
    const error = await failure(response);
    if (response.status === 401 && path !== "/api/login") onUnauthenticated();
    throw error;
  }
  return (await response.json()) as T;
}

export const api = {
  login: (password: string) =>
    request<{ ok: boolean }>("/api/login", { method: "POST", body: { password } }),
  logout: () => request<{ ok: boolean }>("/api/logout", { method: "POST" }),
  me: async () => (await request<{ user: User }>("/api/me")).user,

  channels: async () => (await request<{ channels: Channel[] }>("/api/channels")).channels,
  createChannel: async (body: {
    name: string;
    type: "dm" | "group";
    agentIds: string[];
    memberIds: string[];
  }) => (await request<{ channel: Channel }>("/api/channels", { method: "POST", body })).channel,
  people: async (channelId: string) =>
    (await request<{ users: User[] }>(`/api/channels/${encodeURIComponent(channelId)}/people`))
      .users,

  agents: async () => (await request<{ agents: Agent[] }>("/api/agents")).agents,
  guests: async () => (await request<{ guests: User[] }>("/api/guests")).guests,

  messages: async (channelId: string, limit: number, before?: string) =>
    (
      await request<{ messages: Message[] }>("/api/messages", {
        query: { channelId, limit, before },
      })
    ).messages,
  post: (
    body: { channelId: string; content: string; type: string; metadata?: object },
    idempotencyKey: string,
  ) =>
    request<{ id: string; ok: boolean }>("/api/messages", {
      method: "POST",
      body,
      headers: { "idempotency-key": idempotencyKey },
    }),
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

export interface UploadHandle {
  promise: Promise<string>;
  abort: () => void;
}

/** Upload one file with progress (fetch cannot report upload progress; XHR can). */
export function upload(file: File, onProgress: (fraction: number) => void): UploadHandle {
  const xhr = new XMLHttpRequest();
  const promise = new Promise<string>((resolve, reject) => {
    xhr.open("POST", "/api/upload");
    xhr.responseType = "json";
    xhr.upload.onprogress = (e) => {
      if (e.lengthComputable) onProgress(e.loaded / e.total);
    };
    xhr.onload = () => {
      const body = xhr.response as { url?: string; error?: string } | null;
      if (xhr.status === 200 && body?.url) {
        onProgress(1);
        resolve(body.url);
      } else {
        if (xhr.status === 401) onUnauthenticated();
        const retry = Number(xhr.getResponseHeader("retry-after"));
        reject(
          new ApiError(
            xhr.status,
            body?.error ?? `Upload failed (${xhr.status}).`,
            Number.isFinite(retry) && retry > 0 ? retry : null,
          ),
        );
      }
    };
    xhr.onerror = () => reject(new ApiError(0, "The upload failed: network error.", null));
    xhr.onabort = () => reject(new ApiError(0, "The upload was cancelled.", null));
    const form = new FormData();
    form.append("file", file, file.name);
    xhr.send(form);
  });
  return { promise, abort: () => xhr.abort() };
}
