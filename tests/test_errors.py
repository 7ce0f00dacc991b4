"""Every failure answers JSON `{"error": "..."}`: unknown routes, 405, malformed JSON, validation
(400, never 422), and the 500 that carries a request id the log also has."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from palaver.app import create_app
from palaver.config import Config
from tests.support import Api, Guest, Server, unique

LEAKS = ("Traceback", 'File "', "sqlalchemy", "SELECT ", "INSERT ", "sqlite", "pydantic")


def _is_error(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) - {"field"} == {"error"}, body
    error: str = body["error"]
    assert error and error[0].isupper() and error.rstrip("'\"").endswith((".", "?")), error
    assert not any(leak in response.text for leak in LEAKS), response.text
    return error


@pytest.mark.parametrize("path", ["/api/nope", "/api", "/api/agents/x/y/z", "/uploads/x"])
def test_unknown_routes_answer_404(server: Server, owner: Api, path: str) -> None:
    _is_error(owner.get(path), 404)
    with server.client() as anonymous:
        _is_error(anonymous.get(path), 404)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("DELETE", "/api/messages"),
        ("PATCH", "/api/agents"),
        ("GET", "/api/login"),
        ("PUT", "/api/me"),
    ],
)
def test_a_method_a_route_does_not_take_answers_405(owner: Api, method: str, path: str) -> None:
    response = owner.request(method, path)
    _is_error(response, 405)
    assert response.headers["allow"]


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("DELETE", "/api/messages", "GET, POST"),
        ("DELETE", "/api/settings", "GET, PUT"),
        ("POST", "/api/agents/agent_x", "DELETE, GET, PUT"),
        ("GET", "/api/login", "POST"),
    ],
)
def test_405_names_every_method_the_path_takes(
    owner: Api, method: str, path: str, allowed: str
) -> None:
    response = owner.request(method, path)
    _is_error(response, 405)
    assert response.headers["allow"] == allowed


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity"])
@pytest.mark.parametrize(
    "template",
    [
        '{{"channelId": "%s", "content": "hi", "type": "text", "metadata": {{"x": {v}}}}}',
        '{{"channelId": "%s", "content": "hi", "type": "text", '
        '"metadata": {{"a": [1, {{"b": {v}}}]}}}}',
        '{{"channelId": "%s", "content": {v}, "type": "text"}}',
    ],
    ids=["metadata", "nested", "field"],
)
def test_nan_and_infinity_are_refused_and_never_stored(
    owner: Api, template: str, value: str
) -> None:
    channel = owner.ok(
        "POST", "/api/channels", json={"name": unique("nan"), "type": "group", "agentIds": []}
    )["channel"]["id"]
    raw = (template.format(v=value) % channel).encode()
    response = owner.post(
        "/api/messages", content=raw, headers={"Content-Type": "application/json"}
    )
    error = _is_error(response, 400)
    assert value.lstrip("-") in error and "not a JSON number" in error
    assert owner.ok("GET", "/api/messages", params={"channelId": channel})["messages"] == []


def test_nan_in_settings_is_refused(owner: Api) -> None:
    raw = b'{"memory": {"duplicateThreshold": NaN}}'
    response = owner.put("/api/settings", content=raw, headers={"Content-Type": "application/json"})
    assert "not a JSON number" in _is_error(response, 400)


@pytest.mark.parametrize("depth", [65, 1000, 100_000])
def test_deeply_nested_json_answers_400(owner: Api, depth: int) -> None:
    nested = "[" * depth + "]" * depth
    raw = f'{{"name": "deep", "description": "x", "extra": {nested}}}'.encode()
    response = owner.post("/api/agents", content=raw, headers={"Content-Type": "application/json"})
    assert "levels deep" in _is_error(response, 400)


@pytest.mark.parametrize("path", ["/api/messages", "/api/chains"])
def test_an_empty_channel_id_is_refused_like_a_missing_one(owner: Api, path: str) -> None:
    assert "channelId" in _is_error(owner.get(path, params={"channelId": ""}), 400)
    assert "channelId" in _is_error(owner.get(path), 400)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/api/agents"),
        ("POST", "/api/messages"),
        ("PUT", "/api/settings"),
        ("POST", "/api/login"),
    ],
)
@pytest.mark.parametrize("raw", [b"{not json", b"", b'{"name": "x",}', b"\xff\xfe"])
def test_malformed_json_answers_400(owner: Api, method: str, path: str, raw: bytes) -> None:
    response = owner.request(
        method, path, content=raw, headers={"Content-Type": "application/json"}
    )
    _is_error(response, 400)


@pytest.mark.parametrize(
    ("method", "path", "kwargs"),
    [
        ("POST", "/api/agents", {"json": {"name": ["a list"]}}),
        ("POST", "/api/agents", {"json": [1, 2, 3]}),
        ("POST", "/api/agents", {"data": {"name": "a form"}}),
        ("POST", "/api/channels", {"json": {"name": "x", "type": "circle"}}),
        ("GET", "/api/messages", {"params": {"channelId": "ch_x", "limit": "many"}}),
        ("POST", "/api/messages", {"json": {"channelId": "ch_x", "content": "x", "metadata": 3}}),
        ("POST", "/api/guests", {"json": {}}),
        (
            "POST",
            "/api/messages",
            {"json": {"channelId": "c", "content": "x"}, "headers": {"Idempotency-Key": "k" * 201}},
        ),
    ],
)
def test_validation_failures_answer_400_never_422(
    owner: Api, method: str, path: str, kwargs: dict[str, Any]
) -> None:
    _is_error(owner.request(method, path, **kwargs), 400)


def test_a_body_over_8_mib_answers_413_without_being_read_whole(owner: Api) -> None:
    huge = b'{"name": "' + b"x" * (8 * 1024 * 1024) + b'"}'
    declared = owner.post("/api/agents", content=huge, headers={"Content-Type": "application/json"})
    assert "8388608 bytes" in _is_error(declared, 413)

    def chunks() -> Iterator[bytes]:
        """No Content-Length: the body is counted as it arrives."""
        yield b'{"channelId": "ch_x", "content": "'
        for _ in range(9):
            yield b"y" * (1024 * 1024)
        yield b'"}'

    streamed = owner.post(
        "/api/messages", content=chunks(), headers={"Content-Type": "application/json"}
    )
    _is_error(streamed, 413)
    assert owner.get("/api/me").status_code == 200


def test_calling_a_body_multipart_does_not_lift_the_cap_outside_the_upload_routes(
    server: Server,
) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(9):
            yield b"z" * (1024 * 1024)

    with server.client() as anonymous:
        answer = anonymous.post(
            "/api/login",
            content=chunks(),
            headers={"Content-Type": "multipart/form-data; boundary=x"},
        )
    _is_error(answer, 413)


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/login", {"password": "\ud800"}),
        ("/api/messages", {"channelId": "ch_x", "content": "hi \ud800"}),
        ("/api/messages", {"channelId": "ch_x", "content": "hi", "metadata": {"k": "\udfff"}}),
        ("/api/settings", {"defaultModel": "builtin/\ud800"}),
    ],
)
def test_text_that_is_not_valid_unicode_answers_400(
    owner: Api, path: str, body: dict[str, Any]
) -> None:
    raw = json.dumps(body).replace("\\\\u", "\\u").encode()
    method = "PUT" if path == "/api/settings" else "POST"
    answer = owner.request(method, path, content=raw, headers={"Content-Type": "application/json"})
    assert "Unicode" in _is_error(answer, 400)


def test_error_messages_name_what_is_wrong(owner: Api) -> None:
    assert _is_error(owner.post("/api/agents", json={"name": "x", "colour": 1}), 400) == (
        "Unknown field 'colour'."
    )
    assert "name" in _is_error(owner.post("/api/agents", json={}), 400)
    error = _is_error(
        owner.post("/api/agents", content=b"{", headers={"Content-Type": "application/json"}), 400
    )
    assert error == "The request body is not valid JSON."


def test_unauthenticated_forbidden_and_missing_answer_json(server: Server, owner: Api) -> None:
    with server.client() as anonymous:
        wrong = anonymous.post(
            "/api/login", json={"password": "nope"}, headers={"X-Forwarded-For": "10.254.0.1"}
        )
        _is_error(wrong, 401)
        _is_error(anonymous.get("/api/agents"), 401)
    with Guest(server, owner) as guest:
        _is_error(guest.api.get("/api/settings"), 403)
    _is_error(owner.get("/api/agents/agent_missing"), 404)


async def test_an_unexpected_failure_answers_500_with_a_request_id_that_the_log_has(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """No route fails on purpose, so one is added to the real app for this test."""
    app = create_app(Config(OWNER_KEY="owner-key-long-enough", data_dir=tmp_path))

    @app.get("/api/explode")
    async def explode() -> None:
        raise RuntimeError("SELECT token_hash FROM sessions WHERE secret = 'hunter2'")

    app.router.routes.insert(0, app.router.routes.pop())  # before the page's catch-all

    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    with caplog.at_level(logging.ERROR):
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            response = await client.get("/api/explode")
    assert response.status_code == 500
    body = response.json()
    assert set(body) == {"error", "requestId"}
    assert body["requestId"].startswith("req_")
    assert not any(leak in response.text for leak in LEAKS) and "hunter2" not in response.text
    logged = [r for r in caplog.records if body["requestId"] in r.getMessage()]
    assert logged and logged[0].exc_info is not None, "the log has the id and the traceback"
