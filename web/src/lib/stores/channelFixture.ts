/** A channel as `GET /api/channels` lists it, for the stores' tests. */
import type { ListedChannel } from "../types";

export function listed(id: string, name: string, unreadCount = 0): ListedChannel {
  return {
    id,
    name,
    type: "group",
    agentIds: [],
    memberIds: [],
    createdAt: "2026-01-01T00:00:00Z",
    updatedAt: "2026-01-01T00:00:00Z",
    lastReadId: null,
    unreadCount,
    mentionCount: 0,
  };
}
