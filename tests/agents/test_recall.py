"""What an agent recalls, end to end through the fake provider: memories and document passages
injected into the system prompt the model receives, the memory and knowledge tools called by
the model, and the privacy rule for channels that have a guest."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.agents.conftest import Room
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.script import Reply, text, tool_call, tool_calls
from tests.fakes.server import RecordedRequest
from tests.knowledge.helpers import graded_passages, is_grading, make_pdf
from tests.support import Api, Guest, Server, Ws, new_channel

CAT = "The owner's cat is called Miso."
DEPLOYS = "Deploys go out on Tuesdays, after the stand-up meeting."
SECRET = "The owner is secretly applying for a job at another company."
"""Told to the agent in the owner's DM: must never reach a channel with a guest."""
SHARED = "The owner is organising the company's summer party."
"""Told to the agent in the channel with the guest."""
WORK_QUESTION = "What is the owner busy with at work?"
"""Close enough to SECRET (0.50) and SHARED (0.42) for both to be injected where allowed."""
MEMORY_HEADING = "## What you remember that may matter here"
DOCUMENTS_HEADING = "## From your documents (cite them by name and page)"

ORCHARD_PAGES = [
    "The cider press is cleaned with hot water every Sunday after pressing.",
    "",
    "The beehives sit along the south fence; the keeper inspects them every April.",
]
BIKE_GUIDE = (
    "# Bicycle care\n\n## Brakes\n\nSqueeze the brake lever and check the pads.\n\n"
    "## Chain\n\nOil the chain every 300 kilometres.\n"
)


class Grader:
    """Answers the service's re-scoring requests to the fake, leaving replies to the queue:
    10 for a passage containing `favourite`, 0 for the others; not JSON when it is None."""

    def __init__(self) -> None:
        self.favourite: str | None = None

    def __call__(self, request: RecordedRequest) -> Reply | None:
        if not is_grading(request):
            return None
        if self.favourite is None:
            return text("These all look fine to me.")
        grades = [10 if self.favourite in p else 0 for p in graded_passages(request)]
        return text(json.dumps({"scores": grades}))


@pytest.fixture
def grader(fake_openai: FakeOpenAI) -> Iterator[Grader]:
    fake_openai.responder = grader = Grader()
    yield grader
    fake_openai.responder = None


def replies(fake: FakeOpenAI) -> list[RecordedRequest]:
    """The requests for agent replies, without the re-scoring ones."""
    return [r for r in fake.model_requests if not is_grading(r)]


def system_prompt(request: RecordedRequest) -> str:
    first = request.body["messages"][0]
    assert first["role"] == "system"
    content: str = first["content"]
    return content


def tool_result(room: Room, reply_id: str, tool: str) -> Any:
    for event in room.ws.seen:
        if event["type"] == "tool_result":
            data = event["data"]
            if (data["messageId"], data["toolName"]) == (reply_id, tool):
                return json.loads(data["result"])
    raise AssertionError(f"no result of {tool} in reply {reply_id}")


def remember(api: Api, agent_id: str, content: str, **fields: Any) -> dict[str, Any]:
    return api.ok("POST", f"/api/agents/{agent_id}/memories", json={"content": content, **fields})


def upload(api: Api, agent_id: str, name: str, data: bytes) -> dict[str, Any]:
    files = {"file": (name, data, "application/octet-stream")}
    body = api.ok("POST", "/api/rag/upload", files=files, data={"agentId": agent_id})
    return body


def ask(room: Room, content: str) -> dict[str, Any]:
    """Address the room's first agent and wait for its reply."""
    room.post(f"@{room.agents[0]['name']} {content}")
    return room.reply(timeout=30)


def test_the_agent_writes_and_searches_its_memory_with_tools(
    make_room: Any, owner: Api, fake_openai: FakeOpenAI
) -> None:
    room: Room = make_room({"tools": ["memory_write", "memory_search"]})
    agent = room.agents[0]["id"]
    write = tool_call("memory_write", {"content": CAT, "type": "semantic"})
    fake_openai.enqueue(tool_calls(write), text("Noted."))
    reply = ask(room, "remember that my cat is called Miso")
    written = tool_result(room, reply["data"]["id"], "memory_write")
    assert written["action"] == "inserted"
    memory = written["memory"]
    assert (memory["content"], memory["type"], memory["channelId"]) == (CAT, "semantic", room.id)
    said = next(m for m in room.history() if m["content"].endswith("my cat is called Miso"))
    assert memory["sourceMessageId"] == said["id"], "where the agent learned it"
    listed = owner.ok("GET", f"/api/agents/{agent}/memories")["memories"]
    assert [m["id"] for m in listed] == [memory["id"]]

    fake_openai.enqueue(tool_calls(write), text("I knew that already."))
    reply = ask(room, "my cat is called Miso, remember?")
    again = tool_result(room, reply["data"]["id"], "memory_write")
    assert again["action"] == "skipped" and again["duplicateOf"] == memory["id"]

    search = tool_call("memory_search", {"query": "What is the name of my pet?", "topK": 3})
    fake_openai.enqueue(tool_calls(search), text("Miso."))
    reply = ask(room, "what is my cat's name?")
    (found,) = tool_result(room, reply["data"]["id"], "memory_search")
    assert (found["id"], found["content"], found["type"]) == (memory["id"], CAT, "semantic")
    assert 0.3 < found["similarity"] <= 1
    sent = fake_openai.model_requests[-1].body["messages"][-1]
    assert sent["role"] == "tool" and json.loads(sent["content"]) == [found]


def test_relevant_memories_reach_the_system_prompt_when_auto_injection_is_on(
    make_room: Any, owner: Api, fake_openai: FakeOpenAI
) -> None:
    room: Room = make_room({})
    agent = room.agents[0]["id"]
    assert room.agents[0]["autoInjectMemory"] is True
    remember(owner, agent, CAT)
    remember(owner, agent, DEPLOYS, type="procedural")
    question = "What is my cat called?"
    similar = owner.ok("GET", f"/api/agents/{agent}/memories", params={"q": question})["memories"]
    expected = [m["content"] for m in similar if m["similarity"] >= 0.3]
    assert expected == [CAT]

    ask(room, question)
    system = system_prompt(replies(fake_openai)[-1])
    assert f"{MEMORY_HEADING}\n- (semantic) {CAT}" in system
    assert DEPLOYS not in system

    owner.ok("PUT", f"/api/agents/{agent}", json={"autoInjectMemory": False})
    ask(room, question)
    system = system_prompt(replies(fake_openai)[-1])
    assert MEMORY_HEADING not in system and CAT not in system


def test_the_top_passages_of_the_agents_documents_reach_its_system_prompt(
    make_room: Any, owner: Api, fake_openai: FakeOpenAI, grader: Grader
) -> None:
    """With their document names, pages and headings, in the order the model re-scored."""
    room: Room = make_room({})
    agent = room.agents[0]["id"]
    upload(owner, agent, "orchard.pdf", make_pdf(ORCHARD_PAGES))
    upload(owner, agent, "bikes.md", BIKE_GUIDE.encode())
    grader.favourite = "cider"
    ask(room, "When are the beehives inspected?")
    (grading,) = [r for r in fake_openai.model_requests if is_grading(r)]
    assert grading.body["model"] == "gpt-test"
    assert "When are the beehives inspected?" in grading.body["messages"][-1]["content"]
    (reply,) = replies(fake_openai)
    assert reply.index > grading.index
    system = system_prompt(reply)
    assert f"{DOCUMENTS_HEADING}\n[1] orchard.pdf, page 1\n{ORCHARD_PAGES[0]}" in system
    assert f"[2] orchard.pdf, page 3\n{ORCHARD_PAGES[2]}" in system
    assert "bikes.md, Bicycle care > Chain\nOil the chain every 300 kilometres." in system
    assert "[6]" not in system


def test_an_agent_without_documents_gets_no_passages_and_no_re_scoring(
    make_room: Any, fake_openai: FakeOpenAI
) -> None:
    room: Room = make_room({})
    ask(room, "When are the beehives inspected?")
    (reply,) = fake_openai.model_requests
    assert DOCUMENTS_HEADING not in system_prompt(reply)


def test_rag_query_is_a_tool_the_agent_calls(
    make_room: Any, owner: Api, fake_openai: FakeOpenAI, grader: Grader
) -> None:
    room: Room = make_room({"tools": ["rag_query"]})
    upload(owner, room.agents[0]["id"], "orchard.pdf", make_pdf(ORCHARD_PAGES))
    search = tool_call("rag_query", {"query": "beehive inspection", "topK": 1})
    fake_openai.enqueue(tool_calls(search), text("In April, says page 3."))
    reply = ask(room, "look up when the bees are checked")
    assert reply["data"]["content"] == "In April, says page 3."
    (found,) = tool_result(room, reply["data"]["id"], "rag_query")
    assert (found["documentName"], found["page"], found["headingPath"]) == ("orchard.pdf", 3, [])
    assert found["content"] == ORCHARD_PAGES[2] and found["score"] > 0
    gradings = [r for r in fake_openai.model_requests if is_grading(r)]
    assert len(gradings) == 2
    assert "Query: beehive inspection" in gradings[1].body["messages"][-1]["content"]
    sent = replies(fake_openai)[-1].body["messages"][-1]
    assert sent["role"] == "tool" and json.loads(sent["content"]) == [found]


def test_a_channel_with_a_guest_recalls_only_what_was_learned_in_it(
    server: Server, owner: Api, make_room: Any, fake_openai: FakeOpenAI
) -> None:
    """SPEC 8 item 4's privacy rule, for injection and for `memory_search`."""
    dm: Room = make_room({"tools": ["memory_write", "memory_search"]}, kind="dm")
    agent = dm.agents[0]
    with Guest(server, owner) as guest, Ws(server, owner.token) as ws:
        channel = new_channel(owner, agent_ids=[agent["id"]], member_ids=[guest.id])
        ws.subscribe(channel["id"])
        shared = Room(owner, channel, [agent], ws)

        fake_openai.enqueue(tool_calls(tool_call("memory_write", {"content": SECRET})), text("Ok"))
        ask(dm, "keep this between us: I am applying elsewhere")
        fake_openai.enqueue(tool_calls(tool_call("memory_write", {"content": SHARED})), text("Ok"))
        reply = ask(shared, "note that I am organising the summer party")
        assert tool_result(shared, reply["data"]["id"], "memory_write")["action"] == "inserted"
        learned = owner.ok("GET", f"/api/agents/{agent['id']}/memories")["memories"]
        assert {m["content"]: m["channelId"] for m in learned} == {
            SECRET: dm.id,
            SHARED: shared.id,
        }

        ask(shared, WORK_QUESTION)
        system = system_prompt(fake_openai.model_requests[-1])
        assert f"- (semantic) {SHARED}" in system and SECRET not in system
        search = tool_call("memory_search", {"query": WORK_QUESTION})
        fake_openai.enqueue(tool_calls(search), text("A party."))
        reply = ask(shared, "search your memory about my work")
        found = tool_result(shared, reply["data"]["id"], "memory_search")
        assert [m["content"] for m in found] == [SHARED]
        assert SECRET not in json.dumps(fake_openai.model_requests[-1].body)

    ask(dm, WORK_QUESTION)
    system = system_prompt(fake_openai.model_requests[-1])
    assert f"- (semantic) {SECRET}" in system and f"- (semantic) {SHARED}" in system
    fake_openai.enqueue(tool_calls(tool_call("memory_search", {"query": WORK_QUESTION})), text("."))
    reply = ask(dm, "search your memory about my work")
    found = tool_result(dm, reply["data"]["id"], "memory_search")
    assert [m["content"] for m in found] == [SECRET, SHARED]


def test_an_agent_still_answers_when_its_embedding_endpoint_fails(
    make_room: Any, owner: Api, fake_openai: FakeOpenAI
) -> None:
    """Recall improves a reply; an embedding endpoint that refuses must not prevent it."""
    room: Room = make_room({"tools": ["rag_query"]})
    agent = room.agents[0]["id"]
    remember(owner, agent, CAT)
    upload(owner, agent, "orchard.pdf", make_pdf(ORCHARD_PAGES))
    with FakeOpenAI(api_key="the-right-key") as refusing:
        provider = {"type": "openai", "baseUrl": refusing.base_url, "apiKey": "a-wrong-key"}
        remote = {"provider": "refusing", "model": "fake-embedding"}
        owner.ok("PUT", "/api/settings", json={"providers": {"refusing": provider}})
        owner.ok("PUT", "/api/settings", json={"embedding": remote})
        try:
            search = tool_call("rag_query", {"query": "beehive inspection"})
            fake_openai.enqueue(tool_calls(search), text("I cannot search right now."))
            reply = ask(room, "What is my cat called, and when are the bees checked?")
        finally:
            local = {"provider": "local", "model": "all-MiniLM-L6-v2"}
            owner.ok("PUT", "/api/settings", json={"embedding": local})
            owner.ok("PUT", "/api/settings", json={"providers": {"refusing": None}})
        assert {r.path for r in refusing.requests} == {"/v1/embeddings"}
    assert reply["data"]["content"] == "I cannot search right now."
    system = system_prompt(fake_openai.model_requests[0])
    assert MEMORY_HEADING not in system and DOCUMENTS_HEADING not in system
    result = next(
        e["data"]["result"]
        for e in room.ws.seen
        if e["type"] == "tool_result" and e["data"]["messageId"] == reply["data"]["id"]
    )
    assert "refusing" in result
