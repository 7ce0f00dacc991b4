"""Traces in OpenTelemetry's GenAI conventions, sent over OTLP/HTTP to a real receiver on
loopback that decodes them with OpenTelemetry's own protobuf classes: the span tree of a
mention with a tool call, a chain of two agents, a schedule firing, a knowledge query and a
memory write; nothing people wrote in a span without the opt-in, and with it, the prompts."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.otlp_receiver import OtlpReceiver, Span, children, tree
from tests.fakes.script import text, tool_call, tool_calls
from tests.support import Api, Server, Ws, new_agent, new_channel, post, unique

SECRET_KEY = "sk-trace-test-0123456789abcdef"
WRITTEN = "Ottilie keeps the spare keys under the blue flowerpot"


@pytest.fixture(scope="module")
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as found:
        yield found


@pytest.fixture(scope="module")
def model() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture(scope="module")
def traced(
    tmp_path_factory: pytest.TempPathFactory, receiver: OtlpReceiver, model: FakeOpenAI
) -> Iterator[Server]:
    server = Server(tmp_path_factory.mktemp("traced") / "data", env=receiver.env())
    server.start()
    with server.login() as owner:
        provider = {"type": "openai", "baseUrl": f"{model.url}/v1", "apiKey": SECRET_KEY}
        owner.ok("PUT", "/api/settings", json={"providers": {"oai": provider}})
    yield server
    server.stop()


@pytest.fixture
def owner(traced: Server, receiver: OtlpReceiver, model: FakeOpenAI) -> Iterator[Api]:
    model.reset()
    with traced.login() as api:
        yield api
    model.release()


def _one(spans: list[Span], name: str) -> Span:
    found = [s for s in spans if s.name == name]
    assert len(found) == 1, (name, sorted(s.name for s in spans))
    return found[0]


def _shape(spans: list[Span], root: Span) -> list[tuple[int, str]]:
    return [(depth, s.name) for depth, s in tree(spans, root)]


def _reply(api: Api, traced: Server, channel: dict[str, Any], content: str) -> str:
    """Post and wait for the reply's end; answers the reply's id."""
    with Ws(traced, api.token) as ws:
        ws.subscribe(channel["id"])
        post(api, channel["id"], content)
        end = ws.expect("stream_end", timeout=30)
    assert "error" not in end["data"], end
    reply_id: str = end["data"]["messageId"]
    return reply_id


def _agent_trace(receiver: OtlpReceiver, agent: dict[str, Any]) -> tuple[list[Span], Span]:
    name = f"invoke_agent {agent['name']}"
    spans = receiver.wait_for(
        lambda found: any(s.name == name for s in found), what=f"the span {name}"
    )
    root = _one(spans, name)
    time.sleep(0.3)  # the spans that ended before the root may come in another batch
    return receiver.trace(root.trace_id), root


def test_a_mention_with_a_tool_call_is_one_trace_linked_to_its_request(
    owner: Api, traced: Server, receiver: OtlpReceiver, model: FakeOpenAI
) -> None:
    agent = new_agent(owner, name=unique("Keeper"), model="oai/gpt-test", tools=["memory_write"])
    channel = new_channel(owner, [agent["id"]])
    model.enqueue(
        tool_calls(tool_call("memory_write", {"content": WRITTEN}, id="call_77")),
        text("Noted."),
    )
    reply_id = _reply(owner, traced, channel, f"@{agent['name']} remember: {WRITTEN}")

    spans, root = _agent_trace(receiver, agent)
    assert root.parent_id == "" and root.kind == "INTERNAL"
    assert _shape(spans, root) == [
        (0, f"invoke_agent {agent['name']}"),
        (1, "chat gpt-test"),
        (1, "execute_tool memory_write"),
        (2, "upsert_memory"),
        (3, f"embeddings {_embedder(spans)}"),
        (1, "chat gpt-test"),
    ]
    assert root.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert root.attributes["gen_ai.agent.name"] == agent["name"]
    assert root.attributes["gen_ai.agent.id"] == agent["id"]
    assert root.attributes["gen_ai.conversation.id"] == channel["id"]
    assert root.attributes["palaver.message.id"] == reply_id
    assert root.resource["service.name"] == "palaver-test"
    assert root.resource["service.instance.id"].startswith("node_")

    # Linked to the HTTP request that posted the message (FastAPI's own span, palaver[otel]).
    [(link_trace, link_span)] = root.links
    request = next(s for s in receiver.snapshot() if s.span_id == link_span)
    assert request.trace_id == link_trace and request.kind == "SERVER"
    assert request.attributes.get("http.route") == "/api/messages"

    first, second = (s for s in children(spans, root) if s.name == "chat gpt-test")
    assert first.kind == "CLIENT"
    assert first.attributes["gen_ai.provider.name"] == "openai"
    assert first.attributes["gen_ai.request.model"] == "gpt-test"
    assert first.attributes["gen_ai.response.model"] == "gpt-test"
    assert first.attributes["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert second.attributes["gen_ai.response.finish_reasons"] == ["stop"]
    for call in (first, second):
        assert call.attributes["gen_ai.usage.input_tokens"] > 0
        assert call.attributes["gen_ai.usage.output_tokens"] > 0
        assert call.attributes["gen_ai.response.time_to_first_chunk"] >= 0
    assert root.attributes["gen_ai.usage.input_tokens"] == sum(
        c.attributes["gen_ai.usage.input_tokens"] for c in (first, second)
    )

    tool = _one(spans, "execute_tool memory_write")
    assert tool.attributes["gen_ai.tool.name"] == "memory_write"
    assert tool.attributes["gen_ai.tool.call.id"] == "call_77"
    assert tool.attributes["gen_ai.tool.type"] == "function"
    write = _one(spans, "upsert_memory")
    assert write.attributes["gen_ai.operation.name"] == "upsert_memory"
    assert write.attributes["gen_ai.memory.store.id"] == agent["id"]
    assert write.attributes["palaver.memory.decision"] == "inserted"
    assert write.attributes["gen_ai.memory.record.id"].startswith("mem_")

    # The same fact again: the write rule's decision and the similarity that made it.
    model.enqueue(
        tool_calls(tool_call("memory_write", {"content": WRITTEN}, id="call_78")),
        text("Already noted."),
    )
    receiver.clear()
    _reply(owner, traced, channel, f"@{agent['name']} remember again: {WRITTEN}")
    spans, root = _agent_trace(receiver, agent)
    again = _one(spans, "upsert_memory")
    assert again.attributes["palaver.memory.decision"] == "skipped"
    assert again.attributes["palaver.memory.similarity"] > 0.95
    # The reply recalled the memory while building its prompt: a memory search.
    recall = _one(spans, "search_memory")
    assert recall.parent_id == root.span_id
    assert recall.attributes["gen_ai.memory.record.count"] >= 1
    _nothing_written(receiver, WRITTEN, "remember again", "Already noted")


def _nothing_written(receiver: OtlpReceiver, *written: str) -> None:
    """No text people or models wrote, and no secret, in anything exported."""
    time.sleep(0.3)
    everything = b"".join(receiver.bodies)
    assert everything
    for text_ in (*written, SECRET_KEY, SECRET_KEY[:12]):
        assert text_.encode() not in everything, text_


def _embedder(spans: list[Span]) -> str:
    found = next(s for s in spans if s.name.startswith("embeddings "))
    assert found.attributes["gen_ai.operation.name"] == "embeddings"
    assert found.attributes["gen_ai.request.model"] == found.name.removeprefix("embeddings ")
    return found.name.removeprefix("embeddings ")


def test_a_chain_of_two_agents_is_one_workflow_trace(
    owner: Api, traced: Server, receiver: OtlpReceiver, model: FakeOpenAI
) -> None:
    first = new_agent(owner, name=unique("Scout"), model="oai/gpt-test")
    second = new_agent(owner, name=unique("Scribe"), model="oai/gpt-test")
    group = new_channel(owner, [first["id"], second["id"]])
    model.enqueue(text("Found three leads."), text("Wrote them up."))
    chain = owner.ok(
        "POST",
        "/api/chains",
        json={
            "channelId": group["id"],
            "agentIds": [first["id"], second["id"]],
            "content": "Look into it and write it up.",
        },
    )["chain"]
    name = f"invoke_workflow {first['name']} → {second['name']}"
    spans = receiver.wait_for(lambda found: any(s.name == name for s in found), what=name)
    workflow = _one(spans, name)
    time.sleep(0.3)
    spans = receiver.trace(workflow.trace_id)
    assert workflow.parent_id == ""
    assert workflow.attributes["gen_ai.operation.name"] == "invoke_workflow"
    assert _shape(spans, workflow) == [
        (0, name),
        (1, f"invoke_agent {first['name']}"),
        (2, "chat gpt-test"),
        (1, f"invoke_agent {second['name']}"),
        (2, "chat gpt-test"),
    ]
    for step in (s for s in children(spans, workflow) if s.scope == "palaver"):
        assert step.attributes["palaver.chain.id"] == chain["id"]
    [(_, link_span)] = workflow.links
    request = next(s for s in receiver.snapshot() if s.span_id == link_span)
    assert request.attributes.get("http.route") == "/api/chains"
    _nothing_written(receiver, "Look into it", "Found three leads", "Wrote them up")


def test_a_schedule_firing_starts_a_reply_trace_linked_to_the_firing(
    owner: Api, receiver: OtlpReceiver, model: FakeOpenAI
) -> None:
    agent = new_agent(owner, name=unique("Clock"), model="oai/gpt-test")
    channel = new_channel(owner, [agent["id"]])
    model.enqueue(text("Ferns watered."))
    due = (datetime.now(UTC) + timedelta(seconds=1.5)).isoformat()
    body = {"agentId": agent["id"], "channelId": channel["id"], "prompt": "Water the ferns."}
    schedule = owner.ok("POST", "/api/schedules", json={**body, "at": due})["schedule"]

    spans, root = _agent_trace(receiver, agent)
    assert root.parent_id == ""
    assert root.attributes["palaver.schedule.id"] == schedule["id"]
    assert _shape(spans, root) == [(0, f"invoke_agent {agent['name']}"), (1, "chat gpt-test")]
    [(link_trace, link_span)] = root.links
    firing = next(s for s in receiver.snapshot() if s.span_id == link_span)
    assert firing.name == "fire_schedule" and firing.trace_id == link_trace
    assert firing.attributes["palaver.schedule.id"] == schedule["id"]


def test_a_knowledge_query_is_a_retrieval_span_under_its_request(
    owner: Api, receiver: OtlpReceiver
) -> None:
    agent = new_agent(owner, name=unique("Librarian"))
    document = b"# Bicycles\n\nThe shed opens at seven; the bicycle pump hangs by the door.\n"
    uploaded = owner.post(
        "/api/rag/upload",
        files={"file": ("shed.md", document, "text/markdown")},
        data={"agentId": agent["id"]},
    )
    assert uploaded.status_code == 200, uploaded.text
    receiver.clear()
    found = owner.ok(
        "POST", "/api/rag/query", json={"agentId": agent["id"], "query": "where is the pump"}
    )
    assert found["results"]
    name = f"retrieval {agent['id']}"
    spans = receiver.wait_for(lambda got: any(s.name == name for s in got), what=name)
    retrieval = _one(spans, name)
    time.sleep(0.3)
    spans = receiver.trace(retrieval.trace_id)
    assert retrieval.attributes["gen_ai.operation.name"] == "retrieval"
    assert retrieval.attributes["gen_ai.data_source.id"] == agent["id"]
    assert retrieval.attributes["gen_ai.request.top_k"] == 5
    assert retrieval.attributes["palaver.retrieval.results"] == len(found["results"])
    assert [s.name for s in children(spans, retrieval) if s.scope == "palaver"] == [
        f"embeddings {_embedder(spans)}"
    ]
    parent = next(s for s in spans if s.span_id == retrieval.parent_id)
    assert parent.kind == "SERVER" and parent.attributes.get("http.route") == "/api/rag/query"
    # Query strings stay out of the HTTP spans: a memory search's words travel in its URL.
    owner.ok("GET", f"/api/agents/{agent['id']}/memories", params={"q": "lantern in the attic"})
    owner.ok("GET", "/api/search", params={"q": "lantern attic"})
    receiver.wait_for(
        lambda got: any(s.attributes.get("http.route") == "/api/search" for s in got),
        what="the search request's span",
    )
    _nothing_written(receiver, "where is the pump", "bicycle pump hangs", "lantern")


def test_with_the_opt_in_prompts_answers_and_tool_arguments_are_in_the_spans(
    tmp_path: Path, model: FakeOpenAI
) -> None:
    with OtlpReceiver() as receiver:
        env = receiver.env(OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="true")
        server = Server(tmp_path / "data", env=env)
        server.start()
        try:
            with server.login() as owner:
                provider = {"type": "openai", "baseUrl": f"{model.url}/v1", "apiKey": SECRET_KEY}
                owner.ok("PUT", "/api/settings", json={"providers": {"oai": provider}})
                agent = new_agent(owner, model="oai/gpt-test", tools=["memory_write"])
                channel = new_channel(owner, [agent["id"]])
                model.reset()
                model.enqueue(
                    tool_calls(tool_call("memory_write", {"content": WRITTEN})), text("Noted.")
                )
                _reply(owner, server, channel, f"@{agent['name']} remember: {WRITTEN}")
                spans, root = _agent_trace(receiver, agent)
        finally:
            server.stop()
            model.release()
        first = next(s for s in children(spans, root) if s.name == "chat gpt-test")
        assert WRITTEN in first.attributes["gen_ai.input.messages"]
        assert "memory_write" in first.attributes["gen_ai.output.messages"]
        tool = _one(spans, "execute_tool memory_write")
        assert WRITTEN in tool.attributes["gen_ai.tool.call.arguments"]
        assert "gen_ai.tool.call.result" in tool.attributes
        assert SECRET_KEY.encode() not in b"".join(receiver.bodies)
