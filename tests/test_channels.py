"""Channels: their shape, who is in them, and who may see them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import (
    Api,
    Guest,
    Server,
    Ws,
    history,
    new_agent,
    new_channel,
    post,
    unique,
)

FIELDS = {"id", "name", "type", "agentIds", "memberIds", "createdAt", "updatedAt"}


@pytest.fixture(scope="module")
def owner_id(owner: Api) -> str:
    return str(owner.ok("GET", "/api/me")["user"]["id"])


@pytest.fixture
def guest(server: Server, owner: Api) -> Iterator[Guest]:
    with Guest(server, owner) as guest:
        yield guest


def _error(owner: Api, method: str, path: str, status: int, **kwargs: Any) -> str:
    response = owner.request(method, path, **kwargs)
    assert response.status_code == status, response.text
    assert set(response.json()) - {"field"} == {"error"}
    error: str = response.json()["error"]
    return error


def test_creating_a_group_answers_the_channel_with_the_owner_a_member(
    owner: Api, owner_id: str, guest: Guest
) -> None:
    agents = [new_agent(owner)["id"], new_agent(owner)["id"]]
    body = {"name": "Planning", "type": "group", "agentIds": agents, "memberIds": [guest.id]}
    channel = owner.ok("POST", "/api/channels", json=body)["channel"]
    assert set(channel) == FIELDS
    assert channel["id"].startswith("ch_")
    assert (channel["name"], channel["type"], channel["agentIds"]) == ("Planning", "group", agents)
    assert channel["memberIds"] == [owner_id, guest.id]
    assert channel["createdAt"] == channel["updatedAt"]
    assert owner.ok("GET", f"/api/channels/{channel['id']}") == {"channel": channel}


def test_a_group_may_start_empty(owner: Api, owner_id: str) -> None:
    channel = owner.ok("POST", "/api/channels", json={"name": "quiet", "type": "group"})["channel"]
    assert (channel["agentIds"], channel["memberIds"]) == ([], [owner_id])


def test_a_dm_has_exactly_one_agent(owner: Api) -> None:
    one, two = new_agent(owner)["id"], new_agent(owner)["id"]
    for agent_ids in ([], [one, two]):
        error = _error(
            owner,
            "POST",
            "/api/channels",
            400,
            json={"name": "dm", "type": "dm", "agentIds": agent_ids},
        )
        assert "one agent" in error
    dm = owner.ok("POST", "/api/channels", json={"name": "dm", "type": "dm", "agentIds": [one]})
    assert dm["channel"]["agentIds"] == [one]
    path = f"/api/channels/{dm['channel']['id']}"
    _error(owner, "PUT", path, 400, json={"agentIds": [one, two]})
    _error(owner, "POST", f"{path}/members", 400, json={"agentIds": [two]})
    _error(owner, "PUT", path, 400, json={"agentIds": []})


@pytest.mark.parametrize(
    "body",
    [
        {"type": "group"},
        {"name": "", "type": "group"},
        {"name": "x" * 129, "type": "group"},
        {"name": "x"},
        {"name": "x", "type": "forum"},
        {"name": "x", "type": "group", "agentIds": "agent_1"},
        {"name": "x", "type": "group", "topic": "unknown field"},
    ],
    ids=["no-name", "empty-name", "long-name", "no-type", "bad-type", "ids-not-list", "unknown"],
)
def test_invalid_channels_answer_400(owner: Api, body: dict[str, Any]) -> None:
    _error(owner, "POST", "/api/channels", 400, json=body)


@pytest.mark.parametrize("field", ["agentIds", "memberIds"])
def test_unknown_ids_answer_404_naming_the_id(owner: Api, field: str) -> None:
    """Well formed but naming nothing: 404, as an unknown channelId of a message is."""
    agent = new_agent(owner)["id"]
    bogus = "agent_doesnotexist" if field == "agentIds" else "user_doesnotexist"
    body = {"name": "x", "type": "group", "agentIds": [agent], "memberIds": []}
    body[field] = [*body[field], bogus]
    assert bogus in _error(owner, "POST", "/api/channels", 404, json=body)
    channel = new_channel(owner)["id"]
    assert bogus in _error(owner, "PUT", f"/api/channels/{channel}", 404, json={field: [bogus]})
    adding = {"agentIds" if field == "agentIds" else "userIds": [bogus]}
    path = f"/api/channels/{channel}/members"
    assert bogus in _error(owner, "POST", path, 404, json=adding)
    assert owner.ok("GET", f"/api/channels/{channel}")["channel"]["agentIds"] == []


def test_an_agent_id_is_not_a_member_id(owner: Api) -> None:
    agent = new_agent(owner)["id"]
    body = {"name": "x", "type": "group", "memberIds": [agent]}
    assert agent in _error(owner, "POST", "/api/channels", 404, json=body)


def test_an_update_renames_and_replaces_members_keeping_the_owner(
    owner: Api, owner_id: str, guest: Guest
) -> None:
    first, second = new_agent(owner)["id"], new_agent(owner)["id"]
    channel = new_channel(owner, agent_ids=[first], member_ids=[guest.id])
    path = f"/api/channels/{channel['id']}"
    renamed = owner.ok("PUT", path, json={"name": "renamed"})["channel"]
    assert (renamed["name"], renamed["agentIds"], renamed["memberIds"]) == (
        "renamed",
        [first],
        [owner_id, guest.id],
    )
    assert renamed["updatedAt"] > channel["updatedAt"]
    replaced = owner.ok("PUT", path, json={"agentIds": [second], "memberIds": []})["channel"]
    assert (replaced["agentIds"], replaced["memberIds"]) == ([second], [owner_id])
    assert owner.ok("GET", path)["channel"] == replaced


def test_an_update_rejects_what_a_channel_cannot_change(owner: Api) -> None:
    path = f"/api/channels/{new_channel(owner)['id']}"
    for body in ({"type": "dm"}, {"id": "ch_other"}, {"name": ""}, {"memberIds": None, "x": 1}):
        _error(owner, "PUT", path, 400, json=body)


def test_adding_members_keeps_the_ones_there_and_ignores_repeats(
    owner: Api, owner_id: str, guest: Guest
) -> None:
    first, second = new_agent(owner)["id"], new_agent(owner)["id"]
    channel = new_channel(owner, agent_ids=[first])
    path = f"/api/channels/{channel['id']}/members"
    added = owner.ok(
        "POST", path, json={"agentIds": [second, first], "userIds": [guest.id, owner_id]}
    )["channel"]
    assert added["agentIds"] == [first, second]
    assert added["memberIds"] == [owner_id, guest.id]
    again = owner.ok("POST", path, json={"userIds": [guest.id]})["channel"]
    assert again["memberIds"] == [owner_id, guest.id]
    _error(owner, "POST", path, 400, json={"memberIds": [guest.id]})


def test_unknown_channels_answer_404(owner: Api) -> None:
    for method, path, body in (
        ("GET", "/api/channels/ch_nope", None),
        ("PUT", "/api/channels/ch_nope", {"name": "x"}),
        ("POST", "/api/channels/ch_nope/members", {"userIds": []}),
    ):
        assert "ch_nope" in _error(owner, method, path, 404, json=body)


def test_the_owner_sees_every_channel_and_a_guest_only_its_own(owner: Api, guest: Guest) -> None:
    theirs = new_channel(owner, member_ids=[guest.id])
    hidden = new_channel(owner)
    all_ids = [c["id"] for c in owner.ok("GET", "/api/channels")["channels"]]
    assert theirs["id"] in all_ids and hidden["id"] in all_ids
    seen = guest.api.ok("GET", "/api/channels")["channels"]
    read_state = {"lastReadId": None, "unreadCount": 0, "mentionCount": 0}
    assert seen == [{**owner.ok("GET", f"/api/channels/{theirs['id']}")["channel"], **read_state}]
    assert guest.api.ok("GET", f"/api/channels/{theirs['id']}")["channel"]["id"] == theirs["id"]
    error = _error(guest.api, "GET", f"/api/channels/{hidden['id']}", 404)
    assert error == _error(guest.api, "GET", "/api/channels/ch_missing", 404).replace(
        "ch_missing", hidden["id"]
    ), "a hidden channel looks exactly like a missing one"


def test_a_guest_removed_from_a_channel_loses_it_at_once(
    server: Server, owner: Api, guest: Guest
) -> None:
    channel = new_channel(owner, member_ids=[guest.id])["id"]
    with Ws(server, guest.api.token) as ws:
        ws.subscribe(channel)
        first = post(owner, channel, "still in")
        ws.expect("message", id=first)
        mark = len(ws.seen)
        owner.ok("PUT", f"/api/channels/{channel}", json={"memberIds": []})
        post(owner, channel, "no longer for the guest")
        ws.send({"type": "ping"})
        ws.expect("pong")
        assert ws.seen[mark:] == [
            {"type": "channel_removed", "data": {"id": channel}},
            {"type": "pong"},
        ], "the guest learns it lost the channel, and nothing of it after"
        _error(guest.api, "GET", f"/api/channels/{channel}", 404)
        ws.send({"type": "subscribe", "channelId": channel})
        assert ws.expect("error")["data"]["code"] == "not_found"


def test_a_channel_name_is_trimmed(owner: Api) -> None:
    name = unique()
    channel = owner.ok("POST", "/api/channels", json={"name": f"  {name} ", "type": "group"})
    assert channel["channel"]["name"] == name


def test_unread_counts_for_every_channel_come_in_one_request(
    owner: Api, guest: Guest, owner_id: str
) -> None:
    shared = new_channel(owner, member_ids=[guest.id])["id"]
    hidden = new_channel(owner)["id"]
    empty = new_channel(owner, member_ids=[guest.id])["id"]
    first = post(owner, shared, "read already")
    for i in range(3):
        post(guest.api, shared, f"from the guest {i}")
    mine = post(owner, shared, "the owner's own")
    post(owner, shared, "[file](/x)", type="file", metadata={"name": "x"})
    secret = post(owner, hidden, "owner only")

    def unread(api: Api, after: dict[str, str | None], **body: Any) -> dict[str, Any]:
        answer: dict[str, Any] = api.ok(
            "POST", "/api/channels/unread", json={"after": after, **body}
        )["channels"]
        return answer

    counted = unread(guest.api, {shared: first, hidden: None, empty: None, "ch_nope": None})
    assert set(counted) == {shared, empty}, "channels the guest cannot see are left out"
    newest = history(owner, shared)[-1]["id"]
    # The guest's own three do not count; the owner's text and file do.
    assert counted[shared] == {"count": 2, "newestId": newest}
    assert counted[empty] == {"count": 0, "newestId": None}
    assert unread(guest.api, {shared: mine}, limit=50)[shared]["count"] == 1
    assert unread(guest.api, {shared: None})[shared] == {"count": 0, "newestId": newest}
    # The owner reads the guest's messages; the counts stop at `limit`.
    assert unread(owner, {shared: first, hidden: secret}) == {
        shared: {"count": 3, "newestId": newest},
        hidden: {"count": 0, "newestId": secret},
    }
    assert unread(owner, {shared: first}, limit=2)[shared]["count"] == 2
    assert (
        owner.request("POST", "/api/channels/unread", json={"after": {}, "limit": 0}).status_code
        == 400
    )
