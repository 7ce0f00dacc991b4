/**
 * The first screen's data, before the code that shows it has mounted. Asked for one after
 * another, its requests would wait on each other: the session (`/api/me`), then the shell that
 * mounts on it (the channel list, the agents), then the channel view inside it (its messages).
 *
 * A logged-in person's page carries them (`src/palaver/api/first_screen.py`); any other page
 * sends them all at once as it starts. Either way each answer is taken by the store that would
 * have asked (`early` requests in `api.ts`).
 */
import { preload, provide } from "./api";
import { match } from "./router.svelte";
import { PAGE_SIZE } from "./stores/messages.svelte";

export const CARRIED_ID = "first-screen";

/** What the page carries: each value the body of the API's own answer. */
export interface Carried {
  me: unknown;
  channels: unknown;
  agents: unknown;
  messages?: { channelId: string; limit: number; page: unknown };
}

/** The carried data, read once and taken out of the document. */
function carried(): Carried | null {
  const element = document.getElementById(CARRIED_ID);
  if (!element) return null;
  element.remove();
  try {
    return JSON.parse(element.textContent ?? "") as Carried;
  } catch {
    return null;
  }
}

export function preloadFirstScreen(path: string): void {
  const data = carried();
  if (data) {
    provide("/api/me", {}, data.me);
    provide("/api/channels", {}, data.channels);
    provide("/api/agents", {}, data.agents);
    const messages = data.messages;
    if (messages) provide("/api/messages", { channelId: messages.channelId, limit: messages.limit }, messages.page);
    return;
  }
  preload("/api/me");
  const route = match(path);
  // The login screen needs only to learn whether a session is already there.
  if (route.name === "login") return;
  if (route.name === "channel" || route.name === "thread") {
    preload("/api/messages", { channelId: route.params.channelId, limit: PAGE_SIZE });
  }
  preload("/api/channels");
  preload("/api/agents");
}
