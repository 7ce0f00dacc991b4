"""`react`: an agent reacts to a message of its channel with one emoji, as a person can.

By default the message it is answering; any other message must be of the same channel (an id
from elsewhere is refused in the same words as an unknown one)."""

from __future__ import annotations

from typing import Any

from palaver.emoji_rule import one_emoji
from palaver.errors import Invalid
from palaver.message_events import react_as
from palaver.services import Services
from palaver.store import messages as messages_store
from palaver.tools.base import ToolContext, ToolError


class ReactTool:
    name = "react"
    description = (
        "React to a message of this channel with one emoji (by default the message you are "
        "answering), or take your reaction back."
    )
    parameters: dict[str, Any] = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "emoji": {"type": "string", "description": "Exactly one emoji, e.g. 👍."},
            "messageId": {
                "type": "string",
                "description": "The message to react to; the one you are answering if omitted.",
            },
            "remove": {"type": "boolean", "description": "Take the reaction back instead."},
        },
        "required": ["emoji"],
    }

    def __init__(self, svc: Services) -> None:
        self.svc = svc

    async def __call__(self, ctx: ToolContext, args: dict[str, Any]) -> str:
        emoji = str(args["emoji"]).strip()
        if not one_emoji(emoji):
            raise ToolError("The emoji must be exactly one emoji.")
        message_id = str(args.get("messageId") or ctx.trigger_id or "")
        found = await self.svc.db.read_unit(lambda conn: messages_store.get(conn, message_id))
        if found is None or found.deleted or found.channel_id != ctx.channel_id:
            raise ToolError(f"No message of this channel has the id '{message_id}'.")
        remove = bool(args.get("remove"))
        try:
            await react_as(self.svc, found, ctx.agent_id, emoji, add=not remove)
        except Invalid as exc:  # the message holds the most different emoji already
            raise ToolError(exc.message) from exc
        return f"Reaction {emoji} {'removed from' if remove else 'added to'} {message_id}."
