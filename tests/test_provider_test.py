"""`POST /api/settings/providers/test`: the settings page's "test connection" button."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.openai_server import FakeOpenAI
from tests.support import Api, Guest, Server, free_port, unique

KEY = "sk-provider-test-key-0123456789"


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key=KEY, models=("gpt-fake", "gpt-other")) as server:
        yield server


def test_a_provider_with_the_right_key_lists_its_models(owner: Api, fake: FakeOpenAI) -> None:
    body = {"type": "openai", "baseUrl": fake.base_url, "apiKey": KEY}
    answer = owner.ok("POST", "/api/settings/providers/test", json=body)
    assert answer == {"ok": True, "models": ["gpt-fake", "gpt-other"]}


def test_a_wrong_key_shows_the_providers_error_without_the_key(
    owner: Api, fake: FakeOpenAI
) -> None:
    wrong = "sk-wrong-key-that-must-not-come-back"
    body = {"type": "openai", "baseUrl": fake.base_url, "apiKey": wrong}
    response = owner.post("/api/settings/providers/test", json=body)
    assert response.status_code == 200
    answer = response.json()
    assert answer["ok"] is False and "models" not in answer
    assert "401" in answer["error"] and "Invalid API key" in answer["error"]
    assert wrong not in response.text and wrong[-4:] not in response.text


def test_the_masked_key_sent_back_means_the_stored_key(owner: Api, fake: FakeOpenAI) -> None:
    provider = unique("p")
    config = {"type": "openai", "baseUrl": fake.base_url, "apiKey": KEY}
    settings = owner.ok("PUT", "/api/settings", json={"providers": {provider: config}})
    try:
        masked = settings["settings"]["providers"][provider]["apiKey"]
        assert masked != KEY and masked.endswith(KEY[-4:])
        body = {"id": provider, "type": "openai", "baseUrl": fake.base_url, "apiKey": masked}
        response = owner.post("/api/settings/providers/test", json=body)
        assert response.json()["ok"] is True and KEY not in response.text
        as_new = owner.ok("POST", "/api/settings/providers/test", json={**body, "id": unique("q")})
        assert as_new == {
            "ok": False,
            "error": "The key is masked and no saved provider has it; type the whole key.",
        }
    finally:
        owner.put("/api/settings", json={"providers": {provider: None}}).raise_for_status()


def test_an_unreachable_provider_is_an_answer_not_a_failure(owner: Api) -> None:
    body = {"type": "openai", "baseUrl": f"http://127.0.0.1:{free_port()}/v1", "apiKey": KEY}
    answer = owner.ok("POST", "/api/settings/providers/test", json=body)
    assert answer["ok"] is False and "Could not reach" in answer["error"]
    malformed = owner.ok(
        "POST", "/api/settings/providers/test", json={**body, "baseUrl": "ftp://x"}
    )
    assert malformed["ok"] is False and "base URL" in malformed["error"]
    bad = owner.post("/api/settings/providers/test", json={**body, "type": "cohere"})
    assert bad.status_code == 400 and "error" in bad.json()


def test_guests_may_not_test_providers(server: Server, owner: Api, fake: FakeOpenAI) -> None:
    with Guest(server, owner) as guest:
        body = {"type": "openai", "baseUrl": fake.base_url, "apiKey": KEY}
        response = guest.api.post("/api/settings/providers/test", json=body)
        assert response.status_code == 403 and "error" in response.json()
    assert all(r.path != "/v1/models" or r.headers.get("authorization") for r in fake.requests)
