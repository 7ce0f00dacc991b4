/**
 * Opening a message from elsewhere (a search result): its channel, or the thread it replies
 * in, with a window of history around it when it is not loaded, brought into view and flashed.
 * The window and the paging from it are the timeline's (`Timeline.jumpTo`); the scroll and the
 * flash are the list's (`Feed.reveal`, taking `timelines.target`).
 */
import { channelPath, router, threadPath } from "./router.svelte";
import { timelines, type Timeline } from "./stores/messages.svelte";
import type { Message } from "./types";

/** Where a message is read: its thread's panel for a reply in a thread, else its channel. */
export function messagePath(message: Pick<Message, "channelId" | "threadId">): string {
  return message.threadId
    ? threadPath(message.channelId, message.threadId)
    : channelPath(message.channelId);
}

export function timelineOf(message: Pick<Message, "channelId" | "threadId">): Timeline {
  return message.threadId
    ? timelines.thread(message.channelId, message.threadId)
    : timelines.get(message.channelId);
}

/** Go to the message; answers whether it could be shown (false: deleted since, or the
 * network failed; the timeline then says so and shows the newest messages). */
export async function openMessage(message: Message): Promise<boolean> {
  const timeline = timelineOf(message);
  // Asked before the route changes, so the view that mounts waits for this window instead of
  // loading the newest page over it.
  const found = timeline.jumpTo(message);
  router.go(messagePath(message));
  if (!(await found)) return false;
  timelines.target = { timeline, id: message.id };
  return true;
}
