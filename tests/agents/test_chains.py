"""Collaboration chains: steps in order, each building on the last, steered by people."""

from __future__ import annotations

import time
from typing import Any

from tests.agents.conftest import Room, provider_settings
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.script import http_error, stall, text
from tests.support import Api, Server, Ws


def statuses(ws: Ws, chain_id: str | None = None) -> list[tuple[str, int, int, str]]:
    return [
        (e["data"]["status"], e["data"]["step"], e["data"]["totalSteps"], e["data"]["currentAgent"])
        for e in ws.seen
        if e["type"] == "collab_status" and chain_id in (None, e["data"]["chainId"])
    ]


def wait_status(ws: Ws, status: str, timeout: float = 20) -> dict[str, Any]:
    return ws.expect("collab_status", timeout, status=status)


def system_prompt(request: Any) -> str:
    return str(request.body["messages"][0]["content"])


def test_a_chain_of_three_reports_each_step_and_builds_on_the_last(
    make_room: Any, fake_openai: FakeOpenAI
) -> None:
    room: Room = make_room({"name": "Ann"}, {"name": "Ben"}, {"name": "Cat"})
    ann, ben, cat = (a["id"] for a in room.agents)
    fake_openai.enqueue(text("Ann's draft."), text("Ben's review."), text("Cat's summary."))
    room.post("@Ben @Ann @Cat plan a trip")
    done = wait_status(room.ws, "completed")
    chain_id = done["data"]["chainId"]
    assert statuses(room.ws, chain_id) == [
        ("running", 1, 3, ben),
        ("running", 2, 3, ann),
        ("running", 3, 3, cat),
        ("completed", 3, 3, cat),
    ]
    first, second, third = fake_openai.model_requests[-3:]
    assert system_prompt(first).startswith("You are Ben.")
    assert "Output of step 1" not in system_prompt(first)
    assert "### Output of step 1, by Ben\nAnn's draft." in system_prompt(second)
    assert "### Output of step 2, by Ann\nBen's review." in system_prompt(third)
    for request in (first, second, third):
        assert request.body["messages"][-1]["content"] == "Owner: @Ben @Ann @Cat plan a trip"
    chain = room.api.ok("GET", f"/api/chains/{chain_id}")["chain"]
    assert chain["status"] == "completed" and chain["totalSteps"] == 3
    assert [s["agentId"] for s in chain["steps"]] == [ben, ann, cat]
    assert all(s["status"] == "completed" and s["messageId"] for s in chain["steps"])
    replies = {m["id"]: m for m in room.history() if m["agentId"]}
    step2 = replies[chain["steps"][1]["messageId"]]
    assert step2["content"] == "Ben's review."
    assert step2["metadata"]["chainId"] == chain_id and step2["metadata"]["chainStep"] == 2
    listed = room.api.ok("GET", "/api/chains", params={"channelId": room.id})["chains"]
    assert [c["id"] for c in listed] == [chain_id]


def test_pause_lets_the_step_finish_and_resume_goes_on(
    make_room: Any, fake_openai: FakeOpenAI
) -> None:
    room: Room = make_room({"name": "Pa"}, {"name": "Pb"})
    fake_openai.enqueue(stall(text("one", " two"), after=1), text("second step"))
    room.post("@Pa @Pb go")
    chain_id = wait_status(room.ws, "running")["data"]["chainId"]
    room.ws.expect("stream_chunk")
    paused = room.api.ok("POST", f"/api/chains/{chain_id}/pause")["chain"]
    assert paused["requested"] == "pause"
    fake_openai.release()
    event = wait_status(room.ws, "paused")
    assert (event["data"]["step"], event["data"]["currentAgent"]) == (2, room.agents[1]["id"])
    assert room.api.ok("GET", f"/api/chains/{chain_id}")["chain"]["status"] == "paused"
    time.sleep(0.3)
    assert len(fake_openai.model_requests) == 1
    assert room.api.post(f"/api/chains/{chain_id}/pause").status_code == 409
    room.api.ok("POST", f"/api/chains/{chain_id}/resume")
    wait_status(room.ws, "completed")
    assert statuses(room.ws, chain_id)[-3:] == [
        ("paused", 2, 2, room.agents[1]["id"]),
        ("running", 2, 2, room.agents[1]["id"]),
        ("completed", 2, 2, room.agents[1]["id"]),
    ]


def test_cancel_stops_after_the_current_step(make_room: Any, fake_openai: FakeOpenAI) -> None:
    room: Room = make_room({"name": "Ca"}, {"name": "Cb"})
    fake_openai.enqueue(stall(text("only", " me"), after=1))
    room.post("@Ca @Cb go")
    chain_id = wait_status(room.ws, "running")["data"]["chainId"]
    room.ws.expect("stream_chunk")
    room.api.ok("POST", f"/api/chains/{chain_id}/cancel")
    fake_openai.release()
    event = wait_status(room.ws, "error")
    assert event["data"]["reason"] == "cancelled"
    chain = room.api.ok("GET", f"/api/chains/{chain_id}")["chain"]
    assert [s["status"] for s in chain["steps"]] == ["completed", "pending"]
    assert len(fake_openai.model_requests) == 1
    assert room.api.post(f"/api/chains/{chain_id}/resume").status_code == 409


def test_people_starting_and_steering_a_chain_are_audited(
    owner: Api, make_room: Any, fake_openai: FakeOpenAI
) -> None:
    """docs/SPEC.md section 14: `chain.create`, then each steer as it is asked, by the person
    (here the owner), with the channel; never the message that started it."""
    room: Room = make_room({"name": "Aa"}, {"name": "Ab"}, {"name": "Ac"})
    fake_openai.enqueue(stall(text("one", " two"), after=1), stall(text("three"), after=1))
    agent_ids = [a["id"] for a in room.agents]
    body = {"channelId": room.id, "agentIds": agent_ids, "content": "Plan the secret party."}
    chain_id = room.api.ok("POST", "/api/chains", json=body)["chain"]["id"]
    room.ws.expect("stream_chunk")
    room.api.ok("POST", f"/api/chains/{chain_id}/pause")
    fake_openai.release()
    wait_status(room.ws, "paused")
    room.api.ok("POST", f"/api/chains/{chain_id}/resume")
    room.ws.expect("stream_chunk")
    room.api.ok("POST", f"/api/chains/{chain_id}/cancel")
    fake_openai.release()
    wait_status(room.ws, "error")
    assert room.api.post(f"/api/chains/{chain_id}/cancel").status_code == 409
    me = owner.ok("GET", "/api/me")["user"]["id"]
    found = owner.ok("GET", "/api/audit", params={"action": "chain.", "limit": 200})["entries"]
    rows = [(e["action"], e["actorId"], e["changes"]) for e in found if e["target"] == chain_id]
    assert rows == [
        ("chain.cancel", me, {"channelId": room.id}),
        ("chain.resume", me, {"channelId": room.id}),
        ("chain.pause", me, {"channelId": room.id}),
        ("chain.create", me, {"channelId": room.id, "agentIds": agent_ids}),
    ]
    assert "secret party" not in str(found)


def test_a_failing_step_ends_the_chain_with_its_reason(
    make_room: Any, fake_openai: FakeOpenAI
) -> None:
    room: Room = make_room({"name": "Fa"}, {"name": "Fb"}, {"name": "Fc"})
    fake_openai.enqueue(text("fine"), http_error(503, "model overloaded"))
    room.post("@Fa @Fb @Fc go")
    event = wait_status(room.ws, "error")
    reason = event["data"]["reason"]
    assert "failed (HTTP 503)" in reason and "model overloaded" not in reason, "no vendor words"
    assert (event["data"]["step"], event["data"]["currentAgent"]) == (2, room.agents[1]["id"])
    time.sleep(0.3)
    assert len(fake_openai.model_requests) == 2


def test_an_agent_hands_off_by_mentioning_another_member(
    make_room: Any, fake_openai: FakeOpenAI
) -> None:
    room: Room = make_room({"name": "Ha"}, {"name": "Hb"})
    fake_openai.enqueue(text("Over to you, @Hb."), text("Thanks @Ha, done."))
    room.post("@Ha start")
    done = wait_status(room.ws, "completed")
    assert statuses(room.ws, done["data"]["chainId"]) == [
        ("running", 2, 2, room.agents[1]["id"]),
        ("completed", 2, 2, room.agents[1]["id"]),
    ]
    assert "### Output of step 1, by Ha\nOver to you, @Hb." in system_prompt(
        fake_openai.model_requests[-1]
    )
    time.sleep(0.3)
    assert len(fake_openai.model_requests) == 2, "no hand-off back to an agent already in it"


def test_hand_offs_stop_at_the_limit(owner: Api, make_room: Any, fake_openai: FakeOpenAI) -> None:
    owner.ok("PUT", "/api/settings", json={"agents": {"maxHandoffs": 1}})
    try:
        room: Room = make_room({"name": "La"}, {"name": "Lb"}, {"name": "Lc"})
        fake_openai.enqueue(text("ask @Lb"), text("ask @Lc"))
        room.post("@La start")
        done = wait_status(room.ws, "completed")
        assert done["data"]["totalSteps"] == 2
        time.sleep(0.3)
        assert len(fake_openai.model_requests) == 2
    finally:
        owner.ok("PUT", "/api/settings", json={"agents": {"maxHandoffs": 4}})


def test_a_newer_human_message_supersedes_a_waiting_hand_off(
    make_room: Any, fake_openai: FakeOpenAI
) -> None:
    room: Room = make_room({"name": "Sa"}, {"name": "Sb"})
    fake_openai.enqueue(stall(text("let me think,", " then ask @Sb"), after=1), text("hello"))
    room.post("@Sa start")
    room.ws.expect("stream_chunk")
    room.post("actually, never mind")
    fake_openai.release()
    event = wait_status(room.ws, "completed")
    assert "superseded" in event["data"]["reason"]
    time.sleep(0.3)
    assert len(fake_openai.model_requests) == 1


def test_post_chains_starts_an_explicit_chain(make_room: Any, fake_openai: FakeOpenAI) -> None:
    room: Room = make_room({"name": "Ea"}, {"name": "Eb"})
    ea, eb = (a["id"] for a in room.agents)
    fake_openai.enqueue(text("b first"), text("a second"))
    chain = room.api.ok(
        "POST", "/api/chains", json={"channelId": room.id, "agentIds": [eb, ea], "content": "do it"}
    )["chain"]
    assert chain["status"] == "running" and chain["totalSteps"] == 2
    trigger = room.ws.expect("message", id=chain["triggerMessageId"])
    assert trigger["data"]["content"] == "do it" and trigger["data"]["userId"]
    wait_status(room.ws, "completed")
    assert [r.body["messages"][0]["content"].split(".")[0] for r in fake_openai.model_requests] == [
        "You are Eb",
        "You are Ea",
    ]
    bad = room.api.post(
        "/api/chains", json={"channelId": room.id, "agentIds": ["agent_nope"], "content": "x"}
    )
    assert bad.status_code == 400 and "agent_nope" in bad.json()["error"]
    assert room.api.get("/api/chains/chain_nope").status_code == 404
    assert room.api.get("/api/chains").status_code == 400


def test_a_chain_running_at_a_stop_is_paused_after_the_next_start(
    fresh_server: Server, fake_openai: FakeOpenAI, fake_anthropic: FakeAnthropic
) -> None:
    fresh_server.start()
    api = fresh_server.login()
    api.ok("PUT", "/api/settings", json=provider_settings(fake_openai, fake_anthropic))
    ids = [
        api.ok("POST", "/api/agents", json={"name": n, "model": "oai/m"})["agent"]["id"]
        for n in ("Ra", "Rb")
    ]
    channel = api.ok("POST", "/api/channels", json={"name": "r", "type": "group", "agentIds": ids})[
        "channel"
    ]
    fake_openai.enqueue(stall(text("cut", " off"), after=1))
    with Ws(fresh_server, api.token) as ws:
        ws.subscribe(channel["id"])
        api.ok("POST", "/api/messages", json={"channelId": channel["id"], "content": "@Ra @Rb go"})
        chain_id = ws.expect("collab_status")["data"]["chainId"]
        ws.expect("stream_chunk")
    api.close()
    fresh_server.kill()
    fake_openai.release()
    fake_openai.enqueue(text("Rb carries on"))
    fresh_server.start()
    api = fresh_server.login()
    chain = api.ok("GET", f"/api/chains/{chain_id}")["chain"]
    assert chain["status"] == "paused"
    assert [s["status"] for s in chain["steps"]] == ["interrupted", "pending"]
    with Ws(fresh_server, api.token) as ws:
        ws.subscribe(channel["id"])
        api.ok("POST", f"/api/chains/{chain_id}/resume")
        assert wait_status(ws, "completed")["data"]["currentAgent"] == ids[1]
    api.close()


def test_a_single_mention_hands_off_no_further_than_the_limit(
    owner: Api, make_room: Any, fake_openai: FakeOpenAI
) -> None:
    owner.ok("PUT", "/api/settings", json={"agents": {"maxHandoffs": 1}})
    try:
        room: Room = make_room({"name": "Ma"}, {"name": "Mb"}, {"name": "Mc"}, {"name": "Md"})
        fake_openai.enqueue(text("@Mb @Mc @Md, all of you"), text("Mb here"))
        room.post("@Ma start")
        done = wait_status(room.ws, "completed")
        assert (done["data"]["totalSteps"], done["data"]["currentAgent"]) == (
            2,
            room.agents[1]["id"],
        )
        time.sleep(0.3)
        assert len(fake_openai.model_requests) == 2
    finally:
        owner.ok("PUT", "/api/settings", json={"agents": {"maxHandoffs": 4}})


def test_resuming_a_chain_whose_last_step_was_cut_off_completes_it(
    fresh_server: Server, fake_openai: FakeOpenAI, fake_anthropic: FakeAnthropic
) -> None:
    fresh_server.start()
    api = fresh_server.login()
    api.ok("PUT", "/api/settings", json=provider_settings(fake_openai, fake_anthropic))
    agent = api.ok("POST", "/api/agents", json={"name": "Solo", "model": "oai/m"})["agent"]
    channel = api.ok(
        "POST", "/api/channels", json={"name": "s", "type": "group", "agentIds": [agent["id"]]}
    )["channel"]
    fake_openai.enqueue(stall(text("cut", " off"), after=1))
    with Ws(fresh_server, api.token) as ws:
        ws.subscribe(channel["id"])
        chain = api.ok(
            "POST",
            "/api/chains",
            json={"channelId": channel["id"], "agentIds": [agent["id"]], "content": "go"},
        )["chain"]
        ws.expect("stream_chunk")
    api.close()
    fresh_server.kill()
    fake_openai.release()
    fresh_server.start()
    api = fresh_server.login()
    with Ws(fresh_server, api.token) as ws:
        ws.subscribe(channel["id"])
        api.ok("POST", f"/api/chains/{chain['id']}/resume")
        assert wait_status(ws, "completed")["data"]["chainId"] == chain["id"]
    assert api.ok("GET", f"/api/chains/{chain['id']}")["chain"]["status"] == "completed"
    api.close()
