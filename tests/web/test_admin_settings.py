"""The settings screen: a provider added in the page, its connection tested (the provider's
own error for a wrong key, its models for the right one), secrets only ever shown masked, an
MCP server's env var deleted in the page gone for good, hints that follow the provider type."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from tests.fakes.mcp_server import configured_stdio
from tests.fakes.openai_server import FakeOpenAI
from tests.support import Api, Server, unique
from tests.web.conftest import Browse, log_in
from tests.web.test_accessibility import serious

RIGHT_KEY = "sk-right-key-for-the-settings-page-7f3a"
WRONG_KEY = "sk-wrong-key-typed-by-mistake-0000"


@pytest.fixture(scope="module")
def keyed_model() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key=RIGHT_KEY, models=("keyed-large", "keyed-small")) as fake:
        yield fake


def test_a_provider_added_with_a_wrong_key_shows_the_providers_error_then_works(
    browse: Browse, web_server: Server, web_owner: Api, keyed_model: FakeOpenAI
) -> None:
    provider = unique("keyed")
    page = browse.page()
    log_in(page, web_server.owner_key, "/admin/settings")
    page.get_by_role("button", name="Add provider").click()
    card = page.get_by_role("form", name="New provider")
    card.get_by_label("Id").fill(provider)
    card.get_by_label("Base URL").fill(keyed_model.base_url)
    card.get_by_label("API key").fill(WRONG_KEY)
    card.get_by_role("button", name="Test connection").click()
    error = card.get_by_role("alert")
    expect(error).to_contain_text("answered 401")
    expect(error).to_contain_text("Invalid API key.")
    assert WRONG_KEY not in (error.text_content() or "")

    card.get_by_label("API key").fill(RIGHT_KEY)
    card.get_by_role("button", name="Test connection").click()
    expect(card.get_by_role("list", name="The provider's models")).to_contain_text("keyed-large")
    card.get_by_role("button", name="Save").click()

    saved = page.get_by_role("form", name=f"Provider {provider}")
    key_field = saved.get_by_label("API key")
    expect(key_field).to_have_value(re.compile(f"^••••{RIGHT_KEY[-4:]}$"))
    saved.get_by_role("button", name="Test connection").click()
    expect(saved.get_by_role("list", name="The provider's models")).to_contain_text("keyed-small")
    stored = web_owner.ok("GET", "/api/settings")["settings"]["providers"][provider]
    assert stored["apiKey"] == f"••••{RIGHT_KEY[-4:]}"
    assert serious(page) == []

    saved.get_by_role("button", name="Remove").click()
    expect(page.get_by_role("form", name=f"Provider {provider}")).to_have_count(0)
    assert provider not in web_owner.ok("GET", "/api/settings")["settings"]["providers"]


def test_limits_and_the_session_lifetime_are_saved_from_the_page(
    browse: Browse, web_server: Server, web_owner: Api
) -> None:
    page = browse.page()
    log_in(page, web_server.owner_key, "/admin/settings")
    page.get_by_label("Sessions end after idle days").fill("45")
    page.get_by_label("Active schedules per guest").fill("7")
    page.get_by_role("button", name="Save limits").click()
    expect(page.get_by_role("status").filter(has_text="Saved.")).to_be_visible()
    settings = web_owner.ok("GET", "/api/settings")["settings"]
    assert settings["sessionIdleDays"] == 45 and settings["limits"]["guestSchedules"] == 7
    web_owner.ok(
        "PUT", "/api/settings", json={"sessionIdleDays": 30, "limits": {"guestSchedules": 5}}
    )


def test_an_env_var_deleted_in_the_screen_is_gone_after_saving_and_reloading(
    browse: Browse, web_server: Server, web_owner: Api
) -> None:
    server_id = unique("envs")
    env = {"KEEP_TOKEN": "kept-secret-value-1234", "DROP_TOKEN": "dropped-secret-5678"}
    with configured_stdio(web_owner, server_id, env):
        page = browse.page()
        log_in(page, web_server.owner_key, "/admin/settings")
        card = page.get_by_role("form", name=f"MCP server {server_id}")
        field = card.get_by_label("Environment, NAME=value per line")
        expect(field).to_have_value("KEEP_TOKEN=••••1234\nDROP_TOKEN=••••5678")

        field.fill("KEPT_UNDER_A_NEW_NAME=••••1234")
        card.get_by_role("button", name="Save").click()
        expect(card.get_by_role("alert")).to_have_text(
            "Type the value of KEPT_UNDER_A_NEW_NAME again."
        )

        field.fill("KEEP_TOKEN=••••1234")
        card.get_by_role("button", name="Save").click()
        expect(
            page.get_by_role("status").filter(has_text=f"MCP server {server_id} saved.")
        ).to_be_visible()
        page.reload()
        field = page.get_by_role("form", name=f"MCP server {server_id}").get_by_label(
            "Environment, NAME=value per line"
        )
        expect(field).to_have_value("KEEP_TOKEN=••••1234")
        shown = web_owner.ok("GET", "/api/settings")["settings"]["mcpServers"][server_id]
        assert shown["env"] == {"KEEP_TOKEN": "••••1234"}


def test_the_base_url_hint_follows_the_provider_type(
    browse: Browse, web_server: Server, web_owner: Api
) -> None:
    provider = unique("claude")
    web_owner.ok("PUT", "/api/settings", json={"providers": {provider: {"type": "anthropic"}}})
    try:
        page = browse.page()
        log_in(page, web_server.owner_key, "/admin/settings")
        saved = page.get_by_role("form", name=f"Provider {provider}")
        expect(saved.get_by_label("Base URL")).to_have_attribute(
            "placeholder", "https://api.anthropic.com"
        )
        expect(saved.get_by_label("Base URL")).to_have_accessible_description(
            "Empty for Anthropic's API."
        )

        page.get_by_role("button", name="Add provider").click()
        card = page.get_by_role("form", name="New provider")
        base_url = card.get_by_label("Base URL")
        expect(base_url).to_have_attribute("placeholder", "https://api.openai.com/v1")
        card.get_by_label("Type").select_option("anthropic")
        expect(base_url).to_have_attribute("placeholder", "https://api.anthropic.com")
        expect(card.get_by_label("Id")).to_have_attribute("placeholder", "e.g. anthropic")
        expect(base_url).to_have_accessible_description("Empty for Anthropic's API.")
    finally:
        web_owner.ok("PUT", "/api/settings", json={"providers": {provider: None}})
