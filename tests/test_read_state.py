"""Read state across devices (issue 23): a marker per person and channel, moved forward only,
unread and mention counts in the channel list, and `read_updated` on the person's sockets."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import Api, Guest, Server, Ws, new_agent, new_channel, post


def listed(api: Api, channel_id: str) -> dict[str, Any] | None:
    for channel in api.ok("GET", "/api/channels")["channels"]:
        if channel["id"] == channel_id:
            found: dict[str, Any] = channel
            return found
    return None


def state(api: Api, channel_id: str) -> tuple[str | None, int, int]:
    channel = listed(api, channel_id)
    assert channel is not None
    return channel["lastReadId"], channel["unreadCount"], channel["mentionCount"]


def read(api: Api, channel_id: str, message_id: str) -> dict[str, Any]:
    return api.ok("POST", f"/api/channels/{channel_id}/read", json={"messageId": message_id})


def test_others_messages_after_the_marker_are_unread_and_the_marker_only_moves_forward(
    server: Server, owner: Api
) -> None:
    with Guest(server, owner) as guest:
        channel = new_channel(owner, member_ids=[guest.id])["id"]
        assert state(owner, channel) == (None, 0, 0)
        sent = [post(guest.api, channel, f"news {n}") for n in range(3)]
        post(owner, channel, "the owner's own words never count for the owner")
        assert state(owner, channel) == (None, 3, 0)
        assert state(guest.api, channel) == (None, 1, 0)
        assert read(owner, channel, sent[1]) == {
            "ok": True,
            "lastReadId": sent[1],
            "unreadCount": 1,
            "mentionCount": 0,
        }
        assert read(owner, channel, sent[0])["lastReadId"] == sent[1]  # never backward
        assert state(owner, channel) == (sent[1], 1, 0)
        read(owner, channel, sent[2])
        assert state(owner, channel) == (sent[2], 0, 0)


def test_a_thread_reply_is_unread_only_for_those_who_take_part(server: Server, owner: Api) -> None:
    with Guest(server, owner) as ada, Guest(server, owner) as bob:
        channel = new_channel(owner, member_ids=[ada.id, bob.id])["id"]
        root = post(owner, channel, "a question")
        for api in (owner, ada.api, bob.api):
            read(api, channel, root)
        post(ada.api, channel, "an answer", threadId=root)
        assert state(owner, channel)[1] == 1, "the root's author takes part"
        assert state(bob.api, channel)[1] == 0, "bob is not in the thread"
        post(bob.api, channel, "me too", threadId=root)
        assert state(ada.api, channel)[1] == 1, "ada replied before"
        assert state(owner, channel)[1] == 2
        post(owner, channel, "on the main timeline")
        assert [state(a, channel)[1] for a in (ada.api, bob.api)] == [2, 1]


def test_agents_replies_count_and_a_deleted_message_no_longer_does(
    server: Server, owner: Api
) -> None:
    agent = new_agent(owner, model="builtin/echo")
    channel = new_channel(owner, agent_ids=[agent["id"]], kind="dm")["id"]
    with Ws(server, owner.token) as ws:
        ws.subscribe(channel)
        asked = post(owner, channel, "hello there")
        reply = ws.expect("message", agentId=agent["id"])["data"]["id"]
    assert state(owner, channel)[1] == 1
    read(owner, channel, asked)
    assert state(owner, channel) == (asked, 1, 0)
    with Ws(server, owner.token) as ws:
        owner.ok("DELETE", f"/api/messages/{reply}")
        # The badge of every device follows at once, not at the next list.
        assert ws.expect("read_updated", channelId=channel)["data"]["unreadCount"] == 0
    assert state(owner, channel) == (asked, 0, 0)


def test_a_person_joining_a_channel_has_read_what_was_there(server: Server, owner: Api) -> None:
    channel = new_channel(owner)["id"]
    newest = [post(owner, channel, f"before you came {n}") for n in range(2)][-1]
    with Guest(server, owner) as guest:
        owner.ok("POST", f"/api/channels/{channel}/members", json={"userIds": [guest.id]})
        assert state(guest.api, channel) == (newest, 0, 0)
        post(owner, channel, "welcome")
        assert state(guest.api, channel) == (newest, 1, 0)


def test_read_updated_reaches_every_socket_of_the_person_and_no_one_else(
    server: Server, owner: Api
) -> None:
    with Guest(server, owner) as guest:
        channel = new_channel(owner, member_ids=[guest.id])["id"]
        first = post(guest.api, channel, "one")
        second = post(guest.api, channel, "two")
        with (
            Ws(server, owner.token) as phone,
            Ws(server, owner.token) as desktop,
            Ws(server, guest.api.token) as other,
        ):
            read(owner, channel, first)
            for ws in (phone, desktop):
                event = ws.expect("read_updated", channelId=channel)
                assert event["data"] == {
                    "channelId": channel,
                    "lastReadId": first,
                    "unreadCount": 1,
                    "mentionCount": 0,
                }
            read(owner, channel, first)  # nothing moves: nothing is said
            read(owner, channel, second)
            assert phone.expect("read_updated")["data"]["lastReadId"] == second
            read(guest.api, channel, second)
            other.expect("read_updated", channelId=channel)
            assert all(e["type"] != "read_updated" for e in other.seen[:-1])
            desktop.expect("read_updated", lastReadId=second)


def test_a_guest_cannot_tell_a_hidden_channel_or_message_from_a_missing_one(
    server: Server, owner: Api
) -> None:
    with Guest(server, owner) as guest:
        hidden = new_channel(owner)["id"]
        secret = post(owner, hidden, "owners only")
        mine = new_channel(owner, member_ids=[guest.id])["id"]
        own = post(guest.api, mine, "mine")
        assert listed(guest.api, hidden) is None
        for channel in (hidden, "ch_nothing"):
            answer = guest.api.post(f"/api/channels/{channel}/read", json={"messageId": own})
            assert answer.status_code == 404
            assert answer.json() == {"error": f"No channel has the id '{channel}'."}
        for message in (secret, "msg_nothing"):
            answer = guest.api.post(f"/api/channels/{mine}/read", json={"messageId": message})
            assert answer.status_code == 404
            assert answer.json() == {"error": f"No message has the id '{message}' in this channel."}


@pytest.mark.parametrize(
    "body",
    [{}, {"messageId": ""}, {"messageId": 5}, {"messageId": None}, {"messageId": "x" * 65}, []],
)
def test_a_bad_read_is_a_400(owner: Api, body: Any) -> None:
    channel = new_channel(owner)["id"]
    answer = owner.post(f"/api/channels/{channel}/read", json=body)
    assert answer.status_code == 400
    assert answer.json()["error"]
