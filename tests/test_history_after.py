"""History paging forward: `GET /api/messages?after=<id>` (a search result's window, read down
to the live end), with the same rules as `before`."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import Api, Guest, Server, history, new_channel, post


@pytest.fixture
def channel(owner: Api) -> str:
    return str(new_channel(owner)["id"])


def _ids(messages: list[dict[str, Any]]) -> list[str]:
    return [m["id"] for m in messages]


def test_after_pages_forward_oldest_first_as_before_does(owner: Api, channel: str) -> None:
    ids = [post(owner, channel, f"m{i}") for i in range(7)]
    assert _ids(history(owner, channel, limit=3, after=ids[0])) == ids[1:4]
    assert _ids(history(owner, channel, limit=3, after=ids[3])) == ids[4:7]
    assert _ids(history(owner, channel, limit=3, after=ids[5])) == ids[6:]
    assert history(owner, channel, after=ids[-1]) == []
    # The same order as a page back: a window around a message is before + [it] + after.
    around = history(owner, channel, limit=2, before=ids[3]) + history(
        owner, channel, limit=2, after=ids[2]
    )
    assert _ids(around) == ids[1:5]


def test_walking_forward_from_the_oldest_meets_the_live_end_once(owner: Api, channel: str) -> None:
    ids = [post(owner, channel, f"m{i}") for i in range(23)]
    walked = history(owner, channel, limit=1, before=ids[1])
    page = history(owner, channel, limit=5, after=walked[-1]["id"])
    while page:
        walked += page
        page = history(owner, channel, limit=5, after=page[-1]["id"])
    assert _ids(walked) == ids


def test_after_on_the_main_timeline_leaves_thread_replies_out(owner: Api, channel: str) -> None:
    root = post(owner, channel, "root")
    reply = post(owner, channel, "reply", threadId=root)
    later = post(owner, channel, "later")
    assert _ids(history(owner, channel, after=root)) == [later]
    assert _ids(history(owner, channel, after=reply)) == [later]


def test_after_in_a_thread_pages_its_replies(owner: Api, channel: str) -> None:
    root = post(owner, channel, "root")
    replies = [post(owner, channel, f"r{i}", threadId=root) for i in range(5)]
    post(owner, channel, "main timeline, not the thread's")
    assert _ids(history(owner, channel, threadId=root, limit=2, after=root)) == replies[:2]
    assert _ids(history(owner, channel, threadId=root, after=replies[1])) == replies[2:]
    assert history(owner, channel, threadId=root, after=replies[-1]) == []


def test_after_a_deleted_message_still_pages(owner: Api, channel: str) -> None:
    ids = [post(owner, channel, f"m{i}") for i in range(4)]
    owner.ok("DELETE", f"/api/messages/{ids[1]}")
    assert _ids(history(owner, channel, after=ids[1])) == ids[2:]
    assert _ids(history(owner, channel, after=ids[0])) == ids[2:]


def test_before_and_after_together_page_the_gap_between_them(owner: Api, channel: str) -> None:
    """Both: the oldest `limit` messages between the two, as a gap is filled from its start."""
    ids = [post(owner, channel, f"m{i}") for i in range(6)]
    assert _ids(history(owner, channel, after=ids[0], before=ids[5])) == ids[1:5]
    assert _ids(history(owner, channel, after=ids[0], before=ids[5], limit=2)) == ids[1:3]
    assert history(owner, channel, after=ids[4], before=ids[1]) == []
    elsewhere = post(owner, new_channel(owner)["id"])
    response = owner.get(
        "/api/messages", params={"channelId": channel, "after": ids[0], "before": elsewhere}
    )
    assert response.status_code == 404 and response.json()["error"]


def test_after_an_unknown_message_or_one_of_another_channel_answers_404(
    owner: Api, channel: str
) -> None:
    elsewhere = post(owner, new_channel(owner)["id"])
    for after in ("msg_01ARZ3NDEKTSV4RRFFQ69G5FAV", elsewhere):
        response = owner.get("/api/messages", params={"channelId": channel, "after": after})
        assert response.status_code == 404, after
        assert set(response.json()) - {"field"} == {"error"}
        before = owner.get("/api/messages", params={"channelId": channel, "before": after})
        assert before.json() == response.json()


def test_a_guest_pages_forward_only_in_its_channels(server: Server, owner: Api) -> None:
    guest = Guest(server, owner)
    mine = new_channel(owner, member_ids=[guest.id])["id"]
    other = new_channel(owner)["id"]
    in_mine = [post(owner, mine, f"m{i}") for i in range(3)]
    in_other = [post(owner, other, f"o{i}") for i in range(3)]
    with guest.api:
        assert _ids(history(guest.api, mine, after=in_mine[0])) == in_mine[1:]
        hidden = guest.api.get("/api/messages", params={"channelId": other, "after": in_other[0]})
        missing = guest.api.get(
            "/api/messages",
            params={"channelId": "ch_01ARZ3NDEKTSV4RRFFQ69G5FAV", "after": in_other[0]},
        )
        assert hidden.status_code == 404
        assert hidden.json()["error"].replace(other, "X") == missing.json()["error"].replace(
            "ch_01ARZ3NDEKTSV4RRFFQ69G5FAV", "X"
        )
        # A message of a channel it cannot read, named from its own channel: as unknown.
        foreign = guest.api.get("/api/messages", params={"channelId": mine, "after": in_other[0]})
        assert foreign.status_code == 404
