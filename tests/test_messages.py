"""Messages: history pages, posting, validation, idempotent retries and the rate limit."""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import pytest
from ulid import ULID

from tests.support import (
    Api,
    Guest,
    Server,
    Ws,
    history,
    new_agent,
    new_channel,
    post,
    sql,
    unique,
)


@pytest.fixture
def channel(owner: Api) -> str:
    return str(new_channel(owner)["id"])


def _ids(messages: list[dict[str, Any]]) -> list[str]:
    return [m["id"] for m in messages]


# -- posting ---------------------------------------------------------------------------------


def test_a_post_answers_the_new_id_and_ok(owner: Api, channel: str) -> None:
    body = owner.ok("POST", "/api/messages", json={"channelId": channel, "content": "hi"})
    assert set(body) == {"id", "ok"} and body["ok"] is True
    assert body["id"].startswith("msg_")


def test_a_post_is_stored_before_it_is_broadcast(server: Server, owner: Api, channel: str) -> None:
    """Whoever hears of a message can already read it."""
    with Ws(server, owner.token) as ws:
        ws.subscribe(channel)
        message_id = post(owner, channel, "persisted first", type="text", metadata={"k": [1]})
        event = ws.expect("message", id=message_id)
        stored = history(owner, channel)
    assert _ids(stored) == [message_id]
    assert event["data"] == stored[0]
    me = owner.ok("GET", "/api/me")["user"]["id"]
    assert stored[0] == {
        "id": message_id,
        "channelId": channel,
        "agentId": None,
        "userId": me,
        "content": "persisted first",
        "type": "text",
        "metadata": {"k": [1]},
        "createdAt": stored[0]["createdAt"],
        "threadId": None,
        "editedAt": None,
        "deleted": False,
        "reactions": [],
        "thread": None,
    }
    assert stored[0]["createdAt"].endswith("Z")


@pytest.mark.parametrize("kind", ["text", "image", "file", "tool_call", "tool_result"])
def test_every_message_type_of_the_spec_is_accepted(owner: Api, channel: str, kind: str) -> None:
    message_id = post(owner, channel, "x", type=kind)
    assert [(m["id"], m["type"]) for m in history(owner, channel)] == [(message_id, kind)]


def test_type_defaults_to_text(owner: Api, channel: str) -> None:
    post(owner, channel, "plain")
    assert history(owner, channel)[-1]["type"] == "text"


@pytest.mark.parametrize(
    "body",
    [
        {"content": "no channel"},
        {"channelId": "CHANNEL"},
        {"channelId": "CHANNEL", "content": ""},
        {"channelId": "CHANNEL", "content": "   \n\t"},
        {"channelId": "CHANNEL", "content": 5},
        {"channelId": "CHANNEL", "content": "hi", "type": "video"},
        {"channelId": "CHANNEL", "content": "hi", "metadata": ["not", "an", "object"]},
        {"channelId": "CHANNEL", "content": "hi", "colour": "red"},
    ],
    ids=[
        "no-channel",
        "no-content",
        "empty",
        "blank",
        "not-a-string",
        "unknown-type",
        "metadata-not-object",
        "unknown-field",
    ],
)
def test_an_invalid_post_answers_400_and_stores_nothing(
    owner: Api, channel: str, body: dict[str, Any]
) -> None:
    body = {k: channel if v == "CHANNEL" else v for k, v in body.items()}
    response = owner.post("/api/messages", json=body)
    assert response.status_code == 400, response.text
    assert set(response.json()) - {"field"} == {"error"}
    assert history(owner, channel) == []


def test_content_may_be_as_long_as_max_message_chars_and_no_longer(
    owner: Api, channel: str
) -> None:
    post(owner, channel, "é" * 32_000)
    response = owner.post("/api/messages", json={"channelId": channel, "content": "é" * 32_001})
    assert response.status_code == 400
    assert "32000" in response.json()["error"]
    assert len(history(owner, channel)) == 1


def test_metadata_may_take_16_kib_of_json_and_no_more(owner: Api, channel: str) -> None:
    """Counted as compact UTF-8 JSON: `{"a":"…"}` is 8 bytes around the value."""
    post(owner, channel, "fits", metadata={"a": "x" * (16 * 1024 - 8)})
    post(owner, channel, "fits too", metadata={"a": "é" * ((16 * 1024 - 8) // 2)})
    response = owner.post(
        "/api/messages",
        json={"channelId": channel, "content": "too big", "metadata": {"a": "x" * (16 * 1024 - 7)}},
    )
    assert response.status_code == 400
    assert "16 KiB" in response.json()["error"]
    assert [m["content"] for m in history(owner, channel)] == ["fits", "fits too"]


def test_posting_to_an_unknown_channel_answers_404(owner: Api) -> None:
    response = owner.post("/api/messages", json={"channelId": "ch_nope", "content": "hi"})
    assert response.status_code == 404
    assert set(response.json()) - {"field"} == {"error"}


# -- idempotent retries ---------------------------------------------------------------------


def test_a_retry_with_the_same_idempotency_key_answers_the_first_id_and_stores_nothing(
    server: Server, owner: Api, channel: str
) -> None:
    key = {"Idempotency-Key": unique("retry-")}
    body = {"channelId": channel, "content": "only once"}
    with Ws(server, owner.token) as ws:
        ws.subscribe(channel)
        first = owner.ok("POST", "/api/messages", json=body, headers=key)
        ws.expect("message", id=first["id"])
        for _ in range(3):
            assert owner.ok("POST", "/api/messages", json=body, headers=key) == first
        after = post(owner, channel, "next")
        assert ws.expect("message")["data"]["id"] == after, "no second event for the retries"
    assert _ids(history(owner, channel)) == [first["id"], after]


def test_concurrent_retries_store_one_message(owner: Api, channel: str) -> None:
    key = {"Idempotency-Key": unique("race-")}
    body = {"channelId": channel, "content": "raced"}
    with ThreadPoolExecutor(8) as pool:
        answers = list(
            pool.map(lambda _: owner.ok("POST", "/api/messages", json=body, headers=key), range(8))
        )
    assert len({a["id"] for a in answers}) == 1
    assert len(history(owner, channel)) == 1


def test_concurrent_posts_to_a_channel_reach_its_subscribers_in_id_order(
    server: Server, owner: Api, channel: str
) -> None:
    """History pages by id and sockets deliver in commit order: the two must agree."""
    with Ws(server, owner.token) as ws:
        ws.subscribe(channel)
        with ThreadPoolExecutor(8) as pool:
            ids = list(pool.map(lambda i: post(owner, channel, f"race {i}"), range(48)))
        seen = [ws.expect("message", channelId=channel)["data"]["id"] for _ in ids]
    assert sorted(seen) == sorted(ids)
    assert seen == sorted(seen)
    assert _ids(history(owner, channel, limit=100)) == sorted(ids)


def test_idempotency_keys_are_per_user_and_per_key(
    server: Server, owner: Api, channel: str
) -> None:
    guest = Guest(server, owner)
    owner.ok("POST", f"/api/channels/{channel}/members", json={"userIds": [guest.id]})
    with guest.api:
        key = unique("k-")
        mine = owner.ok(
            "POST",
            "/api/messages",
            json={"channelId": channel, "content": "a"},
            headers={"Idempotency-Key": key},
        )["id"]
        theirs = guest.api.ok(
            "POST",
            "/api/messages",
            json={"channelId": channel, "content": "a"},
            headers={"Idempotency-Key": key},
        )["id"]
        other = owner.ok(
            "POST",
            "/api/messages",
            json={"channelId": channel, "content": "a"},
            headers={"Idempotency-Key": key + "-2"},
        )["id"]
    assert len({mine, theirs, other}) == 3
    assert len(history(owner, channel)) == 3


# -- reading history --------------------------------------------------------------------------


def test_history_pages_back_from_before_oldest_first(owner: Api, channel: str) -> None:
    ids = [post(owner, channel, f"m{i}") for i in range(7)]
    assert _ids(history(owner, channel)) == ids
    newest = history(owner, channel, limit=3)
    assert _ids(newest) == ids[4:]
    assert _ids(history(owner, channel, limit=3, before=newest[0]["id"])) == ids[1:4]
    assert _ids(history(owner, channel, limit=3, before=ids[1])) == ids[:1]
    assert history(owner, channel, before=ids[0]) == []


def test_limit_defaults_to_50(owner: Api, channel: str) -> None:
    ids = [post(owner, channel, f"m{i}") for i in range(55)]
    assert _ids(history(owner, channel)) == ids[5:]
    assert _ids(history(owner, channel, limit=200)) == ids
    assert _ids(history(owner, channel, limit=1)) == ids[-1:]


@pytest.mark.parametrize("limit", ["0", "201", "-1", "abc", "1.5", ""])
def test_a_limit_outside_1_to_200_or_not_an_integer_answers_400(
    owner: Api, channel: str, limit: str
) -> None:
    response = owner.get("/api/messages", params={"channelId": channel, "limit": limit})
    assert response.status_code == 400, response.text
    assert set(response.json()) - {"field"} == {"error"}


def test_history_without_a_channel_answers_400(owner: Api) -> None:
    response = owner.get("/api/messages")
    assert response.status_code == 400
    assert "channelId" in response.json()["error"]


def test_history_of_an_unknown_channel_answers_404(owner: Api) -> None:
    response = owner.get("/api/messages", params={"channelId": "ch_01ARZ3NDEKTSV4RRFFQ69G5FAV"})
    assert response.status_code == 404
    assert set(response.json()) - {"field"} == {"error"}


def test_history_before_an_unknown_message_or_one_of_another_channel_answers_404(
    owner: Api, channel: str
) -> None:
    elsewhere = post(owner, new_channel(owner)["id"])
    for before in ("msg_01ARZ3NDEKTSV4RRFFQ69G5FAV", elsewhere):
        response = owner.get("/api/messages", params={"channelId": channel, "before": before})
        assert response.status_code == 404, before
        assert set(response.json()) - {"field"} == {"error"}


def test_paging_is_exact_across_messages_created_in_the_same_millisecond(
    server: Server, owner: Api, channel: str
) -> None:
    """One writer commits far less often than once a millisecond here, so the messages that share
    one (as replies and chains can on a fast machine) are filed the way the service files them:
    ids as its generator makes them within one millisecond, one timestamp. Walking back page by
    page yields each exactly once."""
    before = [post(owner, channel, f"before {i}") for i in range(3)]
    time.sleep(0.002)
    ms = time.time_ns() // 1_000_000
    start = int.from_bytes(os.urandom(10)) >> 1
    same_ms = [
        f"msg_{ULID.from_bytes(ms.to_bytes(6, 'big') + (start + i).to_bytes(10, 'big'))}"
        for i in range(40)
    ]
    time.sleep(0.002)
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    for message_id in same_ms:
        sql(
            server,
            "INSERT INTO messages (id, channel_id, agent_id, user_id, content, type, metadata,"
            " created_at) VALUES (?, ?, NULL, NULL, ?, 'text', '{}', ?)",
            message_id,
            channel,
            f"same ms {message_id}",
            stamp,
        )
    after = [post(owner, channel, f"after {i}") for i in range(3)]
    walked: list[dict[str, Any]] = []
    page = history(owner, channel, limit=7)
    while page:
        walked = page + walked
        page = history(owner, channel, limit=7, before=page[0]["id"])
    assert _ids(walked) == before + same_ms + after
    assert len({m["createdAt"] for m in walked if m["id"] in same_ms}) == 1


def test_concurrent_posts_get_ids_in_the_order_of_their_creation_times(
    owner: Api, channel: str
) -> None:
    with ThreadPoolExecutor(12) as pool:
        posted = list(pool.map(lambda i: post(owner, channel, f"burst {i}"), range(60)))
    stored = history(owner, channel, limit=200)
    assert sorted(_ids(stored)) == sorted(posted)
    stamps = [m["createdAt"] for m in stored]
    assert stamps == sorted(stamps), "oldest first, and id order is time order"


# -- who may post -------------------------------------------------------------------------------


def test_a_guest_reads_and_posts_only_in_its_channels(server: Server, owner: Api) -> None:
    guest = Guest(server, owner)
    mine = new_channel(owner, member_ids=[guest.id])["id"]
    other = new_channel(owner)["id"]
    post(owner, other, "not for guests")
    with guest.api:
        message_id = post(guest.api, mine, "from a guest")
        assert history(guest.api, mine)[-1]["userId"] == guest.id
        assert _ids(history(owner, mine)) == [message_id]
        for response in (
            guest.api.post("/api/messages", json={"channelId": other, "content": "sneaky"}),
            guest.api.get("/api/messages", params={"channelId": other}),
        ):
            assert response.status_code == 404
            assert response.json()["error"] == f"No channel has the id '{other}'."
    assert [m["content"] for m in history(owner, other)] == ["not for guests"]


def test_a_mention_of_an_agent_is_posted_like_any_message(owner: Api) -> None:
    agent = new_agent(owner)
    channel = new_channel(owner, agent_ids=[agent["id"]])["id"]
    message_id = post(owner, channel, f"@{agent['name']} hello")
    assert history(owner, channel)[0]["id"] == message_id


# -- the rate limit -------------------------------------------------------------------------------


def test_posting_is_limited_per_user_with_429_retry_after_and_rate_limit_headers(
    plain_server: Server,
) -> None:
    """Defaults: bursts of 10, then 30 a minute (one every 2 s)."""
    with plain_server.login() as owner:
        guest, other = Guest(plain_server, owner), Guest(plain_server, owner)
        channel = new_channel(owner, member_ids=[guest.id, other.id])["id"]
    body = {"channelId": channel, "content": "spam"}
    with guest.api, other.api:
        remaining = []
        for _ in range(10):
            response = guest.api.post("/api/messages", json=body)
            assert response.status_code == 200
            assert response.headers["X-RateLimit-Limit"] == "30"
            assert int(response.headers["X-RateLimit-Reset"]) >= 1
            remaining.append(int(response.headers["X-RateLimit-Remaining"]))
        assert remaining == list(range(9, -1, -1))

        limited = guest.api.post("/api/messages", json=body)
        assert limited.status_code == 429
        assert set(limited.json()) - {"field"} == {"error"}
        retry_after = int(limited.headers["Retry-After"])
        assert 1 <= retry_after <= 2
        assert limited.headers["X-RateLimit-Limit"] == "30"
        assert limited.headers["X-RateLimit-Remaining"] == "0"
        assert 1 <= int(limited.headers["X-RateLimit-Reset"]) <= 20

        assert other.api.post("/api/messages", json=body).status_code == 200, "per user"
        time.sleep(retry_after)
        assert guest.api.post("/api/messages", json=body).status_code == 200
        assert guest.api.post("/api/messages", json=body).status_code == 429
    with plain_server.login() as owner:
        assert len(history(owner, channel)) == 12
