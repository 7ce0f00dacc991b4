"""The settings screen: a provider added in the page, its connection tested (the provider's
own error for a wrong key, its models for the right one), secrets only ever shown masked."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

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
