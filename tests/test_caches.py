"""Who the caller is and what they may see is answered from memory; every change that bears on
it takes effect on the very next request and socket event.

Each test first warms the caches (the same person asks about the same channel over HTTP and
over a socket), then makes the change through the API, then looks right away.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import Api, Guest, Server, Ws, history, new_channel, post, unique


def _warm(api: Api, channel_id: str) -> None:
    api.ok("GET", "/api/me")
    post(api, channel_id, "warming up")
    history(api, channel_id)


def _echo_agent(owner: Api) -> dict[str, Any]:
    agent: dict[str, Any] = owner.ok(
        "POST", "/api/agents", json={"name": unique("Echo"), "model": "builtin/echo"}
    )["agent"]
    return agent


def _nothing_more(ws: Ws, kind: str) -> None:
    """Everything the server sent before a pong has arrived: no event of `kind` among it."""
    ws.send({"type": "ping"})
    ws.expect("pong")
    assert [e for e in ws.seen if e["type"] == kind] == []


def _replies_from(owner: Api, channel_id: str) -> set[str]:
    return {m["agentId"] for m in history(owner, channel_id, limit=200) if m["agentId"]}


# -- sessions ---------------------------------------------------------------------------------


def test_a_session_logged_out_elsewhere_is_refused_on_its_next_request_and_socket(
    server: Server, owner: Api
) -> None:
    channel = new_channel(owner)["id"]
    with server.login() as here, server.client() as elsewhere:
        elsewhere.cookies.set("session", here.token)
        _warm(elsewhere, channel)
        with Ws(server, here.token) as ws:
            ws.subscribe(channel)
            here.ok("POST", "/api/logout")
            assert elsewhere.get("/api/me").status_code == 401
            assert (
                elsewhere.post(
                    "/api/messages", json={"channelId": channel, "content": "still here?"}
                ).status_code
                == 401
            )
            assert ws.expect_close() == 4401


def test_logging_out_refuses_the_cookie_at_once_on_http_and_on_a_new_socket(
    server: Server, owner: Api
) -> None:
    channel = new_channel(owner)["id"]
    with server.login() as api:
        token = api.token
        _warm(api, channel)
        with Ws(server, token) as ws:
            ws.subscribe(channel)
        api.ok("POST", "/api/logout")
        api.cookies.set("session", token)
        assert api.get("/api/me").status_code == 401
        assert api.get("/api/messages", params={"channelId": channel}).status_code == 401
        with Ws(server) as ws:
            ws.send({"type": "auth", "token": token})
            assert ws.expect("error")["data"]["code"] == "unauthenticated"
            assert ws.expect_close() == 4401


def test_a_deleted_guest_is_refused_at_once_and_leaves_the_channel_members(
    server: Server, owner: Api
) -> None:
    with Guest(server, owner) as guest:
        channel = new_channel(owner, member_ids=[guest.id])["id"]
        _warm(guest.api, channel)
        with Ws(server, guest.api.token) as ws:
            ws.subscribe(channel)
            owner.ok("DELETE", f"/api/guests/{guest.id}")
            assert guest.api.get("/api/me").status_code == 401
            assert guest.api.get("/api/messages", params={"channelId": channel}).status_code == 401
            assert ws.expect_close() == 4401
        members = owner.ok("GET", f"/api/channels/{channel}")["channel"]["memberIds"]
        assert guest.id not in members


# -- channels ---------------------------------------------------------------------------------


def test_a_guest_removed_from_a_channel_loses_it_on_the_next_request_and_event(
    server: Server, owner: Api
) -> None:
    with Guest(server, owner) as guest:
        channel = new_channel(owner, member_ids=[guest.id])["id"]
        _warm(guest.api, channel)
        with Ws(server, guest.api.token) as ws, Ws(server, owner.token) as watcher:
            ws.subscribe(channel)
            watcher.subscribe(channel)
            owner.ok("PUT", f"/api/channels/{channel}", json={"memberIds": []})
            refused = guest.api.post(
                "/api/messages", json={"channelId": channel, "content": "let me in"}
            )
            assert refused.status_code == 404
            assert guest.api.get("/api/messages", params={"channelId": channel}).status_code == 404
            assert guest.api.get(f"/api/channels/{channel}").status_code == 404
            sent = post(owner, channel, "only for members")
            watcher.expect("message", id=sent)
            _nothing_more(ws, "message")
            ws.send({"type": "subscribe", "channelId": channel})
            assert ws.expect("error")["data"]["code"] == "not_found"


def test_a_guest_added_to_a_channel_may_use_it_on_the_next_request(
    server: Server, owner: Api
) -> None:
    with Guest(server, owner) as guest:
        channel = new_channel(owner)["id"]
        assert guest.api.get("/api/messages", params={"channelId": channel}).status_code == 404
        owner.ok("POST", f"/api/channels/{channel}/members", json={"userIds": [guest.id]})
        post(guest.api, channel, "thanks for having me")
        with Ws(server, guest.api.token) as ws:
            ws.subscribe(channel)


def test_an_agent_removed_from_a_channel_is_not_addressed_on_the_next_post(
    server: Server, owner: Api
) -> None:
    kept, removed = _echo_agent(owner), _echo_agent(owner)
    channel = new_channel(owner, agent_ids=[kept["id"], removed["id"]])["id"]
    with Ws(server, owner.token) as ws:
        ws.subscribe(channel)
        post(owner, channel, f"@{removed['name']} warming up")
        ws.expect("stream_end")
        owner.ok("PUT", f"/api/channels/{channel}", json={"agentIds": [kept["id"]]})
        assert owner.ok("GET", f"/api/channels/{channel}")["channel"]["agentIds"] == [kept["id"]]
        ws.seen.clear()
        post(owner, channel, f"@{removed['name']} @{kept['name']} hello")
        end = ws.expect("stream_end")
        ws.expect("message", id=end["data"]["messageId"])
        starts = [e["data"]["agentId"] for e in ws.seen if e["type"] == "stream_start"]
        assert starts == [kept["id"]]


def test_an_agent_added_to_a_channel_answers_the_next_post(server: Server, owner: Api) -> None:
    agent = _echo_agent(owner)
    channel = new_channel(owner)["id"]
    _warm(owner, channel)
    owner.ok("POST", f"/api/channels/{channel}/members", json={"agentIds": [agent["id"]]})
    with Ws(server, owner.token) as ws:
        ws.subscribe(channel)
        post(owner, channel, f"@{agent['name']} are you there?")
        assert ws.expect("stream_start")["data"]["agentId"] == agent["id"]


def test_a_deleted_agent_leaves_its_channels_and_is_never_mentioned_again(
    server: Server, owner: Api
) -> None:
    kept, deleted = _echo_agent(owner), _echo_agent(owner)
    channel = new_channel(owner, agent_ids=[kept["id"], deleted["id"]])["id"]
    _warm(owner, channel)
    with Ws(server, owner.token) as ws:
        ws.subscribe(channel)
        owner.ok("DELETE", f"/api/agents/{deleted['id']}")
        assert owner.ok("GET", f"/api/channels/{channel}")["channel"]["agentIds"] == [kept["id"]]
        post(owner, channel, f"@{deleted['name']} @{kept['name']} hello")
        end = ws.expect("stream_end")
        ws.expect("message", id=end["data"]["messageId"])
        starts = [e["data"]["agentId"] for e in ws.seen if e["type"] == "stream_start"]
        assert starts == [kept["id"]]
    assert deleted["id"] not in _replies_from(owner, channel)


# -- settings ---------------------------------------------------------------------------------


@pytest.fixture
def short_messages(owner: Api) -> Any:
    before = owner.ok("GET", "/api/settings")["settings"]["limits"]["maxMessageChars"]
    owner.ok("PUT", "/api/settings", json={"limits": {"maxMessageChars": 10}})
    yield
    owner.ok("PUT", "/api/settings", json={"limits": {"maxMessageChars": before}})


def test_changed_settings_apply_to_the_next_post(
    server: Server, owner: Api, short_messages: None
) -> None:
    channel = new_channel(owner)["id"]
    post(owner, channel, "ten chars!")
    refused = owner.post("/api/messages", json={"channelId": channel, "content": "eleven chars"})
    assert refused.status_code == 400
    assert "10 characters" in refused.json()["error"]
