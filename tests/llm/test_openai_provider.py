"""The OpenAI adapter, driven through real HTTP against the scripted fake."""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import AsyncIterator, Callable, Iterator, Sequence

import pytest
from openai import AsyncOpenAI

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
from palaver.llm.openai import OpenAIProvider, _ChunkReader
from palaver.settings import ProviderConfig
from tests.fakes import (
    FakeOpenAI,
    RecordedRequest,
    Reply,
    broken,
    burst,
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

KEY = "sk-test-0123456789abcdef"
HELLO = [ChatMessage("system", "You are Ada."), ChatMessage("user", "Bob: hello")]
ADD = ToolSpec(
    "add",
    "Add two numbers.",
    {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}},
)
Maker = Callable[..., OpenAIProvider]


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
async def make() -> AsyncIterator[Maker]:
    """Builds adapters for the test, and closes them after it."""
    made: list[OpenAIProvider] = []

    def build(base_url: str, **config: object) -> OpenAIProvider:
        settings = {"type": "openai", "baseUrl": base_url, "apiKey": KEY, "timeoutSeconds": 5.0}
        made.append(OpenAIProvider("acme", ProviderConfig.model_validate({**settings, **config})))
        return made[-1]

    yield build
    for adapter in made:
        await adapter.aclose()


@pytest.fixture
def provider(fake: FakeOpenAI, make: Maker) -> OpenAIProvider:
    return make(fake.base_url)


async def collect(
    provider: OpenAIProvider,
    messages: Sequence[ChatMessage] = HELLO,
    tools: Sequence[ToolSpec] = (),
) -> list[Delta]:
    return [d async for d in provider.stream("gpt-fake", messages, tools)]


async def failure(provider: OpenAIProvider) -> tuple[list[Delta], str, str]:
    """The deltas that arrived before the stream failed, the failure's message for the channel
    (checked to name no address) and its detail for the owner's log."""
    got: list[Delta] = []
    with pytest.raises(ProviderError) as caught:
        async for delta in provider.stream("gpt-fake", HELLO):
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
    fake: FakeOpenAI, provider: OpenAIProvider
) -> None:
    fake.enqueue(text("Hel", "lo", " there", usage=(12, 3)))
    assert await collect(provider) == [
        TextDelta("Hel"),
        TextDelta("lo"),
        TextDelta(" there"),
        Usage(12, 3),
        Finish("gpt-fake", "stop"),
    ]


async def test_request_asks_for_a_stream_with_usage_and_sends_the_key(
    fake: FakeOpenAI, provider: OpenAIProvider
) -> None:
    options = GenerationOptions(max_tokens=77, temperature=0.2)
    [_ async for _ in provider.stream("gpt-fake", HELLO, (ADD,), options)]
    sent = fake.model_requests[-1]
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.body["model"] == "gpt-fake"
    assert sent.body["stream"] is True
    assert sent.body["stream_options"] == {"include_usage": True}
    assert sent.body["max_tokens"] == 77
    assert sent.body["temperature"] == 0.2
    assert sent.body["messages"] == [
        {"role": "system", "content": "You are Ada."},
        {"role": "user", "content": "Bob: hello"},
    ]
    function = {"name": "add", "description": "Add two numbers.", "parameters": ADD.parameters}
    assert sent.body["tools"] == [{"type": "function", "function": function}]


async def test_no_tools_means_no_tools_field(fake: FakeOpenAI, provider: OpenAIProvider) -> None:
    await collect(provider)
    assert "tools" not in fake.model_requests[-1].body
    assert "temperature" not in fake.model_requests[-1].body


async def test_tool_call_arguments_split_across_chunks_form_one_call(
    fake: FakeOpenAI, provider: OpenAIProvider
) -> None:
    fake.enqueue(tool_calls(tool_call("add", {"a": 1, "b": 2}, id="call_1", pieces=4)))
    deltas = await collect(provider, tools=(ADD,))
    fragments = [d for d in deltas if isinstance(d, ToolCallDelta) and d.arguments]
    assert len(fragments) == 4
    assert calls_of(deltas) == [ToolCall("call_1", "add", '{"a": 1, "b": 2}')]
    assert not [d for d in deltas if isinstance(d, TextDelta)]
    assert isinstance(deltas[-2], Usage)
    assert deltas[-1] == Finish("gpt-fake", "tool_calls")


async def test_several_tool_calls_in_one_response_keep_their_order(
    fake: FakeOpenAI, provider: OpenAIProvider
) -> None:
    fake.enqueue(
        tool_calls(
            tool_call("add", {"a": 1, "b": 2}, id="call_a"),
            tool_call("web_search", {"query": "weather in Paris"}, id="call_b", pieces=5),
            text=("Let me ", "check."),
        )
    )
    deltas = await collect(provider, tools=(ADD,))
    assert "".join(d.text for d in deltas if isinstance(d, TextDelta)) == "Let me check."
    assert calls_of(deltas) == [
        ToolCall("call_a", "add", '{"a": 1, "b": 2}'),
        ToolCall("call_b", "web_search", '{"query": "weather in Paris"}'),
    ]


async def test_tool_calls_and_results_go_back_in_the_wire_format(
    fake: FakeOpenAI, provider: OpenAIProvider
) -> None:
    calls = (ToolCall("call_a", "add", '{"a": 1}'), ToolCall("call_b", "add", '{"a": 3}'))
    history = [
        *HELLO,
        ChatMessage("assistant", "", tool_calls=calls),
        ChatMessage("tool", "3", tool_call_id="call_a", name="add"),
        ChatMessage("tool", "7", tool_call_id="call_b", name="add"),
    ]
    await collect(provider, history, (ADD,))
    wire_calls = [
        {"id": c.id, "type": "function", "function": {"name": "add", "arguments": c.arguments}}
        for c in calls
    ]
    assert fake.model_requests[-1].body["messages"][2:] == [
        {"role": "assistant", "content": None, "tool_calls": wire_calls},
        {"role": "tool", "tool_call_id": "call_a", "content": "3"},
        {"role": "tool", "tool_call_id": "call_b", "content": "7"},
    ]


async def test_complete_joins_the_streamed_text(fake: FakeOpenAI, provider: OpenAIProvider) -> None:
    fake.enqueue(text("4", "2"))
    assert await provider.complete("gpt-fake", HELLO) == "42"
    assert fake.model_requests[-1].body["stream"] is True


async def test_http_error_before_the_stream_reads_as_one_sentence(
    fake: FakeOpenAI, provider: OpenAIProvider
) -> None:
    fake.enqueue(http_error(500, "The engine overheated."))
    got, message, detail = await failure(provider)
    assert got == []
    assert message == "The model provider 'acme' failed (HTTP 500)."
    assert detail == f"The model provider 'acme' at {fake.url} answered 500: The engine overheated."


async def test_error_messages_never_hold_the_key(
    fake: FakeOpenAI, provider: OpenAIProvider
) -> None:
    fake.enqueue(http_error(401, f"Incorrect API key provided: {KEY[:6]}...{KEY[-4:]} or {KEY}"))
    _, message, detail = await failure(provider)
    assert message == "The model provider 'acme' refused the key (HTTP 401)."
    assert detail.startswith(f"The model provider 'acme' at {fake.url} answered 401: Incorrect")
    assert KEY not in detail and "••••" in detail


async def test_a_stream_that_breaks_midway_keeps_what_arrived(
    fake: FakeOpenAI, provider: OpenAIProvider
) -> None:
    fake.enqueue(broken(text("a", "b", "c", "d"), after=2))
    got, message, detail = await failure(provider)
    assert got == [TextDelta("a"), TextDelta("b")]
    assert message == "The connection to the model provider 'acme' broke during the answer."
    assert detail.startswith(f"The connection to the model provider 'acme' at {fake.url} ")


async def test_a_malformed_stream_is_reported(fake: FakeOpenAI, provider: OpenAIProvider) -> None:
    fake.enqueue(malformed(text("a", "b"), after=1))
    got, message, detail = await failure(provider)
    assert got == [TextDelta("a")]
    assert message == "The model provider 'acme' sent a malformed answer."
    assert detail.startswith(f"The model provider 'acme' sent a malformed answer ({fake.url}, ")


async def test_an_error_event_mid_stream_is_reported(
    fake: FakeOpenAI, provider: OpenAIProvider
) -> None:
    fake.enqueue(stream_error(text("a", "b"), after=1, message="Overloaded"))
    got, message, detail = await failure(provider)
    assert got == [TextDelta("a")]
    assert message == "The model provider 'acme' failed during the answer."
    assert (
        detail == f"The model provider 'acme' at {fake.url} failed during the answer: Overloaded."
    )


async def test_refused_connection_names_the_provider_and_only_the_log_the_address(
    make: Maker,
) -> None:
    port = free_port()
    adapter = make(f"http://127.0.0.1:{port}/v1")
    _, message, detail = await failure(adapter)
    assert message == "The model provider 'acme' did not answer."
    assert detail.startswith(
        f"Could not reach the model provider 'acme' at http://127.0.0.1:{port}: "
    )


async def test_a_silent_provider_times_out(fake: FakeOpenAI, make: Maker) -> None:
    fake.enqueue(hang())
    adapter = make(fake.base_url, timeoutSeconds=0.3)
    _, message, detail = await failure(adapter)
    assert message == "The model provider 'acme' did not answer within 0.3 seconds."
    assert detail == f"The model provider 'acme' at {fake.url} did not answer within 0.3 seconds."


async def test_a_stream_that_stalls_times_out(fake: FakeOpenAI, make: Maker) -> None:
    fake.enqueue(stall(text("a", "b"), after=1))
    adapter = make(fake.base_url, timeoutSeconds=0.3)
    got, message, _ = await failure(adapter)
    assert got == [TextDelta("a")]
    assert "did not answer within 0.3 seconds" in message


async def test_the_options_timeout_can_only_tighten_the_configured_one(
    fake: FakeOpenAI, make: Maker
) -> None:
    fake.enqueue(hang())
    adapter = make(fake.base_url, timeoutSeconds=30)
    with pytest.raises(ProviderError, match=r"within 0\.2 seconds"):
        await adapter.complete("gpt-fake", HELLO, GenerationOptions(timeout=0.2))


async def test_stopping_early_frees_the_connection_for_the_next_reply(
    fake: FakeOpenAI, provider: OpenAIProvider
) -> None:
    fake.enqueue(text("a", "b", "c", delay=0.5), text("next", usage=(5, 1)))
    stream = provider.stream("gpt-fake", HELLO)
    assert await anext(stream) == TextDelta("a")
    await stream.aclose()
    assert await collect(provider) == [TextDelta("next"), Usage(5, 1), Finish("gpt-fake", "stop")]


async def test_without_a_key_a_placeholder_lets_local_servers_answer(
    fake: FakeOpenAI, make: Maker
) -> None:
    adapter = make(fake.base_url, apiKey=None)
    assert TextDelta("Hello") in [d async for d in adapter.stream("llama3", HELLO)]
    assert fake.model_requests[-1].headers["authorization"] == "Bearer not-needed"


async def test_models_are_listed_from_the_models_endpoint(
    fake: FakeOpenAI, provider: OpenAIProvider
) -> None:
    fake.models = ["zeta", "alpha/beta"]
    models = await provider.list_models()
    assert [(m.id, m.provider, m.name) for m in models] == [
        ("acme/alpha/beta", "acme", "alpha/beta"),
        ("acme/zeta", "acme", "zeta"),
    ]
    assert fake.requests[-1].path == "/v1/models"


async def test_a_failed_model_listing_raises_a_readable_error(
    fake: FakeOpenAI, provider: OpenAIProvider
) -> None:
    fake.models_error = http_error(403, "Project has no access.")
    with pytest.raises(ProviderError, match=r"^The model provider 'acme' refused access") as caught:
        await provider.list_models()
    assert caught.value.detail.endswith("answered 403: Project has no access.")


async def test_a_bad_base_url_is_refused_with_a_readable_error(make: Maker) -> None:
    with pytest.raises(ProviderError, match="base URL of the model provider 'acme'"):
        make("localhost:11434/v1")


def _chunk(*calls: dict[str, object]) -> dict[str, object]:
    choice = {"index": 0, "delta": {"tool_calls": list(calls)}, "finish_reason": None}
    return {"id": "c", "object": "chat.completion.chunk", "model": "m", "choices": [choice]}


def test_a_reused_index_with_a_new_id_opens_a_new_call() -> None:
    reader = _ChunkReader()
    deltas: list[Delta] = []
    for chunk in (
        _chunk({"index": 0, "id": "a", "function": {"name": "add", "arguments": '{"a":'}}),
        _chunk({"index": 0, "function": {"arguments": " 1}"}}),
        _chunk({"index": 0, "id": "b", "function": {"name": "add", "arguments": "{}"}}),
    ):
        deltas += reader.read(chunk)
    assert calls_of(deltas) == [ToolCall("a", "add", '{"a": 1}'), ToolCall("b", "add", "{}")]


async def test_cancelling_a_reply_mid_stream_raises_cancelled_not_a_provider_error(
    fake: FakeOpenAI, provider: OpenAIProvider
) -> None:
    fake.enqueue(stall(text("a", "b"), after=1), text("after", usage=(1, 1)))
    got: list[Delta] = []
    first = asyncio.Event()

    async def consume() -> None:
        async for delta in provider.stream("gpt-fake", HELLO):
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
        Finish("gpt-fake", "stop"),
    ]


async def test_a_burst_of_one_character_tokens_arrives_token_by_token(
    fake: FakeOpenAI, provider: OpenAIProvider
) -> None:
    fake.enqueue(burst(1000))
    deltas = await collect(provider)
    assert [d for d in deltas if isinstance(d, TextDelta)] == [TextDelta("x")] * 1000
    written = [e for e in fake.events_for(fake.model_requests[-1]) if e.content is not None]
    assert len(written) == 1000
    assert all(a.written_at <= b.written_at for a, b in itertools.pairwise(written))


async def test_a_responder_answers_concurrent_replies_each_from_its_request(
    fake: FakeOpenAI, provider: OpenAIProvider
) -> None:
    def echo_last_words(request: RecordedRequest) -> Reply:
        said = request.body["messages"][-1]["content"]
        return text(*said.split(" "), delay=0.01)

    fake.responder = echo_last_words

    async def ask(i: int) -> str:
        return await provider.complete("gpt-fake", [ChatMessage("user", f"reply {i} please")])

    answers = await asyncio.gather(*(ask(i) for i in range(20)))
    assert answers == [f"reply{i}please" for i in range(20)]
    assert len(fake.model_requests) == 20


async def test_the_fake_serves_deterministic_embeddings(fake: FakeOpenAI) -> None:
    async with AsyncOpenAI(base_url=fake.base_url, api_key="x", max_retries=0) as client:
        first = await client.embeddings.create(model="e", input=["cat", "dog"])
        again = await client.embeddings.create(model="e", input="cat", dimensions=8)
        floats = await client.embeddings.create(model="e", input="cat", encoding_format="float")
    cat, dog = (item.embedding for item in first.data)
    assert len(cat) == fake.embedding_dim
    assert cat == pytest.approx(again.data[0].embedding)
    assert cat == pytest.approx(floats.data[0].embedding)
    assert cat != pytest.approx(dog)
    assert sum(v * v for v in cat) == pytest.approx(1.0)
