"""The offline echo model."""

from __future__ import annotations

import time

import pytest

from palaver.llm.base import ChatMessage, Delta, ProviderError, TextDelta, ToolSpec, Usage
from palaver.llm.builtin import QUOTE_LIMIT, BuiltinProvider, echo_reply

HISTORY = [
    ChatMessage("system", "You are Code Reviewer.\n\nYou review code carefully."),
    ChatMessage("user", "Alice: first question"),
    ChatMessage("assistant", "An earlier answer."),
    ChatMessage("user", "Bob: does this: work?"),
]


async def collect(messages: list[ChatMessage]) -> list[Delta]:
    return [d async for d in BuiltinProvider().stream("echo", messages)]


async def test_names_the_agent_and_quotes_the_last_user_message_without_its_author() -> None:
    deltas = await collect(HISTORY)
    reply = "".join(d.text for d in deltas if isinstance(d, TextDelta))
    assert reply == 'Code Reviewer here (offline echo model). You said: "does this: work?"'


async def test_streams_word_by_word_and_ends_with_usage() -> None:
    deltas = await collect(HISTORY)
    pieces = [d for d in deltas if isinstance(d, TextDelta)]
    assert len(pieces) == len(echo_reply(HISTORY).split())
    assert isinstance(deltas[-1], Usage)
    assert deltas[-1].prompt_tokens > 0
    assert deltas[-1].completion_tokens > 0


async def test_is_deterministic_and_quick() -> None:
    started = time.monotonic()
    first = await collect(HISTORY)
    assert time.monotonic() - started < 0.5
    assert await collect(HISTORY) == first


async def test_without_the_persona_line_the_agent_is_called_agent() -> None:
    reply = echo_reply([ChatMessage("system", "Be brief."), ChatMessage("user", "hi")])
    assert reply.startswith("Agent here")
    assert reply.endswith('"hi"')


def test_a_long_message_is_quoted_in_part() -> None:
    reply = echo_reply([ChatMessage("user", "Alice: " + "word " * 200)])
    quoted = reply.split('"')[1]
    assert len(quoted) <= QUOTE_LIMIT
    assert quoted.endswith("…")


def test_no_user_message_still_gets_a_reply() -> None:
    assert echo_reply([ChatMessage("system", "You are Ada.")]).startswith("Ada here")


async def test_tools_are_ignored() -> None:
    tool = ToolSpec("add", "Add.", {"type": "object"})
    deltas = [d async for d in BuiltinProvider().stream("echo", HISTORY, (tool,))]
    assert all(isinstance(d, TextDelta | Usage) for d in deltas)


async def test_complete_gives_the_same_reply() -> None:
    assert await BuiltinProvider().complete("echo", HISTORY) == echo_reply(HISTORY)


async def test_lists_one_model_labelled_as_an_offline_demo() -> None:
    [model] = await BuiltinProvider().list_models()
    assert (model.id, model.provider, model.name) == ("builtin/echo", "builtin", "echo")
    assert "offline demo" in model.label


async def test_a_model_other_than_echo_is_a_readable_error() -> None:
    with pytest.raises(ProviderError, match="has only the model 'echo'"):
        await BuiltinProvider().complete("gpt-4", HISTORY)
