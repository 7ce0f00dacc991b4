"""`call_agent`: one agent asks another and gets its answer as the tool result.

The question is posted in the channel as the caller's message and the answer streams there
like any reply, so everyone sees the exchange. Calls nest at most `MAX_DEPTH` deep and never
come back to an agent already in the call path.

Only the agents of the channel can be called: an agent from elsewhere would answer, in this
channel, with what it knows from elsewhere. An agent that is not in the channel and one that
does not exist are refused in the same words, so the model (and a guest reading the channel)
learns nothing of the agents outside it.
"""

from __future__ import annotations

from typing import Any

from palaver.agents.runner import ReplyRequest
from palaver.agents.threads import count_in_thread
from palaver.bus.base import channel_topic
from palaver.domain import Agent, Message
from palaver.ids import new_id
from palaver.services import Services
from palaver.store import agents as agents_store
from palaver.store import channels as channels_store
from palaver.store import messages as messages_store
from palaver.store.tables.base import utcnow
from palaver.tools.base import ToolContext, ToolError

MAX_DEPTH = 3


class CallAgentTool:
    name = "call_agent"
    description = (
        "Ask another agent (by name or id) a question and get its answer. The exchange is "
        "visible in the channel."
    )
    parameters: dict[str, Any] = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "agent": {"type": "string", "description": "The other agent's name or id."},
            "message": {"type": "string", "description": "What to ask it."},
        },
        "required": ["agent", "message"],
    }

    def __init__(self, svc: Services) -> None:
        self.svc = svc

    async def __call__(self, ctx: ToolContext, args: dict[str, Any]) -> str:
        question = str(args["message"]).strip()
        if not question:
            raise ToolError("The message to the other agent is empty.")
        async with self.svc.db.read() as conn:
            channel = await channels_store.get(conn, ctx.channel_id)
            members = await agents_store.get_many(conn, channel.agent_ids) if channel else []
        if channel is None:
            raise ToolError("The channel is gone.")
        callee = _find(str(args["agent"]), members)
        if callee.id in ctx.call_path:
            raise ToolError(
                f"{callee.name} is already in this chain of calls; calling it would loop."
            )
        if len(ctx.call_path) > MAX_DEPTH:
            raise ToolError(f"Calls between agents nest at most {MAX_DEPTH} deep.")
        asked = Message(
            id=new_id("msg"),
            channel_id=channel.id,
            agent_id=ctx.agent_id,
            user_id=None,
            content=f"@{callee.name} {question}",
            type="text",
            metadata={"callAgent": {"to": callee.id, "replyId": ctx.message_id}},
            created_at=utcnow(),
            thread_id=ctx.thread_id,
        )
        async with self.svc.db.write() as tx:
            await messages_store.insert_message(tx.conn, asked)
            await count_in_thread(self.svc, tx, asked)
            tx.on_commit(
                lambda: self.svc.bus.publish(
                    channel_topic(channel.id), {"type": "message", "data": asked.as_json()}
                )
            )
        answer = await self.svc.dispatcher.reply(
            ReplyRequest(
                agent=callee,
                channel=channel,
                trigger=asked,
                call_path=ctx.call_path,
                on_behalf_of=ctx.user_id,
            )
        )
        if answer.metadata.get("error"):
            raise ToolError(f"{callee.name} could not answer: {answer.metadata['error']}")
        if answer.metadata.get("cancelled") or answer.metadata.get("interrupted"):
            raise ToolError(f"{callee.name}'s answer was stopped before it was complete.")
        return answer.content


def _find(ref: str, members: list[Agent]) -> Agent:
    """The member agent with this id or name (ignoring case)."""
    ref = ref.strip().removeprefix("@")
    key = agents_store.name_key(ref)
    for agent in members:
        if ref == agent.id or key == agents_store.name_key(agent.name):
            return agent
    raise ToolError(f"There is no agent '{ref}' in this channel; only its agents can be called.")
