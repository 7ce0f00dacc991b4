"""A live channel list (issue 23): `channel_created`, `channel_updated` and `channel_removed`
reach every socket of every person concerned without a subscription, and nobody else; the
owner deletes a channel with everything in it, and a guest can leave one."""

from __future__ import annotations

import threading
import time
from typing import Any

from tests.support import (
    Api,
    Guest,
    Server,
    Ws,
    new_agent,
    new_channel,
    post,
    unique,
)
from tests.test_read_state import listed


def channel_event(ws: Ws, channel_id: str) -> dict[str, Any]:
    """The next channel event about `channel_id`."""
    while True:
        event = ws.expect_any(("channel_created", "channel_updated", "channel_removed"))
        if event["data"]["id"] == channel_id:
            return event


def test_people_added_hear_the_channel_created_and_others_hear_nothing(
    server: Server, owner: Api
) -> None:
    with (
        Guest(server, owner) as guest,
        Guest(server, owner) as outsider,
        Ws(server, owner.token) as owners,
        Ws(server, guest.api.token) as phone,
        Ws(server, guest.api.token) as desktop,
        Ws(server, outsider.api.token) as other,
    ):
        created = new_channel(owner, member_ids=[guest.id])
        for ws in (owners, phone, desktop):
            event = channel_event(ws, created["id"])
            assert event["type"] == "channel_created"
            assert event["data"] == {
                **created,
                "lastReadId": None,
                "unreadCount": 0,
                "mentionCount": 0,
            }
        theirs = new_channel(owner, member_ids=[outsider.id])["id"]
        assert channel_event(other, theirs)["type"] == "channel_created"
        assert all(created["id"] not in str(e) for e in other.seen)


def test_renaming_adding_and_removing_people_tell_each_person_what_they_may_see(
    server: Server, owner: Api
) -> None:
    with Guest(server, owner) as ada, Guest(server, owner) as bob:
        channel = new_channel(owner, member_ids=[ada.id])["id"]
        newest = post(owner, channel, "before bob")
        with Ws(server, ada.api.token) as adas, Ws(server, bob.api.token) as bobs:
            name = unique("renamed-")
            owner.ok("PUT", f"/api/channels/{channel}", json={"name": name})
            updated = channel_event(adas, channel)
            assert updated["type"] == "channel_updated" and updated["data"]["name"] == name
            owner.ok("POST", f"/api/channels/{channel}/members", json={"userIds": [bob.id]})
            joined = channel_event(bobs, channel)
            assert joined["type"] == "channel_created"
            assert joined["data"]["lastReadId"] == newest
            assert joined["data"]["memberIds"][-1] == bob.id
            assert channel_event(adas, channel)["data"]["memberIds"][-1] == bob.id
            owner.ok("PUT", f"/api/channels/{channel}", json={"memberIds": [bob.id]})
            assert channel_event(adas, channel) == {
                "type": "channel_removed",
                "data": {"id": channel},
            }
            assert channel_event(bobs, channel)["type"] == "channel_updated"
        assert listed(ada.api, channel) is None
        post(owner, channel, "ada is gone")
        owner.ok("POST", f"/api/channels/{channel}/members", json={"userIds": [ada.id]})
        assert listed(ada.api, channel) is not None
        assert listed(ada.api, channel)["unreadCount"] == 0  # type: ignore[index]


def test_a_guest_leaves_a_channel_and_only_its_own(server: Server, owner: Api) -> None:
    with Guest(server, owner) as guest, Guest(server, owner) as stays:
        channel = new_channel(owner, member_ids=[guest.id, stays.id])["id"]
        hidden = new_channel(owner)["id"]
        with Ws(server, guest.api.token) as ws, Ws(server, stays.api.token) as other:
            ws.subscribe(channel)
            assert guest.api.ok("POST", f"/api/channels/{channel}/leave") == {"ok": True}
            assert channel_event(ws, channel)["type"] == "channel_removed"
            assert guest.id not in channel_event(other, channel)["data"]["memberIds"]
            post(owner, channel, "after the guest left")
            ws.send({"type": "ping"})
            ws.expect("pong")
            assert all(e["type"] != "message" for e in ws.seen)
        for target in (channel, hidden, "ch_nothing"):
            answer = guest.api.post(f"/api/channels/{target}/leave")
            assert answer.status_code == 404
            assert answer.json() == {"error": f"No channel has the id '{target}'."}
        assert owner.post(f"/api/channels/{channel}/leave").status_code == 403


def test_the_owner_deletes_a_channel_with_its_messages_threads_and_files(
    server: Server, owner: Api
) -> None:
    with Guest(server, owner) as guest:
        channel = new_channel(owner, member_ids=[guest.id])["id"]
        elsewhere = new_channel(owner)["id"]
        alone, shared = (
            str(owner.ok("POST", "/api/upload", files={"file": (n, b"bye", "text/plain")})["url"])
            for n in ("only here.txt", "shared.txt")
        )
        root = post(owner, channel, f"see {alone} and {shared}")
        post(owner, elsewhere, f"also {shared}")
        post(guest.api, channel, "a reply", threadId=root)
        on_disk = {
            u: server.data_dir / "uploads" / u.removeprefix("/uploads/") for u in (alone, shared)
        }
        assert all(path.exists() for path in on_disk.values())
        refused = guest.api.delete(f"/api/channels/{channel}")
        assert refused.status_code == 403 and refused.json()["error"]
        with Ws(server, guest.api.token) as ws:
            assert owner.ok("DELETE", f"/api/channels/{channel}") == {"ok": True}
            assert channel_event(ws, channel)["type"] == "channel_removed"
        assert listed(owner, channel) is None
        gone = owner.get("/api/messages", params={"channelId": channel})
        assert gone.status_code == 404
        assert owner.get(f"/api/messages/{root}/versions").status_code == 404
        assert not on_disk[alone].exists() and owner.get(alone).status_code == 404
        assert on_disk[shared].exists() and owner.get(shared).status_code == 200
        assert owner.delete(f"/api/channels/{channel}").status_code == 404
        found = owner.ok("GET", "/api/search", params={"q": "reply"})["results"]
        assert all(r["channel"]["id"] != channel for r in found)


def test_an_agent_deleted_leaves_its_channels_in_everyones_list(server: Server, owner: Api) -> None:
    agent = new_agent(owner)
    with Guest(server, owner) as guest:
        channel = new_channel(owner, [agent["id"]], member_ids=[guest.id])["id"]
        with Ws(server, guest.api.token) as ws:
            owner.ok("DELETE", f"/api/agents/{agent['id']}")
            updated = channel_event(ws, channel)
        assert updated["type"] == "channel_updated" and updated["data"]["agentIds"] == []


def test_posts_racing_the_channels_deletion_are_stored_or_refused_never_a_500(
    server: Server, owner: Api
) -> None:
    channel = new_channel(owner)["id"]
    statuses: list[int] = []

    def chatter() -> None:
        with server.login() as poster:
            for i in range(200):
                response = poster.post(
                    "/api/messages", json={"channelId": channel, "content": f"racing {i}"}
                )
                statuses.append(response.status_code)
                if response.status_code == 404:
                    assert "error" in response.json()
                    return

    posters = [threading.Thread(target=chatter) for _ in range(3)]
    for thread in posters:
        thread.start()
    while len(statuses) < 10:
        time.sleep(0.01)
    assert owner.ok("DELETE", f"/api/channels/{channel}") == {"ok": True}
    for thread in posters:
        thread.join()
    assert set(statuses) <= {200, 201, 404}, statuses
    assert 404 in statuses
