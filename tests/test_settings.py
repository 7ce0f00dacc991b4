"""Run-time settings: the shape, masked secrets, deep merges, and secrets that never leak."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import Api, Server, sql, unique

MASK = "••••"


def _stored(server: Server) -> dict[str, Any]:
    """The settings exactly as the database holds them."""
    (data,) = sql(server, "SELECT data FROM settings WHERE id = 1")[0]
    stored: dict[str, Any] = json.loads(data)
    return stored


def _put(owner: Api, patch: Any) -> dict[str, Any]:
    settings: dict[str, Any] = owner.ok("PUT", "/api/settings", json=patch)["settings"]
    return settings


@pytest.fixture
def ids(owner: Api) -> Iterator[tuple[str, str]]:
    """A provider id and an MCP server id of the test's own, removed after it."""
    provider, mcp = unique("p"), unique("m")
    yield provider, mcp
    _put(owner, {"providers": {provider: None}, "mcpServers": {mcp: None}})


def test_settings_have_the_documented_shape(owner: Api) -> None:
    settings = owner.ok("GET", "/api/settings")["settings"]
    assert {"providers", "defaultModel", "embedding", "webSearch", "mcpServers", "limits"} <= set(
        settings
    )
    assert settings["sessionIdleDays"] == 30
    assert set(settings["embedding"]) == {"provider", "model"}
    assert set(settings["webSearch"]) == {"provider", "baseUrl", "apiKey"}
    assert {"messagesPerMinute", "maxMessageChars", "maxUploadBytes"} <= set(settings["limits"])
    assert settings["limits"]["maxMessageChars"] == 32_000
    assert settings["limits"]["maxUploadBytes"] == 25 * 1024 * 1024
    assert "/" in settings["defaultModel"]


def test_every_secret_is_masked_to_its_last_four_characters(
    server: Server, owner: Api, ids: tuple[str, str]
) -> None:
    provider, mcp = ids
    secrets = {
        "api": "sk-live-" + unique("api-") + "WXYZ",
        "env": "env-" + unique("secret-") + "ENV1",
        "header": "Bearer " + unique("tok-") + "HDR2",
    }
    patch = {
        "providers": {
            provider: {"type": "openai", "baseUrl": "http://x", "apiKey": secrets["api"]}
        },
        "mcpServers": {
            mcp: {
                "url": "http://mcp.example/mcp",
                "headers": {"Authorization": secrets["header"]},
                "env": {"TOKEN": secrets["env"]},
            }
        },
    }
    for settings in (_put(owner, patch), owner.ok("GET", "/api/settings")["settings"]):
        assert settings["providers"][provider]["apiKey"] == MASK + "WXYZ"
        assert settings["providers"][provider]["baseUrl"] == "http://x"
        assert settings["mcpServers"][mcp]["headers"] == {"Authorization": MASK + "HDR2"}
        assert settings["mcpServers"][mcp]["env"] == {"TOKEN": MASK + "ENV1"}
        text = json.dumps(settings)
        assert not any(secret in text for secret in secrets.values())
    stored = _stored(server)
    assert stored["providers"][provider]["apiKey"] == secrets["api"]
    assert stored["mcpServers"][mcp]["headers"]["Authorization"] == secrets["header"]


def test_credentials_in_urls_are_masked_and_kept_when_sent_back(
    server: Server, owner: Api, ids: tuple[str, str]
) -> None:
    provider, mcp = ids
    password, token, key = unique("pw-"), unique("tok-"), unique("key-")
    urls = {
        "provider": f"https://bob:{password}@llm.example/v1?api_key={key}&region=eu",
        "mcp": f"https://{token}@mcp.example/mcp?sig={key}",
        "search": f"http://searx.example/?token={token}&lang=en",
    }
    patch = {
        "providers": {provider: {"type": "openai", "baseUrl": urls["provider"]}},
        "mcpServers": {mcp: {"url": urls["mcp"]}},
        "webSearch": {"provider": "searxng", "baseUrl": urls["search"]},
    }
    try:
        for settings in (_put(owner, patch), owner.ok("GET", "/api/settings")["settings"]):
            text = json.dumps(settings, ensure_ascii=False)
            assert not any(secret in text for secret in (password, token, key))
            assert settings["providers"][provider]["baseUrl"] == (
                f"https://bob:{MASK}@llm.example/v1?api_key={MASK}&region=eu"
            )
            assert (
                settings["mcpServers"][mcp]["url"] == f"https://{MASK}@mcp.example/mcp?sig={MASK}"
            )
            assert settings["webSearch"]["baseUrl"] == f"http://searx.example/?token={MASK}&lang=en"
        shown = owner.ok("GET", "/api/settings")["settings"]
        _put(
            owner,
            {
                "providers": shown["providers"],
                "mcpServers": shown["mcpServers"],
                "webSearch": shown["webSearch"],
            },
        )
        stored = _stored(server)
        assert stored["providers"][provider]["baseUrl"] == urls["provider"]
        assert stored["mcpServers"][mcp]["url"] == urls["mcp"]
        assert stored["webSearch"]["baseUrl"] == urls["search"]
    finally:
        _put(owner, {"webSearch": {"provider": None, "baseUrl": None}})


def test_urls_in_mcp_command_arguments_are_masked_and_kept_when_sent_back(
    server: Server, owner: Api, ids: tuple[str, str]
) -> None:
    _, mcp = ids
    password = unique("pw-")
    args = ["-y", "server-postgres", f"postgresql://app:{password}@db.example/app"]
    settings = _put(owner, {"mcpServers": {mcp: {"command": "npx", "args": args}}})
    shown = settings["mcpServers"][mcp]["args"]
    assert shown == ["-y", "server-postgres", f"postgresql://app:{MASK}@db.example/app"]
    assert password not in json.dumps(owner.ok("GET", "/api/settings"), ensure_ascii=False)
    _put(owner, {"mcpServers": {mcp: {"args": shown}}})
    assert _stored(server)["mcpServers"][mcp]["args"] == args
    _put(owner, {"mcpServers": {mcp: {"args": ["--other"]}}})
    assert _stored(server)["mcpServers"][mcp]["args"] == ["--other"]


def test_a_short_secret_shows_nothing_of_itself(owner: Api, ids: tuple[str, str]) -> None:
    provider, _ = ids
    settings = _put(owner, {"providers": {provider: {"type": "openai", "apiKey": "abc123"}}})
    assert settings["providers"][provider]["apiKey"] == MASK


def test_a_masked_secret_sent_back_keeps_the_stored_one(
    server: Server, owner: Api, ids: tuple[str, str]
) -> None:
    provider, mcp = ids
    key, env = "sk-" + unique("k") + "AAAA", unique("e") + "BBBB"
    _put(
        owner,
        {
            "providers": {provider: {"type": "anthropic", "apiKey": key}},
            "mcpServers": {mcp: {"command": "srv", "env": {"KEY": env}}},
        },
    )
    shown = owner.ok("GET", "/api/settings")["settings"]
    shown["providers"][provider]["baseUrl"] = "http://changed"
    round_trip = _put(owner, shown)
    assert round_trip["providers"][provider]["apiKey"] == MASK + "AAAA"
    stored = _stored(server)
    assert stored["providers"][provider]["apiKey"] == key
    assert stored["providers"][provider]["baseUrl"] == "http://changed"
    assert stored["mcpServers"][mcp]["env"]["KEY"] == env


def test_a_new_secret_replaces_the_stored_one(
    server: Server, owner: Api, ids: tuple[str, str]
) -> None:
    provider, _ = ids
    _put(owner, {"providers": {provider: {"type": "openai", "apiKey": "first-key-0001"}}})
    _put(owner, {"providers": {provider: {"apiKey": "second-key-0002"}}})
    assert _stored(server)["providers"][provider]["apiKey"] == "second-key-0002"


def test_an_update_deep_merges_into_what_is_there(
    server: Server, owner: Api, ids: tuple[str, str]
) -> None:
    provider, _ = ids
    before = owner.ok("GET", "/api/settings")["settings"]
    _put(owner, {"providers": {provider: {"type": "openai", "apiKey": "key-for-merging"}}})
    after = _put(owner, {"providers": {provider: {"baseUrl": "http://merged"}}})
    assert after["providers"][provider]["type"] == "openai"
    assert after["providers"][provider]["baseUrl"] == "http://merged"
    assert _stored(server)["providers"][provider]["apiKey"] == "key-for-merging"
    assert {k: v for k, v in after.items() if k != "providers"} == {
        k: v for k, v in before.items() if k != "providers"
    }
    assert after["limits"] == before["limits"]


def test_null_removes_an_entry_of_a_map(owner: Api, ids: tuple[str, str]) -> None:
    provider, _ = ids
    _put(owner, {"providers": {provider: {"type": "builtin"}}})
    assert provider not in _put(owner, {"providers": {provider: None}})["providers"]


def test_null_removes_an_env_var_or_header_of_an_mcp_server(
    server: Server, owner: Api, ids: tuple[str, str]
) -> None:
    _, mcp = ids
    keep, gone = unique("keep-") + "KEEP", unique("gone-") + "GONE"
    _put(owner, {"mcpServers": {mcp: {"command": "srv", "env": {"KEEP": keep, "GONE": gone}}}})
    shown = owner.ok("GET", "/api/settings")["settings"]["mcpServers"][mcp]
    shown["env"]["GONE"] = None
    after = _put(owner, {"mcpServers": {mcp: shown}})
    assert after["mcpServers"][mcp]["env"] == {"KEEP": MASK + "KEEP"}
    assert owner.ok("GET", "/api/settings")["settings"]["mcpServers"][mcp]["env"] == {
        "KEEP": MASK + "KEEP"
    }
    assert _stored(server)["mcpServers"][mcp]["env"] == {"KEEP": keep}

    headers = {"A": "1", "B": "2"}
    _put(owner, {"mcpServers": {mcp: {"url": "http://mcp.example", "headers": headers}}})
    _put(owner, {"mcpServers": {mcp: {"headers": {"A": None, "C": "3"}}}})
    assert _stored(server)["mcpServers"][mcp]["headers"] == {"B": "2", "C": "3"}


def test_a_masked_value_under_another_name_answers_400_and_keeps_the_secret(
    server: Server, owner: Api, ids: tuple[str, str]
) -> None:
    provider, mcp = ids
    secret = unique("secret-") + "WXYZ"
    _put(owner, {"mcpServers": {mcp: {"command": "srv", "env": {"OLD_NAME": secret}}}})
    before = _stored(server)
    for patch in (
        {"mcpServers": {mcp: {"env": {"OLD_NAME": None, "NEW_NAME": MASK + "WXYZ"}}}},
        {"providers": {provider: {"type": "openai", "apiKey": MASK + "WXYZ"}}},
    ):
        response = owner.put("/api/settings", json=patch)
        assert response.status_code == 400, response.text
        assert set(response.json()) - {"field"} == {"error"}
        assert "send the secret itself" in response.json()["error"]
        assert _stored(server) == before


def test_null_for_an_entry_that_is_not_there_changes_nothing(
    server: Server, owner: Api, ids: tuple[str, str]
) -> None:
    _, mcp = ids
    patch = {"mcpServers": {mcp: {"command": "srv", "env": {"NEW": "value", "NEVER": None}}}}
    assert _put(owner, patch)["mcpServers"][mcp]["env"] == {"NEW": MASK}
    _put(owner, {"mcpServers": {mcp: {"env": {"NEVER": None}}}})
    assert _stored(server)["mcpServers"][mcp]["env"] == {"NEW": "value"}


@pytest.mark.parametrize(
    "patch",
    [
        {"colour": "blue"},
        {"limits": {"messagesPerHour": 5}},
        {"providers": {"PROVIDER": {"type": "openai", "region": "eu"}}},
        {"webSearch": {"engine": "x"}},
    ],
    ids=["top-level", "nested", "in-a-map-entry", "web-search"],
)
def test_unknown_keys_answer_400_naming_the_key(
    server: Server, owner: Api, ids: tuple[str, str], patch: dict[str, Any]
) -> None:
    patch = json.loads(json.dumps(patch).replace("PROVIDER", ids[0]))
    before = _stored(server)
    response = owner.put("/api/settings", json=patch)
    assert response.status_code == 400
    assert set(response.json()) == {"error", "field"}
    assert "Unknown setting" in response.json()["error"]
    assert response.json()["field"] in response.json()["error"]
    assert _stored(server) == before


@pytest.mark.parametrize(
    "patch",
    [
        {"limits": {"maxMessageChars": 0}},
        {"limits": {"messagesPerMinute": "many"}},
        {"limits": {"messagesPerMinute": "40"}},
        {"sessionIdleDays": True},
        {"memory": {"injectTopK": 2.5}},
        {"sessionIdleDays": 0},
        {"providers": {"PROVIDER": {"type": "closedai"}}},
        {"providers": {"PROVIDER": {"apiKey": "a provider needs a type"}}},
        {"providers": None},
        {"mcpServers": {"MCP": {"env": None}}},
        {"mcpServers": {"MCP": {"headers": None}}},
        {"mcpServers": {"MCP": {"args": None}}},
        {"mcpServers": {"MCP": {"env": {"PORT": 8080}}}},
        {"mcpServers": {"MCP": {"env": {"A": {"B": None}}}}},
        {"mcpServers": {"MCP": {"headers": {"X-Team": ["blue"]}}}},
        {"limits": {"messagesPerMinute": None}},
        ["not", "an", "object"],
    ],
    ids=[
        "zero",
        "not-a-number",
        "number-as-text",
        "boolean-as-number",
        "fraction",
        "idle-days",
        "provider-type",
        "no-type",
        "null-map",
        "null-env",
        "null-headers",
        "null-args",
        "number-env-value",
        "object-env-value",
        "list-header-value",
        "null-limit",
        "list",
    ],
)
def test_invalid_values_answer_400_and_change_nothing(
    server: Server, owner: Api, ids: tuple[str, str], patch: Any
) -> None:
    patch = json.loads(json.dumps(patch).replace("PROVIDER", ids[0]).replace("MCP", ids[1]))
    _put(owner, {"mcpServers": {ids[1]: {"command": "srv", "env": {"A": "1"}}}})
    before = _stored(server)
    response = owner.put("/api/settings", json=patch)
    assert response.status_code == 400, response.text
    assert set(response.json()) - {"field"} == {"error"}
    assert _stored(server) == before


def test_a_refused_price_names_its_field_with_the_model_whole(owner: Api) -> None:
    """A form puts the message under the field: the model's name, dots and all, stays whole."""
    patch = {"prices": {"oai/gpt-4.1": {"input": 1, "output": -2}}}
    response = owner.put("/api/settings", json=patch)
    assert response.status_code == 400
    assert response.json()["field"] == "prices.oai/gpt-4.1.output"
    assert "'prices.oai/gpt-4.1.output'" in response.json()["error"]


def test_the_default_model_must_name_a_configured_provider(
    owner: Api, ids: tuple[str, str]
) -> None:
    provider, _ = ids
    for model, status in (("no-slash", 400), (f"{provider}/gpt-4o", 409)):
        response = owner.put("/api/settings", json={"defaultModel": model})
        assert response.status_code == status
        assert "defaultModel" in response.json()["error"]
    patch = {"providers": {provider: {"type": "openai"}}, "defaultModel": f"{provider}/gpt-4o"}
    assert _put(owner, patch)["defaultModel"] == f"{provider}/gpt-4o"
    try:
        response = owner.put("/api/settings", json={"providers": {provider: None}})
        assert response.status_code == 409, "its provider cannot go while it is the default"
    finally:
        _put(owner, {"defaultModel": "builtin/echo"})


def test_a_whole_number_written_with_a_decimal_point_is_an_integer(owner: Api) -> None:
    """JSON Schema counts 40.0 an integer, so the schema promises it is accepted."""
    assert _put(owner, {"sessionIdleDays": 40.0})["sessionIdleDays"] == 40
    assert _put(owner, {"sessionIdleDays": 30})["sessionIdleDays"] == 30


def test_secrets_never_reach_the_log_or_an_error(
    server: Server, owner: Api, ids: tuple[str, str]
) -> None:
    provider, mcp = ids
    secret = "sk-" + unique("never-logged-")
    response = owner.put(
        "/api/settings", json={"providers": {provider: {"type": "nope", "apiKey": secret}}}
    )
    assert response.status_code == 400
    assert secret not in response.text
    _put(owner, {"providers": {provider: {"type": "openai", "apiKey": secret}}})
    _put(owner, {"mcpServers": {mcp: {"command": "x", "env": {"K": secret}}}})
    owner.ok("GET", "/api/settings")
    assert secret not in server.read_log()
