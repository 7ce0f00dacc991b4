"""What a guest can reach through an agent: only documents the owner shared with members, only
the agents of the channel, and schedules of its own within its own limits.

Each test runs a real server whose agents talk to the fake model; the fake's requests show what
the agent was told, and the channel's events what it answered."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from tests.agents.conftest import Room
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.script import Reply, stall, text, tool_call, tool_calls
from tests.fakes.server import RecordedRequest
from tests.knowledge.helpers import is_grading
from tests.support import Api, Guest, Server, Ws, new_channel, sql, unique, wait_until

PRIVATE = "The owner's salary is ninety thousand euros a year, paid monthly."
SHARED = "The office opens at nine o'clock on weekdays; the salary desk is on floor two."
QUESTION = "What do you know about salary and the office?"
DOCUMENTS_HEADING = "## From your documents (cite them by name and page)"


@pytest.fixture
def no_grades(fake_openai: FakeOpenAI) -> Iterator[None]:
    """The service's re-scoring requests get an answer that is not JSON (so passages keep
    their fused order) and leave the queued replies to the agents."""

    def responder(request: RecordedRequest) -> Reply | None:
        return text("no grades") if is_grading(request) else None

    fake_openai.responder = responder
    yield
    fake_openai.responder = None


def upload(api: Api, agent_id: str, name: str, content: str, **form: str) -> httpx.Response:
    files = {"file": (name, content.encode(), "text/plain")}
    return api.post("/api/rag/upload", files=files, data={"agentId": agent_id, **form})


def uploaded(api: Api, agent_id: str, name: str, content: str, **form: str) -> dict[str, Any]:
    response = upload(api, agent_id, name, content, **form)
    assert response.status_code == 200, response.text
    document: dict[str, Any] = response.json()["document"]
    return document


def replies(fake: FakeOpenAI) -> list[RecordedRequest]:
    return [r for r in fake.model_requests if not is_grading(r)]


def ask(room: Room, content: str, api: Api | None = None) -> dict[str, Any]:
    body = {"channelId": room.id, "content": f"@{room.agents[0]['name']} {content}"}
    (api or room.api).ok("POST", "/api/messages", json=body)
    return room.reply(timeout=30)


def tool_result(room: Room, reply_id: str, tool: str) -> str:
    for event in room.ws.seen:
        data = event.get("data", {})
        if event["type"] == "tool_result" and (data["messageId"], data["toolName"]) == (
            reply_id,
            tool,
        ):
            result: str = data["result"]
            return result
    raise AssertionError(f"no result of {tool} in reply {reply_id}")


def guest_room(server: Server, owner: Api, guest: Guest, agents: list[dict[str, Any]]) -> Room:
    channel = new_channel(owner, agent_ids=[a["id"] for a in agents], member_ids=[guest.id])
    ws = Ws(server, owner.token)
    ws.subscribe(channel["id"])
    return Room(owner, channel, agents, ws)


def test_a_channel_with_a_guest_draws_only_on_documents_shared_with_members(
    server: Server, owner: Api, make_room: Any, fake_openai: FakeOpenAI, no_grades: None
) -> None:
    own: Room = make_room({"tools": ["rag_query"]})
    agent = own.agents[0]
    private = uploaded(owner, agent["id"], "pay.txt", PRIVATE)
    shared = uploaded(owner, agent["id"], "office.txt", SHARED, visibility="members")
    assert (private["visibility"], shared["visibility"]) == ("owner", "members")
    listed = owner.ok("GET", "/api/rag/documents", params={"agentId": agent["id"]})["documents"]
    assert {d["name"]: d["visibility"] for d in listed} == {
        "pay.txt": "owner",
        "office.txt": "members",
    }
    search = tool_call("rag_query", {"query": QUESTION, "topK": 5})

    with Guest(server, owner) as guest:
        room = guest_room(server, owner, guest, [agent])
        with room.ws:
            ask(room, QUESTION, guest.api)
            system = replies(fake_openai)[-1].body["messages"][0]["content"]
            assert DOCUMENTS_HEADING in system and SHARED in system
            assert PRIVATE not in system and "pay.txt" not in system

            fake_openai.enqueue(tool_calls(search), text("Nine o'clock."))
            reply = ask(room, "search your documents", guest.api)
            found = json.loads(tool_result(room, reply["data"]["id"], "rag_query"))
            assert [r["content"] for r in found] == [SHARED]
            assert PRIVATE not in json.dumps([r.body for r in fake_openai.model_requests])
            assert all(PRIVATE not in m["content"] for m in room.history())

            changed = owner.ok(
                "PUT", f"/api/rag/documents/{private['id']}", json={"visibility": "members"}
            )["document"]
            assert changed == {**private, "visibility": "members"}
            fake_openai.enqueue(tool_calls(search), text("Both."))
            reply = ask(room, "search again", guest.api)
            found = json.loads(tool_result(room, reply["data"]["id"], "rag_query"))
            assert {r["content"] for r in found} == {PRIVATE, SHARED}

            owner.ok("PUT", f"/api/rag/documents/{private['id']}", json={"visibility": "owner"})
            fake_openai.reset()
            fake_openai.responder = lambda r: text("no grades") if is_grading(r) else None
            fake_openai.enqueue(tool_calls(search), text("Only the office."))
            reply = ask(room, "and once more", guest.api)
            found = json.loads(tool_result(room, reply["data"]["id"], "rag_query"))
            assert [r["content"] for r in found] == [SHARED]
            system = replies(fake_openai)[0].body["messages"][0]["content"]
            assert SHARED in system and PRIVATE not in system

    fake_openai.enqueue(tool_calls(search), text("Both, here."))
    reply = ask(own, QUESTION)
    system = replies(fake_openai)[-2].body["messages"][0]["content"]
    assert PRIVATE in system and SHARED in system, "the owner's own channel sees everything"
    found = json.loads(tool_result(own, reply["data"]["id"], "rag_query"))
    assert {r["content"] for r in found} == {PRIVATE, SHARED}


def test_a_documents_visibility_is_checked_and_changed_only_by_the_owner(
    server: Server, owner: Api, make_room: Any
) -> None:
    agent = make_room({}).agents[0]
    for bad in ("everyone", "", "OWNER"):
        response = upload(owner, agent["id"], "x.txt", f"Some text {bad}.", visibility=bad)
        assert response.status_code == 400, response.text
        assert "visibility" in response.json()["error"]
    assert owner.ok("GET", "/api/rag/documents", params={"agentId": agent["id"]}) == {
        "documents": []
    }
    document = uploaded(owner, agent["id"], "x.txt", "Some text.")
    path = f"/api/rag/documents/{document['id']}"
    for body in (
        {"visibility": "public"},
        {"visibility": None},
        {},
        {"visibility": "members", "x": 1},
    ):
        response = owner.put(path, json=body)
        assert response.status_code == 400, (body, response.text)
        assert set(response.json()) - {"field"} == {"error"}
    response = owner.put("/api/rag/documents/doc_unknown", json={"visibility": "members"})
    assert response.status_code == 404 and set(response.json()) - {"field"} == {"error"}
    with Guest(server, owner) as guest:
        response = guest.api.put(path, json={"visibility": "members"})
        assert response.status_code == 403
    listed = owner.ok("GET", "/api/rag/documents", params={"agentId": agent["id"]})["documents"]
    assert [d["visibility"] for d in listed] == ["owner"]


def test_call_agent_reaches_only_agents_of_the_channel_and_hides_the_others(
    server: Server, owner: Api, make_room: Any, fake_openai: FakeOpenAI
) -> None:
    outsider = make_room({"name": unique("Outsider")}).agents[0]
    with Guest(server, owner) as guest:
        asker = owner.ok(
            "POST",
            "/api/agents",
            json={"name": unique("Asker"), "model": "oai/gpt-test", "tools": ["call_agent"]},
        )["agent"]
        room = guest_room(server, owner, guest, [asker])
        with room.ws:
            for ref in (outsider["name"], outsider["id"], "Nobody At All"):
                call = tool_call("call_agent", {"agent": ref, "message": "what do you know?"})
                fake_openai.enqueue(tool_calls(call), text("I could not ask."))
                reply = ask(room, "ask around", guest.api)
                assert reply["data"]["content"] == "I could not ask."
                assert tool_result(room, reply["data"]["id"], "call_agent") == (
                    f"Error: There is no agent '{ref}' in this channel; "
                    "only its agents can be called."
                )
            assert all(
                e["data"].get("agentId") in (None, asker["id"])
                for e in room.ws.seen
                if e["type"] in ("stream_start", "message")
            ), "the outsider never answered here"
            assert len(replies(fake_openai)) == 6


def test_a_chain_step_of_an_agent_removed_from_the_channel_is_skipped(
    owner: Api, make_room: Any, fake_openai: FakeOpenAI
) -> None:
    room: Room = make_room({"name": unique("Pa")}, {"name": unique("Pb")})
    first, second = room.agents
    fake_openai.enqueue(stall(text("one", " two"), after=1), text("second step"))
    room.post(f"@{first['name']} @{second['name']} go")
    chain_id = room.ws.expect("collab_status", status="running")["data"]["chainId"]
    room.ws.expect("stream_chunk")
    owner.ok("POST", f"/api/chains/{chain_id}/pause")
    fake_openai.release()
    room.ws.expect("collab_status", 20, status="paused")
    owner.ok("PUT", f"/api/channels/{room.id}", json={"agentIds": [first["id"]]})
    owner.ok("POST", f"/api/chains/{chain_id}/resume")
    room.ws.expect("collab_status", 20, status="completed")
    chain = owner.ok("GET", f"/api/chains/{chain_id}")["chain"]
    assert [(s["agentId"], s["status"]) for s in chain["steps"]] == [
        (first["id"], "completed"),
        (second["id"], "skipped"),
    ]
    assert len(fake_openai.model_requests) == 1
    assert not [m for m in room.history() if m["agentId"] == second["id"]]


NEVER_SOON = "0 0 1 1 *"
"""Midnight on New Year's Day: a cron schedule that will not come due during a test."""


def schedule_results(room: Room, reply: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        json.loads(e["data"]["result"]) if e["data"]["result"].startswith("{") else e["data"]
        for e in room.ws.seen
        if e["type"] == "tool_result" and e["data"]["messageId"] == reply["data"]["id"]
    ]


def create(n: int, prompt: str = "Year report") -> Reply:
    return tool_calls(
        *(
            tool_call(
                "manage_schedule",
                {"action": "create", "schedule": NEVER_SOON, "prompt": f"{prompt} {i}"},
            )
            for i in range(n)
        )
    )


def test_a_guests_schedules_are_its_own_limited_and_deleted_with_it(
    server: Server, owner: Api, make_room: Any, fake_openai: FakeOpenAI
) -> None:
    own: Room = make_room({"tools": ["manage_schedule", "call_agent"]})
    agent = own.agents[0]
    helper = owner.ok(
        "POST",
        "/api/agents",
        json={"name": unique("Helper"), "model": "oai/gpt-test", "tools": ["manage_schedule"]},
    )["agent"]
    owner_id = owner.ok("GET", "/api/me")["user"]["id"]
    for i in range(48):
        sql(
            server,
            "INSERT INTO schedules VALUES (?, ?, ?, ?, ?, NULL, 'filler', TRUE, "
            "'2999-01-01 00:00:00.000000', NULL, '2024-05-01 12:00:00.000000')",
            f"sched_filler{i:02d}{unique()}",
            agent["id"],
            own.id,
            owner_id,
            NEVER_SOON,
        )
    with Guest(server, owner) as guest:
        room = guest_room(server, owner, guest, [agent, helper])
        with room.ws:
            fake_openai.enqueue(create(4), text("Four."))
            results = schedule_results(room, ask(room, "schedule four things", guest.api))
            assert [r["created"]["createdBy"] for r in results] == [guest.id] * 4

            call = tool_call("call_agent", {"agent": helper["name"], "message": "one more"})
            fake_openai.enqueue(tool_calls(call), create(2, "Helper"), text("Done."), text("."))
            ask(room, "ask the helper to schedule two", guest.api)
            helped = [
                r
                for e in room.ws.seen
                if e["type"] == "tool_result" and e["data"]["toolName"] == "manage_schedule"
                for r in [e["data"]["result"]]
            ][-2:]
            assert sum(r.startswith("{") for r in helped) == 1, "the fifth is the guest's too"
            refused = next(r for r in helped if not r.startswith("{"))
            assert refused == (
                f"Error: {guest.user['name']} already has 5 active schedules, the most a guest "
                "may have; delete one first."
            )

        mine = [s for s in listed(owner) if s["createdBy"] == guest.id]
        assert len(mine) == 5 and {s["agentId"] for s in mine} == {agent["id"], helper["id"]}
        fake_openai.enqueue(create(3, "Owner's"), text("Some."))
        reply = ask(own, "schedule three of mine")
        outcomes = [r for r in schedule_results(own, reply)]
        assert [("created" in r) for r in outcomes] == [True, True, False], (
            "the guest's five do not count against the agent's 50"
        )
        owner.ok("DELETE", f"/api/guests/{guest.id}")
    assert not [s for s in listed(owner) if s["createdBy"] == guest.id]
    assert len([s for s in listed(owner) if s["agentId"] == agent["id"]]) == 50


def listed(api: Api) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = api.ok("GET", "/api/schedules")["schedules"]
    return found


def test_a_guests_schedule_runs_on_the_guests_message_budget(
    server: Server, owner: Api, make_room: Any, fake_openai: FakeOpenAI
) -> None:
    agent = make_room({"tools": ["manage_schedule"]}).agents[0]
    limits = owner.ok("GET", "/api/settings")["settings"]["limits"]
    with Guest(server, owner) as guest:
        room = guest_room(server, owner, guest, [agent])
        try:
            owner.ok(
                "PUT", "/api/settings", json={"limits": {"messagesPerMinute": 1, "messageBurst": 1}}
            )
            at = (datetime.now(UTC) + timedelta(seconds=2)).isoformat()
            made = tool_call("manage_schedule", {"action": "create", "at": at, "prompt": "Ping"})
            fake_openai.enqueue(tool_calls(made), text("Will do."))
            with room.ws:
                (created,) = schedule_results(room, ask(room, "remind me", guest.api))
            schedule_id = created["created"]["id"]
            wait_until(
                lambda: bool(
                    sql(server, "SELECT 1 FROM schedule_runs WHERE schedule_id = ?", schedule_id)
                ),
                timeout=15,
                what="the run",
            )
        finally:
            owner.ok("PUT", "/api/settings", json={"limits": limits})
        assert sql(
            server, "SELECT status, reason FROM schedule_runs WHERE schedule_id = ?", schedule_id
        ) == [("skipped", "rate_limited")]
        assert not [m for m in room.history() if m["metadata"].get("scheduleId") == schedule_id]


def test_in_a_guest_channel_an_agent_cannot_delete_its_schedules_of_other_channels(
    server: Server, owner: Api, make_room: Any, fake_openai: FakeOpenAI
) -> None:
    own: Room = make_room({"tools": ["manage_schedule"]})
    agent = own.agents[0]
    fake_openai.enqueue(create(1, "Private"), text("Made."))
    (made,) = schedule_results(own, ask(own, "schedule my private report"))
    schedule_id = made["created"]["id"]
    with Guest(server, owner) as guest:
        room = guest_room(server, owner, guest, [agent])
        with room.ws:
            delete = tool_call("manage_schedule", {"action": "delete", "id": schedule_id})
            fake_openai.enqueue(tool_calls(delete), text("Could not."))
            reply = ask(room, f"delete schedule {schedule_id}", guest.api)
            assert tool_result(room, reply["data"]["id"], "manage_schedule") == (
                f"Error: You have no schedule with the id '{schedule_id}'."
            )
    assert schedule_id in [s["id"] for s in listed(owner)]
