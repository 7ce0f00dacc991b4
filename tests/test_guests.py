"""Guests: people the owner invites with a key of their own, and how they leave."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import Api, Guest, Server, Ws, new_channel, post, sql, unique


def _listed(owner: Api) -> list[dict[str, Any]]:
    guests: list[dict[str, Any]] = owner.ok("GET", "/api/guests")["guests"]
    return guests


def test_creating_a_guest_answers_the_user_and_a_key_shown_once(server: Server, owner: Api) -> None:
    name = unique("Grace ")
    body = owner.ok("POST", "/api/guests", json={"name": name})
    assert set(body) == {"user", "key"}
    user = body["user"]
    assert set(user) == {"id", "name", "role", "createdAt"}
    assert user["id"].startswith("user_")
    assert (user["name"], user["role"]) == (name, "guest")
    assert isinstance(body["key"], str) and len(body["key"]) >= 32
    (stored,) = sql(server, "SELECT key_hash FROM users WHERE id = ?", user["id"])
    assert stored[0] and body["key"] not in stored[0], "only a hash of the key is kept"
    with server.login(body["key"]) as guest:
        assert guest.ok("GET", "/api/me") == {"user": user}


def test_the_list_shows_guests_without_their_keys(owner: Api, server: Server) -> None:
    with Guest(server, owner) as guest:
        listed = [g for g in _listed(owner) if g["id"] == guest.id]
    assert listed == [guest.user]
    assert all(g["role"] == "guest" for g in _listed(owner)), "the owner is not a guest"


@pytest.mark.parametrize(
    "body",
    [{}, {"name": ""}, {"name": "  "}, {"name": "x" * 129}, {"name": 3}, {"name": "a", "key": "b"}],
    ids=["no-name", "empty", "blank", "too-long", "not-a-string", "unknown-field"],
)
def test_invalid_guests_answer_400(owner: Api, body: dict[str, Any]) -> None:
    response = owner.post("/api/guests", json=body)
    assert response.status_code == 400
    assert set(response.json()) - {"field"} == {"error"}


def test_deleting_a_guest_revokes_its_sessions_and_sockets_at_once(
    server: Server, owner: Api
) -> None:
    channel = new_channel(owner)
    with Guest(server, owner) as guest:
        second_session = guest.api
        owner.ok("POST", f"/api/channels/{channel['id']}/members", json={"userIds": [guest.id]})
        other_session = server.login(guest.key)
        with other_session, Ws(server, guest.api.token) as ws, Ws(server, owner.token) as stays:
            ws.subscribe(channel["id"])
            assert owner.ok("DELETE", f"/api/guests/{guest.id}") == {"ok": True}
            assert ws.expect_close() == 4401
            for api in (second_session, other_session):
                response = api.get("/api/me")
                assert response.status_code == 401
                assert set(response.json()) - {"field"} == {"error"}
            stays.send({"type": "ping"})
            stays.expect("pong")
    assert guest.id not in [g["id"] for g in _listed(owner)]
    assert guest.id not in owner.ok("GET", f"/api/channels/{channel['id']}")["channel"]["memberIds"]
    with server.client() as api:
        response = api.post(
            "/api/login", json={"password": guest.key}, headers={"X-Forwarded-For": "10.9.9.9"}
        )
    assert response.status_code == 401, "the key is gone too"


def test_a_deleted_guests_messages_stay(server: Server, owner: Api) -> None:
    with Guest(server, owner) as guest:
        channel = new_channel(owner, member_ids=[guest.id])["id"]
        message_id = post(guest.api, channel, "I was here")
        owner.ok("DELETE", f"/api/guests/{guest.id}")
    stored = owner.ok("GET", "/api/messages", params={"channelId": channel})["messages"]
    assert [(m["id"], m["userId"]) for m in stored] == [(message_id, guest.id)]


def test_deleting_an_unknown_guest_or_the_owner_answers_404(owner: Api) -> None:
    owner_id = owner.ok("GET", "/api/me")["user"]["id"]
    for user_id in ("user_nobody", owner_id):
        response = owner.delete(f"/api/guests/{user_id}")
        assert response.status_code == 404
        assert user_id in response.json()["error"]
    assert owner.get("/api/me").status_code == 200


def test_a_guest_sees_reads_and_subscribes_only_where_it_is_a_member(
    server: Server, owner: Api
) -> None:
    with Guest(server, owner) as guest:
        mine = new_channel(owner, member_ids=[guest.id])["id"]
        hidden = new_channel(owner)["id"]
        assert [c["id"] for c in guest.api.ok("GET", "/api/channels")["channels"]] == [mine]
        with Ws(server, guest.api.token) as ws:
            ws.subscribe(mine)
            ws.send({"type": "subscribe", "channelId": hidden})
            error = ws.expect("error")["data"]
            assert error["code"] == "not_found"
            post(owner, hidden, "secret")
            visible = post(owner, mine, "hello guest")
            assert ws.expect("message")["data"]["id"] == visible


def test_the_websocket_names_the_guest_as_the_user(server: Server, owner: Api) -> None:
    with Guest(server, owner) as guest, Ws(server) as ws:
        ws.send({"type": "auth", "token": guest.api.token})
        assert ws.expect("auth_ok") == {"type": "auth_ok", "userId": guest.id}
