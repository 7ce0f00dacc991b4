"""Who may call what: every endpoint with no cookie, an expired, a revoked, a guest's and the
owner's session."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from tests.endpoints import ENDPOINTS, PUBLIC, Endpoint, Targets, openapi_template
from tests.support import (
    Api,
    Guest,
    Server,
    expired_login,
    new_agent,
    new_channel,
    post,
    revoked_login,
    unique,
)


def new_document(owner: Api, agent_id: str) -> str:
    text = f"A note about {unique()}.".encode()
    body = owner.ok(
        "POST",
        "/api/rag/upload",
        files={"file": ("note.txt", text, "text/plain")},
        data={"agentId": agent_id},
    )
    document_id: str = body["document"]["id"]
    return document_id


def new_memory(owner: Api, agent_id: str) -> str:
    body = owner.ok(
        "POST", f"/api/agents/{agent_id}/memories", json={"content": "The owner drinks tea."}
    )
    memory_id: str = body["memory"]["id"]
    return memory_id


@dataclass
class World:
    server: Server
    owner: Api
    guest: Guest
    targets: Targets

    def targets_for(self, endpoint: Endpoint) -> Targets:
        targets = dict(self.targets)
        if endpoint.consumes == "agent":
            targets["agent"] = new_agent(self.owner)["id"]
        elif endpoint.consumes == "guest":
            guest = Guest(self.server, self.owner)
            guest.close()
            targets["guest"] = guest.id
        elif endpoint.consumes == "document":
            targets["document"] = new_document(self.owner, targets["agent"])
        elif endpoint.consumes == "channel":
            targets["channel"] = new_channel(self.owner)["id"]
        elif endpoint.consumes == "message":
            targets["message"] = post(self.owner, targets["channel"])
        elif endpoint.consumes == "memory":
            targets["agent"] = new_agent(self.owner)["id"]
            targets["memory"] = new_memory(self.owner, targets["agent"])
        return targets

    def call(self, api: httpx.Client, endpoint: Endpoint) -> httpx.Response:
        targets = self.targets_for(endpoint)
        path = endpoint.path.format(**targets)
        if endpoint.upload:
            note = ("note.txt", b"hello", "text/plain")
            files = {"file": endpoint.file(targets) if endpoint.file else note}
            data = endpoint.form(targets) if endpoint.form else None
            return api.request(endpoint.method, path, files=files, data=data)
        body = endpoint.json(targets) if endpoint.json else None
        return api.request(endpoint.method, path, json=body)


@pytest.fixture(scope="module")
def world(server: Server, owner: Api) -> Iterator[World]:
    agent = new_agent(owner)["id"]
    channel = new_channel(owner, agent_ids=[agent])["id"]
    guest = Guest(server, owner)
    upload = owner.ok("POST", "/api/upload", files={"file": ("a.txt", b"hi", "text/plain")})["url"]
    chain = owner.ok(
        "POST", "/api/chains", json={"channelId": channel, "agentIds": [agent], "content": "go"}
    )["chain"]["id"]
    targets = {
        "agent": agent,
        "channel": channel,
        "message": post(owner, channel),
        "upload": upload,
        "chain": chain,
        "schedule": "sched_none",
        "document": new_document(owner, agent),
        "memory": new_memory(owner, agent),
    }
    yield World(server, owner, guest, targets)
    guest.close()


def _is_error(response: httpx.Response, status: int) -> None:
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) - {"field"} == {"error"} and isinstance(body["error"], str) and body["error"]


by_endpoint = pytest.mark.parametrize("endpoint", ENDPOINTS, ids=lambda e: e.id)


@by_endpoint
def test_without_a_cookie_every_endpoint_answers_401(world: World, endpoint: Endpoint) -> None:
    with world.server.client() as anonymous:
        _is_error(world.call(anonymous, endpoint), 401)


@by_endpoint
def test_with_an_unknown_token_every_endpoint_answers_401(world: World, endpoint: Endpoint) -> None:
    with world.server.client(cookies={"session": "not-a-token-we-ever-gave"}) as stranger:
        _is_error(world.call(stranger, endpoint), 401)


@by_endpoint
def test_with_an_expired_session_every_endpoint_answers_401(
    world: World, endpoint: Endpoint
) -> None:
    with expired_login(world.server) as expired:
        _is_error(world.call(expired, endpoint), 401)


@by_endpoint
def test_with_a_revoked_session_every_endpoint_answers_401(
    world: World, endpoint: Endpoint
) -> None:
    with revoked_login(world.server) as revoked:
        _is_error(world.call(revoked, endpoint), 401)


@by_endpoint
def test_a_guest_gets_403_on_administration_and_404_on_channels_it_is_not_in(
    world: World, endpoint: Endpoint
) -> None:
    with world.server.login(world.guest.key) as guest:
        response = world.call(guest, endpoint)
    if endpoint.admin:
        _is_error(response, 403)
    elif endpoint.scoped:
        _is_error(response, 404)
    else:
        assert response.status_code == 200, response.text


@by_endpoint
def test_the_owner_may_call_every_endpoint(world: World, endpoint: Endpoint) -> None:
    with world.server.login() as owner:
        response = world.call(owner, endpoint)
    assert response.status_code == endpoint.owner_status, response.text


def test_login_is_the_only_endpoint_that_needs_no_session(world: World) -> None:
    """The table above covers every route the service has, so a new one cannot slip by."""
    schema = world.owner.ok("GET", "/api/openapi.json")
    routes = {
        (method.upper(), path)
        for path, operations in schema["paths"].items()
        for method in operations
    }
    tabled = {(e.method, openapi_template(e)) for e in ENDPOINTS}
    assert routes - tabled == {PUBLIC}
    assert tabled <= routes
