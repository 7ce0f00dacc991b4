"""Mentions of people (issue 23): `@Name` of a person who can read the channel is a mention,
listed in the message's metadata, counted in `mentionCount`, and told to the person's sockets
whether or not they subscribed; agents mention people the same way."""

from __future__ import annotations

from typing import Any

from tests.support import Api, Guest, Server, Ws, history, new_agent, new_channel, post, unique
from tests.test_read_state import read, state


def owner_id(owner: Api) -> str:
    me: str = owner.ok("GET", "/api/me")["user"]["id"]
    return me


def next_mention(ws: Ws) -> dict[str, Any]:
    data: dict[str, Any] = ws.expect("mention")["data"]
    return data


def test_a_person_mentioned_hears_it_unsubscribed_and_it_counts_until_read(
    server: Server, owner: Api
) -> None:
    agent = new_agent(owner, model="builtin/echo")
    with Guest(server, owner) as guest:
        channel = new_channel(owner, [agent["id"]], member_ids=[guest.id])["id"]
        with Ws(server, guest.api.token) as ws:
            sent = post(owner, channel, f"@{agent['name']} and @{guest.user['name'].upper()}, look")
            assert next_mention(ws) == {
                "messageId": sent,
                "channelId": channel,
                "threadId": None,
                "from": owner_id(owner),
            }
        (message,) = [m for m in history(owner, channel) if m["id"] == sent]
        assert message["metadata"]["mentions"] == {"userIds": [guest.id], "agentIds": [agent["id"]]}
        assert state(guest.api, channel)[2] == 1
        read(guest.api, channel, sent)
        assert state(guest.api, channel)[2] == 0


def test_a_mention_in_a_thread_carries_the_thread_and_counts_for_the_one_mentioned(
    server: Server, owner: Api
) -> None:
    with Guest(server, owner) as guest:
        channel = new_channel(owner, member_ids=[guest.id])["id"]
        root = post(owner, channel, "a root")
        read(guest.api, channel, root)
        with Ws(server, guest.api.token) as ws:
            reply = post(owner, channel, f"@{guest.user['name']} what do you think?", threadId=root)
            assert next_mention(ws)["threadId"] == root
        assert state(guest.api, channel) == (root, 1, 1), "mentioned: taking part"
        owner.ok("DELETE", f"/api/messages/{reply}")
        assert state(guest.api, channel) == (root, 0, 0)


def test_a_guest_who_cannot_read_the_channel_is_not_mentioned_and_hears_nothing(
    server: Server, owner: Api
) -> None:
    with Guest(server, owner) as outsider:
        hidden = new_channel(owner)["id"]
        with Ws(server, outsider.api.token) as ws:
            sent = post(owner, hidden, f"@{outsider.user['name']} is not here")
            (message,) = [m for m in history(owner, hidden) if m["id"] == sent]
            assert "mentions" not in message["metadata"]
            visible = new_channel(owner, member_ids=[outsider.id])["id"]
            later = post(owner, visible, f"@{outsider.user['name']} now you are")
            assert next_mention(ws)["messageId"] == later
            assert all(hidden not in str(e) for e in ws.seen)
        assert all(c["id"] != hidden for c in outsider.api.ok("GET", "/api/channels")["channels"])


def test_a_client_cannot_forge_the_mentions_of_its_message(server: Server, owner: Api) -> None:
    with Guest(server, owner) as guest, Guest(server, owner) as victim:
        channel = new_channel(owner, member_ids=[guest.id, victim.id])["id"]
        forged = {"mentions": {"userIds": [victim.id], "agentIds": []}, "kept": 1}
        sent = post(guest.api, channel, "no name here", metadata=forged)
        (message,) = [m for m in history(owner, channel) if m["id"] == sent]
        assert message["metadata"] == {"kept": 1}
        assert state(victim.api, channel)[2] == 0


def test_an_agent_that_names_a_person_in_its_reply_mentions_them(
    server: Server, owner: Api
) -> None:
    agent = new_agent(owner, model="builtin/echo")
    name = unique("Reader")
    with Guest(server, owner, name=name) as guest:
        channel = new_channel(owner, [agent["id"]], member_ids=[guest.id], kind="dm")["id"]
        with Ws(server, guest.api.token) as ws:
            asked = post(owner, channel, f"tell @{name} the report is ready")
            assert next_mention(ws)["messageId"] == asked
            by_agent = next_mention(ws)
            assert by_agent["from"] == agent["id"] and by_agent["channelId"] == channel
        (reply,) = [m for m in history(owner, channel) if m["id"] == by_agent["messageId"]]
        assert reply["agentId"] == agent["id"]
        assert reply["metadata"]["mentions"] == {"userIds": [guest.id], "agentIds": []}
        assert state(guest.api, channel) == (None, 2, 2)


def test_a_guest_mentions_the_owner_by_name_and_the_owner_hears_it(
    server: Server, owner: Api
) -> None:
    """The owner reads every channel, so `@Owner` reaches it wherever it is written."""
    me = owner.ok("GET", "/api/me")["user"]
    with Guest(server, owner) as guest:
        channel = new_channel(owner, member_ids=[guest.id])["id"]
        with Ws(server, owner.token) as ws:
            sent = post(guest.api, channel, f"@{me['name']}, a question")
            assert next_mention(ws)["messageId"] == sent
        (message,) = [m for m in history(owner, channel) if m["id"] == sent]
        assert message["metadata"]["mentions"]["userIds"] == [me["id"]]
        assert state(owner, channel)[2] == 1


def test_an_edit_that_names_a_person_mentions_them_and_one_that_drops_the_name_unmentions(
    server: Server, owner: Api
) -> None:
    """Fixing `@Gracee` to `@Grace` reaches Grace, as the fixed name of an agent gets its
    answer; taking the name out takes the mention back from the counts."""
    name = unique("Grace")
    with Guest(server, owner, name=name) as guest, Guest(server, owner) as outsider:
        channel = new_channel(owner, member_ids=[guest.id])["id"]
        sent = post(owner, channel, f"@{name}e please look")
        assert state(guest.api, channel)[1:] == (1, 0)
        with Ws(server, guest.api.token) as ws, Ws(server, outsider.api.token) as other:
            owner.ok("PATCH", f"/api/messages/{sent}", json={"content": f"@{name} please look"})
            assert next_mention(ws) == {
                "messageId": sent,
                "channelId": channel,
                "threadId": None,
                "from": owner_id(owner),
            }
            assert ws.expect("read_updated", channelId=channel)["data"]["mentionCount"] == 1
            owner.ok("PATCH", f"/api/messages/{sent}", json={"content": f"@{name}, look again"})
            owner.ok("PATCH", f"/api/messages/{sent}", json={"content": "nobody in particular"})
            assert ws.expect("read_updated", mentionCount=0)["data"]["unreadCount"] == 1
            assert [e["type"] for e in ws.seen].count("mention") == 1
            assert all(e["type"] not in ("mention", "read_updated") for e in other.seen)
        (message,) = [m for m in history(owner, channel) if m["id"] == sent]
        assert "mentions" not in message["metadata"]
        assert state(guest.api, channel)[1:] == (1, 0)
