"""The Tool port: a name, a description, a JSON schema, and an async call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class ToolContext:
    """Who is calling and where: lets a tool act on behalf of the agent in its channel."""

    agent_id: str
    agent_name: str
    channel_id: str
    user_id: str | None
    """The human whose message started this work, if any."""
    message_id: str
    """The id of the reply being produced."""
    call_path: tuple[str, ...] = ()
    """Agent ids of nested `call_agent` calls leading here, outermost first."""
    trigger_id: str | None = None
    """The message being answered: where what the agent learns came from."""
    thread_id: str | None = None
    """The thread the reply is in, if any: where what the tool says belongs."""


class ToolError(Exception):
    """A tool failed in a way the model should hear about; the message goes back as the result."""


class Tool(Protocol):
    name: str
    description: str
    parameters: dict[str, Any]

    async def __call__(self, ctx: ToolContext, args: dict[str, Any]) -> str: ...
