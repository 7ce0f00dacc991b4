"""One agent reply, from `stream_start` to the stored message (SPEC 1, steps 5 to 11).

The reply streams as coalesced chunks, runs the tool loop, and is written once when it ends.
Whatever ends it (the model finishing, a provider failure, a cancel, a shutdown) the text that
arrived is kept, with the reason in its metadata.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from opentelemetry.trace import Span, SpanKind
from sqlalchemy.ext.asyncio import AsyncConnection

from palaver import strict_json, tracing
from palaver.agents import budgets
from palaver.agents.context import CHARS_PER_TOKEN, ContextBuilder, estimate_tokens
from palaver.agents.stream import ChunkStream
from palaver.agents.threads import count_in_thread
from palaver.bus.base import CONTROL, channel_topic
from palaver.domain import Agent, Channel, Message
from palaver.ids import new_id
from palaver.llm.base import (
    ChatMessage,
    Finish,
    GenerationOptions,
    ModelProvider,
    ProviderError,
    TextDelta,
    ToolCall,
    ToolCallAccumulator,
    ToolCallDelta,
    Usage,
)
from palaver.llm.registry import ProviderRegistry
from palaver.mention_events import tell_mentioned, with_mentions
from palaver.metrics import ModelCall, provider_name
from palaver.services import Services
from palaver.settings import Price
from palaver.store import channels as channels_store
from palaver.store import messages as messages_store
from palaver.store import usage as usage_store
from palaver.store.faults import Fault, describe, fault_of
from palaver.store.tables.base import utcnow
from palaver.store.usage import Call
from palaver.tools.base import ToolContext
from palaver.tools.memory import privacy_scope
from palaver.tools.registry import ToolOutcome, ToolRegistry

log = logging.getLogger(__name__)

MCP_PREFIX = "mcp:"
STORE_PATIENCE = 60.0
"""Seconds a finished reply keeps trying to be stored while the database is away (a restart)
or the disk is full: its text lives only in this process until then."""
_FAULT_ENDINGS = {
    Fault.UNAVAILABLE: "The reply failed: the database was unavailable for a moment.",
    Fault.FULL: "The reply failed: the server's disk is full.",
}

_WIRE_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True)
class ReplyRequest:
    agent: Agent
    channel: Channel
    trigger: Message
    notes: Sequence[str] = ()
    """Extra system text, such as a chain's account of the steps before."""
    call_path: tuple[str, ...] = ()
    on_behalf_of: str | None = None
    """The person this work is for when the trigger is not theirs (a call between agents, a
    schedule's run): tools act for them, as for the author of a message."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Merged into the stored reply's metadata (a chain id, a schedule id)."""


@dataclass
class _Active:
    task: asyncio.Task[Any] | None
    reason: str | None = None
    """Why `cancel()` stopped it (cancelled, interrupted); None if it was not asked to stop."""
    finishing: bool = False
    """Streaming is over and the reply is being stored: too late to cancel."""
    trigger_id: str = ""
    channel_id: str = ""


@dataclass
class _Tally:
    """The reply's model calls, each with its counts (the ledger's rows)."""

    calls: list[Call] = field(default_factory=list)
    _usage: Usage | None = None

    def add(self, usage: Usage) -> None:
        self._usage = usage

    def end_call(self, model: str, conversation: Sequence[ChatMessage], text: str) -> None:
        """The call is over: its counts as reported, or estimated from the text."""
        usage, self._usage = self._usage, None
        if usage is not None:
            call = Call(model, usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens)
        else:
            prompt = sum(estimate_tokens(m.content) for m in conversation)
            call = Call(model, prompt, estimate_tokens(text), estimated=True)
        self.calls.append(call)

    @property
    def prompt(self) -> int:
        return sum(c.input_tokens for c in self.calls)

    @property
    def completion(self) -> int:
        return sum(c.output_tokens for c in self.calls)

    @property
    def reported(self) -> bool:
        return not any(c.estimated for c in self.calls)


class ReplyRunner:
    def __init__(
        self,
        svc: Services,
        providers: ProviderRegistry,
        tools: ToolRegistry,
        context: ContextBuilder,
        chunk_interval: float = 0.02,
        checkpoint_every: float = 2.0,
    ) -> None:
        self.svc = svc
        self.providers = providers
        self.tools = tools
        self.context = context
        self.chunk_interval = chunk_interval
        self.checkpoint_every = checkpoint_every
        self._active: dict[str, _Active] = {}

    def is_running(self, message_id: str) -> bool:
        return message_id in self._active

    @property
    def in_flight(self) -> int:
        """Replies being written on this node (a metric)."""
        return len(self._active)

    def cancel(self, message_id: str, reason: str = "cancelled") -> bool:
        active = self._active.get(message_id)
        if active is None or active.task is None or active.finishing or active.reason:
            return False
        active.reason = reason
        active.task.cancel()
        return True

    def cancel_answers_to(self, trigger_id: str) -> None:
        """Stop the replies to a message that was deleted."""
        for message_id, active in list(self._active.items()):
            if active.trigger_id == trigger_id:
                self.cancel(message_id)

    def cancel_in_channel(self, channel_id: str) -> None:
        """Stop the replies being written in a channel that was deleted."""
        for message_id, active in list(self._active.items()):
            if active.channel_id == channel_id:
                self.cancel(message_id)

    def cancel_all(self, reason: str) -> set[asyncio.Task[Any]]:
        """Cancel every reply still streaming; answers the tasks of all replies in flight, the
        ones being stored included, which must be let finish."""
        tasks = {a.task for a in self._active.values() if a.task is not None}
        for message_id in list(self._active):
            self.cancel(message_id, reason)
        return tasks

    async def run(self, req: ReplyRequest) -> Message:
        """Produce and store one reply; answers the stored message, whatever ended it."""
        attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": req.agent.name,
            "gen_ai.agent.id": req.agent.id,
            "gen_ai.conversation.id": req.channel.id,
            "gen_ai.request.model": req.agent.model,
            "palaver.trigger.id": req.trigger.id,
            "palaver.chain.id": req.metadata.get("chainId"),
            "palaver.schedule.id": req.metadata.get("scheduleId"),
        }
        with tracing.span(f"invoke_agent {req.agent.name}", attributes, root=True) as span:
            stored = await self._run(req, span)
            if span.is_recording():
                usage = stored.metadata.get("usage") or {}
                span.set_attribute("palaver.message.id", stored.id)
                span.set_attribute("gen_ai.usage.input_tokens", usage.get("promptTokens", 0))
                span.set_attribute("gen_ai.usage.output_tokens", usage.get("completionTokens", 0))
                for flag in ("cancelled", "interrupted", "truncated"):
                    if stored.metadata.get(flag):
                        span.set_attribute(f"palaver.reply.{flag}", True)
            return stored

    async def _run(self, req: ReplyRequest, span: Span) -> Message:
        reply = Message(
            id=new_id("msg"),
            channel_id=req.channel.id,
            agent_id=req.agent.id,
            user_id=None,
            content="",
            type="text",
            metadata={"model": req.agent.model, **req.metadata},
            created_at=utcnow(),
            thread_id=req.trigger.thread_id,
        )
        topic = channel_topic(req.channel.id)
        in_thread = {"threadId": reply.thread_id} if reply.thread_id else {}
        active = _Active(
            asyncio.current_task(), trigger_id=req.trigger.id, channel_id=req.channel.id
        )
        self._active[reply.id] = active
        try:
            async with self.svc.db.write() as tx:
                await messages_store.create_draft(
                    tx.conn, reply, utcnow(), self.svc.node_id, tracing.carrier(span)
                )
            start = {
                "messageId": reply.id,
                "channelId": req.channel.id,
                "agentId": req.agent.id,
                **in_thread,
            }
            await self.svc.bus.publish(topic, {"type": "stream_start", "data": start})
            stream = ChunkStream(
                send=lambda text, seq: self.svc.bus.publish(
                    topic,
                    {
                        "type": "stream_chunk",
                        "data": {"messageId": reply.id, "content": text, "seq": seq, **in_thread},
                    },
                ),
                checkpoint=lambda text: self._checkpoint(reply, text),
                interval=self.chunk_interval,
                checkpoint_every=self.checkpoint_every,
            )
            tally = _Tally()
            ending: dict[str, Any] = {}
            deadline = self.svc.settings.current.agents.replySeconds
            whole_reply = asyncio.timeout(deadline)
            try:
                async with whole_reply:
                    if await self._converse(req, reply, stream, tally):
                        ending["truncated"] = True
            except TimeoutError:
                if whole_reply.expired():
                    tracing.failed(span, "timeout")
                    ending["error"] = f"The reply took longer than {deadline} seconds; cut off."
                    log.warning(
                        "reply %s of %s was cut off after %s s", reply.id, req.agent.id, deadline
                    )
                else:
                    log.exception("reply %s failed", reply.id)
                    tracing.failed(span, "TimeoutError")
                    ending["error"] = "The reply failed because of an internal error."
            except ProviderError as exc:
                tracing.failed(span, "provider_error")
                ending["error"] = str(exc)
                log.warning("reply %s of %s failed: %s", reply.id, req.agent.id, exc.detail)
            except budgets.BudgetSpent as exc:
                tracing.failed(span, "budget_spent")
                ending["error"] = str(exc)
                log.info("reply %s of %s refused: a budget is spent", reply.id, req.agent.id)
            except Exception as exc:
                tracing.failed(span, type(exc).__name__)
                fault = fault_of(exc)
                if fault is None:
                    log.exception("reply %s failed", reply.id)
                    ending["error"] = "The reply failed because of an internal error."
                else:
                    log.warning("reply %s failed: %s", reply.id, describe(exc))
                    ending["error"] = _FAULT_ENDINGS[fault]
            except asyncio.CancelledError:
                if active.reason is None:
                    # Cancelled from outside (a caller's time-out): keep the text, then go on
                    # cancelling, so that the caller sees its time-out.
                    active.finishing = True
                    await stream.close()
                    await self._finish(req, reply, stream.text, tally, {"interrupted": True})
                    raise
                task = asyncio.current_task()
                if task is not None:
                    task.uncancel()
                ending[active.reason] = True
            active.finishing = True
            await stream.close()
            return await self._finish(req, reply, stream.text, tally, ending)
        finally:
            self._active.pop(reply.id, None)

    async def _converse(
        self, req: ReplyRequest, reply: Message, stream: ChunkStream, tally: _Tally
    ) -> bool:
        """Run the model and its tools; answers whether the reply was cut at `replyTokens`."""
        provider, model = await self.providers.resolve(req.agent.model)
        limits = self.svc.settings.current.agents
        allowed = await self._tools_for(req)
        real_specs = await self.tools.specs(allowed) if allowed else []
        aliases = _wire_names([spec.name for spec in real_specs])
        specs = [replace(spec, name=aliases[spec.name]) for spec in real_specs]
        real_names = {alias: real for real, alias in aliases.items()}
        conversation = await self.context.build(
            req.agent,
            req.channel,
            req.trigger,
            specs,
            self.providers.context_window(req.agent.model),
            limits.replyTokens,
            req.notes,
        )
        options = GenerationOptions(max_tokens=limits.replyTokens)
        max_chars = limits.replyTokens * CHARS_PER_TOKEN
        truncated = False
        person = req.on_behalf_of or req.trigger.user_id
        kind = provider_name(self.svc.settings.current, provider.id)
        for round_no in range(limits.toolRounds + 1):
            await budgets.check(self.svc, req.agent, person, tally.calls, utcnow())
            offered = specs if round_no < limits.toolRounds else []
            measured = ModelCall(kind, model, req.agent.id, req.agent.name)
            with self.svc.metrics.model_call(measured):
                text, calls, truncated = await self._one_call(
                    provider, measured, conversation, offered, options, stream, tally, max_chars
                )
                tally.end_call(req.agent.model, conversation, text)
                measured.tokens = tally.calls[-1].input_tokens, tally.calls[-1].output_tokens
            calls = [replace(c, name=real_names.get(c.name, c.name)) for c in calls]
            if truncated or not calls or not offered:
                break
            outcomes = await self._run_tools(req, reply, calls, allowed)
            wire_calls = tuple(replace(c, name=aliases.get(c.name, c.name)) for c in calls)
            conversation.append(ChatMessage("assistant", text, tool_calls=wire_calls))
            conversation.extend(
                ChatMessage("tool", o.result, tool_call_id=c.id, name=c.name)
                for c, o in zip(wire_calls, outcomes, strict=True)
            )
        return truncated

    async def _one_call(
        self,
        provider: ModelProvider,
        measured: ModelCall,
        conversation: list[ChatMessage],
        specs: Sequence[Any],
        options: GenerationOptions,
        stream: ChunkStream,
        tally: _Tally,
        max_chars: int,
    ) -> tuple[str, list[ToolCall], bool]:
        """One model call; stops reading, and says so, once the reply's text or its calls'
        arguments reach `max_chars`: a provider that ignores `max_tokens` must not fill the
        database or the memory."""
        model = measured.model
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": measured.provider,
            "gen_ai.request.model": model,
            "gen_ai.request.max_tokens": options.max_tokens,
            "gen_ai.request.stream": True,
            "palaver.provider.id": getattr(provider, "id", None),
            "gen_ai.input.messages": tracing.content([_traced(m) for m in conversation]),
        }
        with tracing.span(f"chat {model}", attributes, kind=SpanKind.CLIENT) as span:
            started = time.monotonic()
            calls = ToolCallAccumulator()
            text: list[str] = []
            arguments = 0
            truncated = False
            deltas = provider.stream(model, conversation, specs, options)
            try:
                async for delta in deltas:
                    if started and span.is_recording():
                        span.set_attribute(
                            "gen_ai.response.time_to_first_chunk", time.monotonic() - started
                        )
                        started = 0.0
                    if isinstance(delta, TextDelta):
                        room = max_chars - stream.length
                        piece = delta.text[:room]
                        text.append(piece)
                        await stream.add(piece)
                        if len(delta.text) >= room:
                            truncated = True
                            break
                    elif isinstance(delta, ToolCallDelta):
                        arguments += len(delta.arguments)
                        if arguments > max_chars:
                            truncated = True
                            break
                        calls.add(delta)
                    elif isinstance(delta, Usage):
                        tally.add(delta)
                        _describe_usage(span, delta)
                    elif isinstance(delta, Finish):
                        _describe_finish(span, delta)
            finally:
                await _close(deltas)
            answer = "".join(text)
            if truncated:
                span.set_attribute("gen_ai.response.finish_reasons", ["length"])
                return answer, [], True
            found = calls.calls()
            output = tracing.content([_traced(ChatMessage("assistant", answer, tuple(found)))])
            if output is not None:
                span.set_attribute("gen_ai.output.messages", output)
            return answer, found, False

    async def _tools_for(self, req: ReplyRequest) -> list[str]:
        """The agent's tools usable here: in a channel with guests, an MCP server's tools only
        if the owner made that server available to guests, since such a server acts with the
        owner's own access (files, mail, ...), which a guest must not borrow."""
        if not any(name.startswith(MCP_PREFIX) for name in req.agent.tools):
            return list(req.agent.tools)
        if await privacy_scope(self.svc.db, req.channel.id) is None:
            return list(req.agent.tools)
        servers = self.svc.settings.current.mcpServers
        return [
            name
            for name in req.agent.tools
            if not name.startswith(MCP_PREFIX)
            or getattr(servers.get(name.split(":")[1]), "availableToGuests", False)
        ]

    async def _run_tools(
        self, req: ReplyRequest, reply: Message, calls: list[ToolCall], allowed: list[str]
    ) -> list[ToolOutcome]:
        topic = channel_topic(req.channel.id)
        parsed = [_arguments(c.arguments) for c in calls]
        for call, args in zip(calls, parsed, strict=True):
            await self.svc.bus.publish(topic, _tool_call_event(reply, call.name, args, "calling"))
        ctx = ToolContext(
            agent_id=req.agent.id,
            agent_name=req.agent.name,
            channel_id=req.channel.id,
            user_id=req.on_behalf_of or req.trigger.user_id,
            message_id=reply.id,
            call_path=(*req.call_path, req.agent.id),
            trigger_id=req.trigger.id,
            thread_id=reply.thread_id,
        )
        timeout = self.svc.settings.current.agents.toolTimeoutSeconds
        outcomes = await asyncio.gather(*(self._call_tool(ctx, allowed, c, timeout) for c in calls))
        records: list[Message] = []
        for call, args, outcome in zip(calls, parsed, outcomes, strict=True):
            # An unknown name the model made up counts as `other`: the label stays bounded.
            self.svc.metrics.tool_called(call.name if call.name in allowed else "other", outcome.ok)
            status = "completed" if outcome.ok else "error"
            await self.svc.bus.publish(topic, _tool_call_event(reply, call.name, args, status))
            result = {"messageId": reply.id, "toolName": call.name, "result": outcome.result}
            if reply.thread_id:
                result["threadId"] = reply.thread_id
            await self.svc.bus.publish(topic, {"type": "tool_result", "data": result})
            records.extend(_tool_records(req, reply.id, call, args, outcome))
        await self._store_tool_records(topic, records)
        return outcomes

    async def _call_tool(
        self, ctx: ToolContext, allowed: list[str], call: ToolCall, time_limit: float
    ) -> ToolOutcome:
        """One tool call in its `execute_tool` span; a reply it asks for (`call_agent`) is a
        child of it."""
        server = call.name.split(":")[1] if call.name.startswith(MCP_PREFIX) else None
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id,
            "gen_ai.tool.type": "extension" if server else "function",
            "palaver.mcp.server": server,
            "gen_ai.tool.call.arguments": tracing.content(call.arguments),
        }
        with tracing.span(f"execute_tool {call.name}", attributes, owns_replies=True) as span:
            outcome = await self.tools.call(ctx, allowed, call.name, call.arguments, time_limit)
            if not outcome.ok:
                tracing.failed(span, "tool_error")
            result = tracing.content(outcome.result)
            if result is not None:
                span.set_attribute("gen_ai.tool.call.result", result)
            return outcome

    async def _store_tool_records(self, topic: str, records: list[Message]) -> None:
        async with self.svc.db.write() as tx:
            for record in records:
                await messages_store.insert_message(tx.conn, record)
            for record in records:
                tx.on_commit(_publisher(self.svc, topic, record))

    async def _checkpoint(self, reply: Message, text: str) -> None:
        async with self.svc.db.write() as tx:
            kept = await messages_store.checkpoint_draft(
                tx.conn, replace(reply, content=text), utcnow(), self.svc.node_id
            )
        if not kept:
            log.info(
                "reply %s was taken over by another node; it goes on, stored at its end", reply.id
            )

    async def _finish(
        self, req: ReplyRequest, reply: Message, text: str, tally: _Tally, ending: dict[str, Any]
    ) -> Message:
        """Store the reply; through a database restart or a full disk, again and again for up
        to `STORE_PATIENCE` seconds. Should the database have committed a try whose answer was
        lost, the next finds the reply stored and replaces it with the same text (its calls
        are then counted twice in the usage ledger: rare, and on the side of caution)."""
        loop = asyncio.get_running_loop()
        give_up = loop.time() + STORE_PATIENCE
        wait = 0.25
        while True:
            try:
                return await self._store_end(req, reply, text, tally, ending)
            except Exception as exc:
                if fault_of(exc) is None or loop.time() + wait > give_up:
                    raise
                log.warning(
                    "reply %s could not be stored yet (%s); trying again in %g s",
                    reply.id,
                    describe(exc),
                    wait,
                )
            await asyncio.sleep(wait)
            wait = min(wait * 2, 4.0)

    async def _store_end(
        self, req: ReplyRequest, reply: Message, text: str, tally: _Tally, ending: dict[str, Any]
    ) -> Message:
        usage = {
            "promptTokens": tally.prompt,
            "completionTokens": tally.completion,
            "estimated": not tally.reported,
        }
        stored = replace(reply, content=text, metadata={**reply.metadata, "usage": usage, **ending})
        topic = channel_topic(req.channel.id)
        end: dict[str, Any] = {"messageId": reply.id}
        if reply.thread_id:
            end["threadId"] = reply.thread_id
        if "error" in ending:
            end["error"] = ending["error"]
        for flag in ("cancelled", "interrupted"):
            if ending.get(flag):
                end[flag] = True
        async with self.svc.db.write() as tx:
            # What the calls cost is kept even when the reply is not (its channel went).
            await _record_usage(tx.conn, req, reply, tally, self.svc.settings.current.prices)
            channel = await channels_store.get(tx.conn, req.channel.id)
            if channel is None:
                log.debug("reply %s is dropped: its channel was deleted", reply.id)
                return stored
            if await messages_store.delete_draft(tx.conn, reply.id) or not await _stored(
                tx.conn, reply.id
            ):
                metadata = await with_mentions(tx.conn, channel, stored.metadata, text)
                stored = replace(stored, metadata=metadata)
                await messages_store.insert_message(tx.conn, stored)
                await count_in_thread(self.svc, tx, stored)
            else:
                # Judged dead while only slow: another node stored the reply as interrupted.
                await messages_store.replace_message(tx.conn, stored)
                replaced = {"type": "message_replaced", "messageId": reply.id}
                tx.on_commit(lambda: self.svc.bus.publish(CONTROL, replaced))
                log.warning("reply %s, taken over as interrupted, is replaced by its end", reply.id)
            tx.on_commit(lambda: self.svc.bus.publish(topic, {"type": "stream_end", "data": end}))
            tx.on_commit(_publisher(self.svc, topic, stored))
            tx.on_commit(lambda: tell_mentioned(self.svc, stored))
        return stored


async def _record_usage(
    conn: AsyncConnection,
    req: ReplyRequest,
    reply: Message,
    tally: _Tally,
    prices: dict[str, Price],
) -> None:
    """The reply's calls into the ledger, in the write that stores the reply."""
    who = (
        req.agent.id,
        req.on_behalf_of or req.trigger.user_id or usage_store.NOBODY,
        req.channel.id,
        reply.id,
    )
    calls = list(tally.calls)
    await conn.run_sync(lambda c: usage_store.record(c, utcnow(), who, calls, prices))


def _describe_usage(span: Span, usage: Usage) -> None:
    if span.is_recording():
        span.set_attribute("gen_ai.usage.input_tokens", usage.prompt_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", usage.completion_tokens)
        span.set_attribute("gen_ai.usage.cache_read.input_tokens", usage.cached_tokens)


def _describe_finish(span: Span, finish: Finish) -> None:
    if span.is_recording():
        if finish.model:
            span.set_attribute("gen_ai.response.model", finish.model)
        if finish.reason:
            span.set_attribute("gen_ai.response.finish_reasons", [finish.reason])


def _traced(message: ChatMessage) -> dict[str, Any]:
    """A message in the conventions' shape for `gen_ai.input.messages` (opt-in only)."""
    parts: list[dict[str, Any]] = []
    if message.content:
        kind = "tool_call_response" if message.role == "tool" else "text"
        key = "result" if message.role == "tool" else "content"
        parts.append({"type": kind, key: message.content, "id": message.tool_call_id})
    parts += [
        {"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments}
        for c in message.tool_calls
    ]
    return {"role": message.role, "parts": parts}


async def _stored(conn: AsyncConnection, message_id: str) -> bool:
    return await conn.run_sync(messages_store.channel_of, message_id) is not None


async def _close(deltas: AsyncIterator[Any]) -> None:
    """End the provider's stream now, closing its connection, rather than at collection."""
    aclose = getattr(deltas, "aclose", None)
    if aclose is not None:
        await aclose()


def _wire_names(names: list[str]) -> dict[str, str]:
    """Names model APIs accept (letters, digits, `_`, `-`, at most 64): `mcp:fs:read` is
    sent as `mcp__fs__read`, and the answer's calls are mapped back."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for name in names:
        alias = _WIRE_UNSAFE.sub("_", name.replace(":", "__"))[:64]
        base, n = alias, 1
        while alias in taken:
            n += 1
            alias = f"{base[: 64 - len(str(n)) - 1]}_{n}"
        taken.add(alias)
        out[name] = alias
    return out


def _publisher(svc: Services, topic: str, message: Message) -> Any:
    return lambda: svc.bus.publish(topic, {"type": "message", "data": message.as_json()})


def _arguments(raw: str) -> dict[str, Any]:
    try:
        value = strict_json.loads(raw) if raw.strip() else {}
    except ValueError:
        return {"_raw": raw}
    return value if isinstance(value, dict) else {"_raw": raw}


def _tool_call_event(
    reply: Message, name: str, args: dict[str, Any], status: str
) -> dict[str, Any]:
    data = {"messageId": reply.id, "toolName": name, "arguments": args, "status": status}
    if reply.thread_id:
        data["threadId"] = reply.thread_id
    return {"type": "tool_call", "data": data}


def _tool_records(
    req: ReplyRequest, reply_id: str, call: ToolCall, args: dict[str, Any], outcome: ToolOutcome
) -> list[Message]:
    status = "completed" if outcome.ok else "error"
    common = {"replyId": reply_id, "callId": call.id, "toolName": call.name, "status": status}
    now = utcnow()
    return [
        Message(
            id=new_id("msg"),
            channel_id=req.channel.id,
            agent_id=req.agent.id,
            user_id=None,
            content=f"{call.name}({json.dumps(args, ensure_ascii=False)})",
            type="tool_call",
            metadata={**common, "arguments": args},
            created_at=now,
            thread_id=req.trigger.thread_id,
        ),
        Message(
            id=new_id("msg"),
            channel_id=req.channel.id,
            agent_id=req.agent.id,
            user_id=None,
            content=outcome.result,
            type="tool_result",
            metadata=common,
            created_at=now,
            thread_id=req.trigger.thread_id,
        ),
    ]
