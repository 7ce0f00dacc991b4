/** The records the API answers, as the server's `as_json` shapes them. */

export type Role = "owner" | "guest";

export interface User {
  id: string;
  name: string;
  role: Role;
  createdAt: string;
}

export interface Agent {
  id: string;
  name: string;
  avatar: string;
  description: string;
  model: string;
  tools: string[];
  status: string;
}

/** The whole agent, as the owner reads it. */
export interface AgentFull extends Agent {
  soul: string;
  autoInjectMemory: boolean;
  createdAt: string;
  updatedAt: string;
}

export interface Model {
  id: string;
  provider: string;
  name: string;
  label: string;
}

export interface ToolInfo {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  source: "builtin" | "mcp";
}

export type DocumentStatus = "indexing" | "ready" | "failed";

export interface KbDocument {
  id: string;
  agentId: string;
  name: string;
  kind: string;
  bytes: number;
  pages: number | null;
  chunks: number;
  visibility: "owner" | "members";
  createdAt: string;
  status: DocumentStatus;
  error: string | null;
  progress: { done: number; total: number };
}

export interface Passage {
  chunkId: string;
  documentId: string;
  documentName: string;
  content: string;
  headingPath: string[];
  page: number | null;
  score: number;
  relevance: number | null;
}

export type MemoryType = "semantic" | "episodic" | "procedural";

export interface Memory {
  id: string;
  agentId: string;
  type: MemoryType;
  content: string;
  channelId: string | null;
  sourceMessageId: string | null;
  version: number;
  createdAt: string;
  updatedAt: string;
  similarity?: number;
}

export interface MemoryVersion {
  memoryId: string;
  version: number;
  content: string;
  type: MemoryType;
  channelId: string | null;
  sourceMessageId: string | null;
  createdAt: string;
}

export interface IngestProgressEvent {
  documentId: string;
  agentId: string;
  done: number;
  total: number;
  status: DocumentStatus;
}

export interface Channel {
  id: string;
  name: string;
  type: "dm" | "group";
  agentIds: string[];
  memberIds: string[];
  createdAt: string;
  updatedAt: string;
}

/** The caller's read state of a channel (SPEC 12): what `GET /api/channels` adds to each. */
export interface ReadState {
  lastReadId: string | null;
  unreadCount: number;
  mentionCount: number;
}

/** A channel as `GET /api/channels` and `channel_created` carry it. */
export type ListedChannel = Channel & ReadState;

export type MessageType = "text" | "image" | "file" | "tool_call" | "tool_result";

export interface Message {
  id: string;
  channelId: string;
  agentId: string | null;
  userId: string | null;
  content: string;
  type: MessageType;
  metadata: Record<string, unknown>;
  createdAt: string;
  /** The thread's root, for a reply in a thread (issue 22). */
  threadId?: string | null;
  editedAt?: string | null;
  /** A thread root deleted while it has replies: a tombstone. */
  deleted?: boolean;
  reactions?: Reaction[];
  thread?: ThreadSummary | null;
}

export interface Reaction {
  emoji: string;
  count: number;
  userIds: string[];
}

export interface ThreadSummary {
  replyCount: number;
  lastReplyAt: string;
  participantIds: string[];
}

export interface MessageVersion {
  content: string;
  editedAt: string | null;
}

export interface ReactionEvent {
  messageId: string;
  channelId: string;
  emoji: string;
  userId: string;
}

export type ChainStatus = "running" | "paused" | "completed" | "error";

export interface ChainStep {
  step: number;
  agentId: string;
  source: string;
  status: string;
  messageId: string | null;
}

export interface Chain {
  id: string;
  channelId: string;
  /** The message that started it: a thread reply for a chain that runs in a thread. */
  triggerMessageId?: string;
  status: ChainStatus;
  reason: string | null;
  requested: string | null;
  currentAgent: string | null;
  step: number;
  totalSteps: number;
  steps: ChainStep[];
}

/** What `collab_status` carries. */
export interface ChainStatusEvent {
  chainId: string;
  currentAgent: string | null;
  step: number;
  totalSteps: number;
  status: ChainStatus;
  reason?: string;
}

export type ToolStatus = "calling" | "completed" | "error";

export type ServerEvent =
  | { type: "auth_ok"; userId: string }
  | { type: "pong" }
  | { type: "subscribed"; data: { channelId: string } }
  | { type: "unsubscribed"; data: { channelId: string } }
  | { type: "read_updated"; data: ReadState & { channelId: string } }
  | {
      type: "mention";
      data: { messageId: string; channelId: string; threadId: string | null; from: string | null };
    }
  | { type: "channel_created"; data: ListedChannel }
  | { type: "channel_updated"; data: Channel }
  | { type: "channel_removed"; data: { id: string } }
  | { type: "message"; data: Message }
  | { type: "message_updated"; data: Message }
  | { type: "message_deleted"; data: { id: string; channelId: string; threadId: string | null } }
  | { type: "reaction_added"; data: ReactionEvent }
  | { type: "reaction_removed"; data: ReactionEvent }
  | {
      type: "stream_start";
      data: { messageId: string; channelId: string; agentId: string; threadId?: string | null };
    }
  | { type: "stream_chunk"; data: { messageId: string; content: string; seq?: number } }
  | {
      type: "stream_end";
      data: { messageId: string; error?: string; cancelled?: boolean; interrupted?: boolean };
    }
  | {
      type: "tool_call";
      data: {
        messageId: string;
        toolName: string;
        arguments: Record<string, unknown>;
        status: ToolStatus;
      };
    }
  | { type: "tool_result"; data: { messageId: string; toolName: string; result: string } }
  | { type: "collab_status"; data: ChainStatusEvent }
  | { type: "ingest_progress"; data: IngestProgressEvent }
  | { type: "reindex_progress"; data: { agentId: string; done: number; total: number } }
  | { type: "error"; data: { code: string; message: string } };
