"""The thin path of `GET` and `POST /api/messages` (api/hot_routes.py) answers as the FastAPI
routes do: each request here is sent once in a form the thin path takes and once in a form it
hands on to FastAPI (a parameter written another way, a body sent as a `+json` type), and
the two answers must be the same, for the owner, a guest, a stranger and a renewed session."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest

from tests.support import Api, Guest, Server, age_session, history, new_channel, post, sql

UNCHANGING = ("content-type", "set-cookie", "retry-after")


@pytest.fixture
def channel(owner: Api) -> str:
    return str(new_channel(owner)["id"])


def _read(api: Api | httpx.Client, query: str) -> httpx.Response:
    return api.get(f"/api/messages?{query}")


def _same(thin: httpx.Response, fastapi: httpx.Response) -> None:
    assert thin.status_code == fastapi.status_code, (thin.text, fastapi.text)
    assert thin.json() == fastapi.json()
    for name in UNCHANGING:
        assert (name in thin.headers) == (name in fastapi.headers), name


@pytest.mark.parametrize(
    ("taken", "handed_on"),
    [
        ("limit=3", "limit=03"),
        ("limit=3", "limit=3&unknown=1"),
        ("", "limit=50"),
        ("limit=200", "limit=+200"),
        ("limit=4", "limit=3&limit=4"),
    ],
)
def test_a_history_page_is_the_same_on_both_paths(
    owner: Api, channel: str, taken: str, handed_on: str
) -> None:
    ids = [post(owner, channel, f"m{i}") for i in range(5)]
    for extra in ("", f"&before={ids[3]}", f"&after={ids[0]}"):
        thin = _read(owner, f"channelId={channel}&{taken}{extra}")
        _same(thin, _read(owner, f"channelId={channel}&{handed_on}{extra}"))
        assert thin.json()["messages"]


@pytest.mark.parametrize(
    "query",
    [
        "limit=0",
        "limit=201",
        "limit=x",
        "channelId=",
        "threadId=",
        "before=a&after=b",
    ],
)
def test_a_history_request_the_thin_path_hands_on_gets_fastapi_s_answer(
    owner: Api, channel: str, query: str
) -> None:
    response = _read(owner, f"channelId={channel}&{query}")
    assert response.status_code in (400, 404), response.text
    assert response.json()["error"]


def test_strangers_and_guests_outside_the_channel_get_the_same_refusal(
    server: Server, owner: Api, channel: str
) -> None:
    message = post(owner, channel, "for members only")
    with server.client() as stranger:
        _same(
            _read(stranger, f"channelId={channel}"),
            _read(stranger, f"channelId={channel}&limit=050"),
        )
        assert _read(stranger, f"channelId={channel}").status_code == 401
    with Guest(server, owner) as guest:
        for query in (f"channelId={channel}", f"channelId={channel}&threadId={message}"):
            thin = _read(guest.api, query)
            assert thin.status_code == 404
            assert "for members only" not in thin.text
            _same(thin, _read(guest.api, f"{query}&limit=050"))
        refused = _post(guest.api, {"channelId": channel, "content": "hi"})
        assert refused.status_code == 404
        _same(refused, _post(guest.api, {"channelId": channel, "content": "hi"}, typed=False))
    assert [m["content"] for m in history(owner, channel)] == ["for members only"]


def _post(
    api: Api | httpx.Client, body: Any, typed: bool = True, key: str | None = None
) -> httpx.Response:
    """With `typed`, as `application/json` (the thin path); without, the same bytes as a
    `+json` type, which FastAPI reads as JSON and the thin path hands on."""
    headers = {"content-type": "application/json" if typed else "application/x-test+json"}
    if key is not None:
        headers["idempotency-key"] = key
    return api.post("/api/messages", content=orjson.dumps(body), headers=headers)


def test_a_post_is_stored_and_answered_the_same_on_both_paths(owner: Api, channel: str) -> None:
    thin = _post(owner, {"channelId": channel, "content": "thin"})
    fastapi = _post(owner, {"channelId": channel, "content": "fastapi"}, typed=False)
    for response in (thin, fastapi):
        assert response.status_code == 200, response.text
        assert set(response.json()) == {"id", "ok"}
    assert sorted(thin.headers) == sorted(fastapi.headers)
    stored = history(owner, channel)
    assert [(m["id"], m["content"]) for m in stored] == [
        (thin.json()["id"], "thin"),
        (fastapi.json()["id"], "fastapi"),
    ]


def test_an_idempotency_key_is_honoured_on_the_thin_path(
    server: Server, owner: Api, channel: str
) -> None:
    body = {"channelId": channel, "content": "once"}
    first = _post(owner, body, key="k-1")
    again = _post(owner, body, key="k-1")
    assert first.json()["id"] == again.json()["id"]
    assert [m["content"] for m in history(owner, channel)] == ["once"]
    too_long = _post(owner, body, key="k" * 201)
    assert too_long.status_code == 400 and too_long.json()["error"]
    stored = sql(server, "SELECT count(*) FROM messages WHERE channel_id = ?", channel)
    assert stored == [(1,)]


@pytest.mark.parametrize(
    "body",
    [
        {"channelId": "x", "content": ""},
        {"channelId": "x", "content": "hi", "unknown": 1},
        {"channelId": 3, "content": "hi"},
        {"channelId": "x", "content": "hi", "type": "weird"},
        ["not", "an", "object"],
    ],
)
def test_a_body_the_thin_path_cannot_take_gets_fastapi_s_answer(owner: Api, body: Any) -> None:
    _same(_post(owner, body), _post(owner, body, typed=False))
    assert _post(owner, body).status_code == 400


def test_both_paths_renew_an_aging_session_cookie(server: Server, owner: Api, channel: str) -> None:
    with server.login() as api:
        age_session(server, api.token, days=29)
        read = _read(api, f"channelId={channel}")
        assert read.status_code == 200
        assert api.token in read.headers["set-cookie"]
        # Handed on: FastAPI's route answers JSON it did not encode, the cookie kept.
        age_session(server, api.token, days=29)
        read = _read(api, f"channelId={channel}&limit=050")
        assert read.status_code == 200
        assert api.token in read.headers["set-cookie"]
        age_session(server, api.token, days=29)
        listed = api.get("/api/channels")
        assert listed.status_code == 200 and listed.json()["channels"]
        assert api.token in listed.headers["set-cookie"]
        age_session(server, api.token, days=29)
        posted = _post(api, {"channelId": channel, "content": "renewed"})
        assert posted.status_code == 200
        assert api.token in posted.headers["set-cookie"]


def test_the_thin_path_checks_the_host_and_sends_the_security_headers(
    server: Server, owner: Api, channel: str
) -> None:
    """Ahead of the middlewares (api/hot_routes.py `HotPaths`), it still does their work."""
    refusal = {"error": "This server does not answer to that host name (Host header)."}
    evil = {"Host": "evil.example"}
    read = owner.get(f"/api/messages?channelId={channel}", headers=evil)
    posted = owner.post("/api/messages", json={"channelId": channel, "content": "x"}, headers=evil)
    for response in (read, posted):
        assert (response.status_code, response.json()) == (400, refusal)
    assert history(owner, channel) == []
    for response in (
        _read(owner, f"channelId={channel}"),
        _post(owner, {"channelId": channel, "content": "hi"}),
        _read(owner, "channelId=ch_none"),
    ):
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["referrer-policy"] == "same-origin"


def test_a_post_of_undeclared_or_excessive_length_meets_the_body_limit(
    owner: Api, channel: str
) -> None:
    body = orjson.dumps({"channelId": channel, "content": "chunked"})
    chunked = owner.post(
        "/api/messages", content=iter([body]), headers={"content-type": "application/json"}
    )
    assert chunked.status_code == 200, chunked.text
    huge = b" " * (8 * 1024 * 1024 + 1)
    too_large = owner.post(
        "/api/messages",
        content=iter([body[:-1], huge, b"}"]),
        headers={"content-type": "application/json"},
    )
    assert too_large.status_code == 413 and too_large.json()["error"]
    declared = owner.post(
        "/api/messages", content=body + huge, headers={"content-type": "application/json"}
    )
    assert declared.status_code == 413 and declared.json()["error"]
    read = owner.request("GET", f"/api/messages?channelId={channel}", content=huge)
    assert read.status_code == 413 and read.json()["error"]
    assert [m["content"] for m in history(owner, channel)] == ["chunked"]


def test_the_thin_path_answers_a_refusal_with_its_headers(server: Server, channel: str) -> None:
    """A domain error raised on the thin path goes to the app's handler: 429 and Retry-After."""
    with server.login() as api:
        api.put("/api/settings", json={"limits": {"messagesPerMinute": 1, "messageBurst": 1}})
        try:
            first = _post(api, {"channelId": channel, "content": "one"})
            second = _post(api, {"channelId": channel, "content": "two"})
            fastapi = _post(api, {"channelId": channel, "content": "two"}, typed=False)
        finally:
            wide = {"messagesPerMinute": 100_000, "messageBurst": 100_000}
            api.put("/api/settings", json={"limits": wide}).raise_for_status()
    assert first.status_code == 200
    assert second.status_code == 429 and "retry-after" in second.headers
    _same(second, fastapi)
