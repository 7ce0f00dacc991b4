"""The Anthropic adapter, driven through real HTTP against the scripted fake."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable, Iterator, Sequence

import pytest

from palaver.llm.anthropic import OPENING_TURN, AnthropicProvider
from palaver.llm.base import (
    ChatMessage,
    Delta,
    Finish,
    GenerationOptions,
    ProviderError,
    TextDelta,
    ToolCall,
    ToolCallAccumulator,
    ToolCallDelta,
    ToolSpec,
    Usage,
)
from palaver.settings import ProviderConfig
from tests.fakes import (
    FakeAnthropic,
    broken,
    hang,
    http_error,
    malformed,
    stall,
    stream_error,
    text,
    tool_call,
    tool_calls,
)
from tests.support import free_port

KEY = "sk-ant-test-0123456789abcdef"
HELLO = [ChatMessage("system", "You are Ada."), ChatMessage("user", "Bob: hello")]
ADD = ToolSpec(
    "add",
    "Add two numbers.",
    {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}},
)
Maker = Callable[..., AnthropicProvider]


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(api_key=KEY) as server:
        yield server


@pytest.fixture
async def make() -> AsyncIterator[Maker]:
    """Builds adapters for the test, and closes them after it."""
    made: list[AnthropicProvider] = []

    def build(base_url: str, **config: object) -> AnthropicProvider:
        settings = {"type": "anthropic", "baseUrl": base_url, "apiKey": KEY, "timeoutSeconds": 5.0}
        config = {**settings, **config}
        made.append(AnthropicProvider("claude", ProviderConfig.model_validate(config)))
        return made[-1]

    yield build
    for adapter in made:
        await adapter.aclose()


@pytest.fixture
def provider(fake: FakeAnthropic, make: Maker) -> AnthropicProvider:
    return make(fake.base_url)


async def collect(
    provider: AnthropicProvider,
    messages: Sequence[ChatMessage] = HELLO,
    tools: Sequence[ToolSpec] = (),
) -> list[Delta]:
    return [d async for d in provider.stream("claude-fake-1", messages, tools)]


async def failure(provider: AnthropicProvider) -> tuple[list[Delta], str, str]:
    """The deltas before the failure, its message for the channel (checked to name no
    address) and its detail for the owner's log."""
    got: list[Delta] = []
    with pytest.raises(ProviderError) as caught:
        async for delta in provider.stream("claude-fake-1", HELLO):
            got.append(delta)
    message = str(caught.value)
    assert not re.search(r"127\.0\.0\.1|localhost|https?:|:\d{2,5}\b", message), message
    return got, message, caught.value.detail


def calls_of(deltas: list[Delta]) -> list[ToolCall]:
    joined = ToolCallAccumulator()
    for delta in deltas:
        if isinstance(delta, ToolCallDelta):
            joined.add(delta)
    return joined.calls()


async def test_plain_reply_streams_each_piece_then_usage(
    fake: FakeAnthropic, provider: AnthropicProvider
) -> None:
    fake.enqueue(text("Hel", "lo", " there", usage=(12, 3)))
    assert await collect(provider) == [
        TextDelta("Hel"),
        TextDelta("lo"),
        TextDelta(" there"),
        Usage(12, 3),
        Finish("claude-fake-1", "end_turn"),
    ]


async def test_request_puts_the_system_prompt_apart_and_sends_the_key(
    fake: FakeAnthropic, provider: AnthropicProvider
) -> None:
    options = GenerationOptions(max_tokens=77, temperature=0.2)
    [_ async for _ in provider.stream("claude-fake-1", HELLO, (ADD,), options)]
    sent = fake.model_requests[-1]
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert "anthropic-version" in sent.headers
    assert sent.body["model"] == "claude-fake-1"
    assert sent.body["stream"] is True
    assert sent.body["max_tokens"] == 77
    assert "temperature" not in sent.body
    assert sent.body["system"] == "You are Ada."
    assert sent.body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Bob: hello"}]}
    ]
    assert sent.body["tools"] == [
        {"name": "add", "description": "Add two numbers.", "input_schema": ADD.parameters}
    ]


async def test_without_system_prompt_or_tools_those_fields_are_left_out(
    fake: FakeAnthropic, provider: AnthropicProvider
) -> None:
    await collect(provider, [ChatMessage("user", "Bob: hi")])
    assert "system" not in fake.model_requests[-1].body
    assert "tools" not in fake.model_requests[-1].body


async def test_tool_use_arguments_split_across_events_form_one_call(
    fake: FakeAnthropic, provider: AnthropicProvider
) -> None:
    fake.enqueue(tool_calls(tool_call("add", {"a": 1, "b": 2}, id="toolu_1", pieces=4)))
    deltas = await collect(provider, tools=(ADD,))
    fragments = [d for d in deltas if isinstance(d, ToolCallDelta) and d.arguments]
    assert len(fragments) == 4
    assert calls_of(deltas) == [ToolCall("toolu_1", "add", '{"a": 1, "b": 2}')]
    assert isinstance(deltas[-2], Usage)
    assert deltas[-1] == Finish("claude-fake-1", "tool_use")


async def test_several_tool_uses_after_text_keep_their_order(
    fake: FakeAnthropic, provider: AnthropicProvider
) -> None:
    fake.enqueue(
        tool_calls(
            tool_call("add", {"a": 1, "b": 2}, id="toolu_a"),
            tool_call("web_search", {"query": "weather in Paris"}, id="toolu_b", pieces=5),
            text=("Let me ", "check."),
        )
    )
    deltas = await collect(provider, tools=(ADD,))
    assert "".join(d.text for d in deltas if isinstance(d, TextDelta)) == "Let me check."
    assert calls_of(deltas) == [
        ToolCall("toolu_a", "add", '{"a": 1, "b": 2}'),
        ToolCall("toolu_b", "web_search", '{"query": "weather in Paris"}'),
    ]


async def test_usage_comes_from_message_start_and_message_delta(
    fake: FakeAnthropic, provider: AnthropicProvider
) -> None:
    fake.enqueue(text("a", "b", usage=(40, 9)))
    deltas = await collect(provider)
    assert deltas[-2:] == [Usage(40, 9), Finish("claude-fake-1", "end_turn")]


async def test_tool_round_trip_becomes_tool_use_and_merged_tool_results(
    fake: FakeAnthropic, provider: AnthropicProvider
) -> None:
    history = [
        *HELLO,
        ChatMessage(
            "assistant",
            "Adding.",
            tool_calls=(
                ToolCall("toolu_a", "add", '{"a": 1, "b": 2}'),
                ToolCall("toolu_b", "add", ""),
            ),
        ),
        ChatMessage("tool", "3", tool_call_id="toolu_a", name="add"),
        ChatMessage("tool", "missing arguments", tool_call_id="toolu_b", name="add"),
    ]
    await collect(provider, history, (ADD,))
    assert fake.model_requests[-1].body["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Adding."},
                {"type": "tool_use", "id": "toolu_a", "name": "add", "input": {"a": 1, "b": 2}},
                {"type": "tool_use", "id": "toolu_b", "name": "add", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_a", "content": "3"},
                {"type": "tool_result", "tool_use_id": "toolu_b", "content": "missing arguments"},
            ],
        },
    ]


async def test_consecutive_turns_of_one_role_are_merged_and_the_first_is_a_user_turn(
    fake: FakeAnthropic, provider: AnthropicProvider
) -> None:
    history = [
        ChatMessage("system", "You are Ada."),
        ChatMessage("assistant", "Earlier answer."),
        ChatMessage("user", "Bob: one"),
        ChatMessage("user", "Eve: two"),
        ChatMessage("system", "Remember the rules."),
    ]
    await collect(provider, history)
    body = fake.model_requests[-1].body
    assert body["system"] == "You are Ada.\n\nRemember the rules."
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": OPENING_TURN}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Earlier answer."}]},
        {
            "role": "user",
            "content": [{"type": "text", "text": "Bob: one"}, {"type": "text", "text": "Eve: two"}],
        },
    ]


async def test_complete_joins_the_streamed_text(
    fake: FakeAnthropic, provider: AnthropicProvider
) -> None:
    fake.enqueue(text("4", "2"))
    assert await provider.complete("claude-fake-1", HELLO) == "42"


async def test_http_error_before_the_stream_reads_as_one_sentence(
    fake: FakeAnthropic, provider: AnthropicProvider
) -> None:
    fake.enqueue(http_error(529, "Overloaded"))
    got, message, detail = await failure(provider)
    assert got == []
    assert message == "The model provider 'claude' failed (HTTP 529)."
    assert detail == f"The model provider 'claude' at {fake.url} answered 529: Overloaded."


async def test_a_wrong_key_is_reported_without_the_key(fake: FakeAnthropic, make: Maker) -> None:
    adapter = make(fake.base_url, apiKey="sk-ant-wrong-key-123456")
    _, message, detail = await failure(adapter)
    assert message == "The model provider 'claude' refused the key (HTTP 401)."
    assert detail == f"The model provider 'claude' at {fake.url} answered 401: Invalid API key."


async def test_error_messages_never_hold_the_key(
    fake: FakeAnthropic, provider: AnthropicProvider
) -> None:
    fake.enqueue(http_error(400, f"Key {KEY} is not allowed here"))
    _, message, detail = await failure(provider)
    assert message == "The model provider 'claude' refused the request (HTTP 400)."
    assert detail.endswith("answered 400: Key •••• is not allowed here.")


async def test_a_stream_that_breaks_midway_keeps_what_arrived(
    fake: FakeAnthropic, provider: AnthropicProvider
) -> None:
    fake.enqueue(broken(text("a", "b", "c", "d"), after=2))
    got, message, detail = await failure(provider)
    assert got == [TextDelta("a"), TextDelta("b")]
    assert message == "The connection to the model provider 'claude' broke during the answer."
    assert detail.startswith(f"The connection to the model provider 'claude' at {fake.url} ")


async def test_a_malformed_stream_is_reported(
    fake: FakeAnthropic, provider: AnthropicProvider
) -> None:
    fake.enqueue(malformed(text("a", "b"), after=1))
    got, message, detail = await failure(provider)
    assert got == [TextDelta("a")]
    assert message == "The model provider 'claude' sent a malformed answer."
    assert detail.startswith(f"The model provider 'claude' sent a malformed answer ({fake.url}, ")


async def test_an_error_event_mid_stream_is_reported(
    fake: FakeAnthropic, provider: AnthropicProvider
) -> None:
    fake.enqueue(stream_error(text("a", "b"), after=1, message="Overloaded"))
    got, message, detail = await failure(provider)
    assert got == [TextDelta("a")]
    assert message == "The model provider 'claude' failed during the answer."
    assert (
        detail == f"The model provider 'claude' at {fake.url} failed during the answer: Overloaded."
    )


async def test_refused_connection_names_the_provider_and_only_the_log_the_address(
    make: Maker,
) -> None:
    port = free_port()
    adapter = make(f"http://127.0.0.1:{port}")
    _, message, detail = await failure(adapter)
    assert message == "The model provider 'claude' did not answer."
    assert detail.startswith(
        f"Could not reach the model provider 'claude' at http://127.0.0.1:{port}: "
    )


async def test_a_silent_provider_times_out(fake: FakeAnthropic, make: Maker) -> None:
    fake.enqueue(hang())
    adapter = make(fake.base_url, timeoutSeconds=0.3)
    _, message, detail = await failure(adapter)
    assert message == "The model provider 'claude' did not answer within 0.3 seconds."
    assert detail == f"The model provider 'claude' at {fake.url} did not answer within 0.3 seconds."


async def test_a_stream_that_stalls_times_out(fake: FakeAnthropic, make: Maker) -> None:
    fake.enqueue(text("a", "b", delay=5))
    adapter = make(fake.base_url, timeoutSeconds=0.3)
    got, message, _ = await failure(adapter)
    assert got == [TextDelta("a")]
    assert message == "The model provider 'claude' did not answer within 0.3 seconds."


async def test_models_are_listed_with_their_display_names(
    fake: FakeAnthropic, provider: AnthropicProvider
) -> None:
    models = await provider.list_models()
    assert [(m.id, m.name, m.label) for m in models] == [
        ("claude/claude-fake-1", "claude-fake-1", "Claude Fake 1"),
        ("claude/claude-fake-2", "claude-fake-2", "Claude Fake 2"),
    ]
    assert fake.requests[-1].path == "/v1/models"


async def test_a_failed_model_listing_raises_a_readable_error(
    fake: FakeAnthropic, provider: AnthropicProvider
) -> None:
    fake.models_error = http_error(403, "Not for you.")
    with pytest.raises(
        ProviderError, match=r"^The model provider 'claude' refused access"
    ) as caught:
        await provider.list_models()
    assert caught.value.detail.endswith("answered 403: Not for you.")


async def test_cancelling_a_reply_mid_stream_raises_cancelled_not_a_provider_error(
    fake: FakeAnthropic, provider: AnthropicProvider
) -> None:
    fake.enqueue(stall(text("a", "b"), after=1), text("after", usage=(1, 1)))
    got: list[Delta] = []
    first = asyncio.Event()

    async def consume() -> None:
        async for delta in provider.stream("claude-fake-1", HELLO):
            got.append(delta)
            first.set()

    task = asyncio.create_task(consume())
    await first.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert got == [TextDelta("a")]
    assert await collect(provider) == [
        TextDelta("after"),
        Usage(1, 1),
        Finish("claude-fake-1", "end_turn"),
    ]
