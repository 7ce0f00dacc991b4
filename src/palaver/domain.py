"""The records the service deals in, as plain dataclasses, with their public JSON shapes."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

Role = Literal["owner", "guest"]
ChannelType = Literal["dm", "group"]
MessageType = Literal["text", "image", "file", "tool_call", "tool_result"]
MESSAGE_TYPES: tuple[str, ...] = ("text", "image", "file", "tool_call", "tool_result")
BUILTIN_TOOLS: tuple[str, ...] = (
    "web_search",
    "memory_write",
    "memory_search",
    "rag_query",
    "call_agent",
    "manage_schedule",
    "react",
)


def iso(dt: datetime) -> str:
    """ISO 8601 UTC with milliseconds and a Z, the one timestamp format clients see."""
    return f"{dt.isoformat(timespec='milliseconds')[:23]}Z"


@dataclass(frozen=True)
class User:
    id: str
    name: str
    role: Role
    created_at: datetime

    @property
    def is_owner(self) -> bool:
        return self.role == "owner"

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "role": self.role,
            "createdAt": iso(self.created_at),
        }


@dataclass(frozen=True)
class Agent:
    id: str
    name: str
    avatar: str
    description: str
    model: str
    tools: list[str]
    soul: str
    auto_inject_memory: bool
    created_at: datetime
    updated_at: datetime

    def as_list_item(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "avatar": self.avatar,
            "description": self.description,
            "model": self.model,
            "tools": list(self.tools),
            "status": "online",
        }

    def as_json(self) -> dict[str, Any]:
        return {
            **self.as_list_item(),
            "soul": self.soul,
            "autoInjectMemory": self.auto_inject_memory,
            "createdAt": iso(self.created_at),
            "updatedAt": iso(self.updated_at),
        }


@dataclass(frozen=True)
class Channel:
    id: str
    name: str
    type: ChannelType
    agent_ids: list[str]
    member_ids: list[str]
    created_at: datetime
    updated_at: datetime

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "type": self.type,
            "agentIds": list(self.agent_ids),
            "memberIds": list(self.member_ids),
            "createdAt": iso(self.created_at),
            "updatedAt": iso(self.updated_at),
        }


@dataclass(frozen=True)
class Message:
    id: str
    channel_id: str
    agent_id: str | None
    user_id: str | None
    content: str
    type: str
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: datetime | None = None
    thread_id: str | None = None
    """The thread's root, for a reply in a thread."""
    edited_at: datetime | None = None
    deleted: bool = False
    """A thread root deleted while it had replies: emptied, kept as the thread's head."""
    reply_count: int = 0
    last_reply_at: datetime | None = None
    participant_ids: tuple[str, ...] = ()
    """Who replied in the thread, in the order they first did."""
    reactions: tuple[Reaction, ...] = ()
    """In the order each emoji was first used."""

    def as_json(self) -> dict[str, Any]:
        assert self.created_at is not None
        thread = (
            {
                "replyCount": self.reply_count,
                "lastReplyAt": iso(self.last_reply_at) if self.last_reply_at else None,
                "participantIds": list(self.participant_ids),
            }
            if self.reply_count
            else None
        )
        return {
            "id": self.id,
            "channelId": self.channel_id,
            "agentId": self.agent_id,
            "userId": self.user_id,
            "content": self.content,
            "type": self.type,
            "metadata": self.metadata,
            "createdAt": iso(self.created_at),
            "threadId": self.thread_id,
            "editedAt": iso(self.edited_at) if self.edited_at else None,
            "deleted": self.deleted,
            "reactions": [
                {"emoji": r.emoji, "count": len(r.user_ids), "userIds": list(r.user_ids)}
                for r in self.reactions
            ],
            "thread": thread,
        }


@dataclass(frozen=True)
class Reaction:
    emoji: str
    user_ids: tuple[str, ...]
    """People's and agents' ids, in the order they reacted."""
