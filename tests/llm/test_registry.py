"""Resolving "provider/model" against live settings, and listing every provider's models."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from palaver.llm.anthropic import AnthropicProvider
from palaver.llm.base import ChatMessage, ProviderError, TextDelta
from palaver.llm.builtin import BuiltinProvider
from palaver.llm.openai import OpenAIProvider
from palaver.llm.registry import ProviderRegistry
from palaver.settings import Settings
from tests.fakes import FakeAnthropic, FakeOpenAI, http_error, text
from tests.support import free_port


class LiveSettings:
    """Stands in for the settings store: tests change `current` as the owner would."""

    def __init__(self, providers: dict[str, Any] | None = None) -> None:
        self.current = Settings.model_validate({"providers": providers or {}})

    def __call__(self) -> Settings:
        return self.current

    def set(self, providers: dict[str, Any]) -> None:
        self.current = Settings.model_validate({"providers": providers})


@pytest.fixture
def openai_fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(models=["gpt-fake"]) as fake:
        yield fake


@pytest.fixture
def anthropic_fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(models=[("claude-fake", "Claude Fake")]) as fake:
        yield fake


@pytest.fixture
def settings(openai_fake: FakeOpenAI, anthropic_fake: FakeAnthropic) -> LiveSettings:
    return LiveSettings(
        {
            "acme": {"type": "openai", "baseUrl": openai_fake.base_url, "contextWindow": 32000},
            "claude": {"type": "anthropic", "baseUrl": anthropic_fake.base_url, "apiKey": "k"},
        }
    )


@pytest.fixture
async def registry(settings: LiveSettings) -> AsyncIterator[ProviderRegistry]:
    providers = ProviderRegistry(settings)
    yield providers
    await providers.aclose()


async def test_builtin_resolves_without_any_configuration() -> None:
    registry = ProviderRegistry(LiveSettings())
    provider, name = await registry.resolve("builtin/echo")
    assert isinstance(provider, BuiltinProvider)
    assert name == "echo"
    assert registry.context_window("builtin/echo") == 8192
    await registry.aclose()


async def test_the_model_is_split_on_the_first_slash_only(registry: ProviderRegistry) -> None:
    provider, name = await registry.resolve("acme/meta-llama/Llama-3.1-8B")
    assert isinstance(provider, OpenAIProvider)
    assert provider.id == "acme"
    assert name == "meta-llama/Llama-3.1-8B"


async def test_each_type_gets_its_adapter(registry: ProviderRegistry) -> None:
    assert isinstance((await registry.resolve("claude/claude-fake"))[0], AnthropicProvider)


async def test_an_unknown_provider_is_a_readable_error(registry: ProviderRegistry) -> None:
    with pytest.raises(ProviderError) as caught:
        await registry.resolve("mistral/large")
    assert str(caught.value) == (
        "There is no model provider 'mistral'; the configured ones are 'acme', 'builtin', 'claude'."
    )


@pytest.mark.parametrize("model", ["echo", "/echo", "builtin/", ""])
async def test_a_model_without_provider_or_name_is_a_readable_error(
    registry: ProviderRegistry, model: str
) -> None:
    with pytest.raises(ProviderError, match="should read '<provider>/<model name>'"):
        await registry.resolve(model)


def test_context_window_follows_the_provider_settings(registry: ProviderRegistry) -> None:
    assert registry.context_window("acme/gpt-fake") == 32000
    assert registry.context_window("claude/claude-fake") == 8192
    with pytest.raises(ProviderError):
        registry.context_window("nobody/model")


async def test_adapters_are_kept_until_their_settings_change(
    registry: ProviderRegistry, settings: LiveSettings, openai_fake: FakeOpenAI
) -> None:
    first, _ = await registry.resolve("acme/gpt-fake")
    assert (await registry.resolve("acme/gpt-fake"))[0] is first
    providers = settings.current.model_dump()["providers"]
    providers["acme"]["apiKey"] = "sk-new-key"
    settings.set(providers)
    second, _ = await registry.resolve("acme/gpt-fake")
    assert second is not first
    assert (await registry.resolve("claude/claude-fake"))[0] is (
        await registry.resolve("claude/claude-fake")
    )[0]
    deltas = [d async for d in second.stream("gpt-fake", [ChatMessage("user", "hi")])]
    assert TextDelta("Hello") in deltas
    assert openai_fake.model_requests[-1].headers["authorization"] == "Bearer sk-new-key"


async def test_a_removed_provider_can_no_longer_be_resolved(
    registry: ProviderRegistry, settings: LiveSettings
) -> None:
    await registry.resolve("claude/claude-fake")
    settings.set({})
    with pytest.raises(ProviderError):
        await registry.resolve("claude/claude-fake")


async def test_models_of_every_provider_are_listed_with_builtin(
    registry: ProviderRegistry,
) -> None:
    models, errors = await registry.list_models()
    assert errors == {}
    assert [(m.id, m.label) for m in models] == [
        ("acme/gpt-fake", "gpt-fake"),
        ("claude/claude-fake", "Claude Fake"),
        ("builtin/echo", "Echo (offline demo model)"),
    ]


async def test_a_failing_provider_is_reported_beside_the_others(
    registry: ProviderRegistry, settings: LiveSettings, anthropic_fake: FakeAnthropic
) -> None:
    port = free_port()
    providers = settings.current.model_dump()["providers"]
    providers["down"] = {"type": "openai", "baseUrl": f"http://127.0.0.1:{port}/v1"}
    settings.set(providers)
    anthropic_fake.models_error = http_error(500, "Internal error.")
    models, errors = await registry.list_models()
    assert [m.id for m in models] == ["acme/gpt-fake", "builtin/echo"]
    # The owner's page: where, and the vendor's words.
    assert errors["claude"] == (
        f"The model provider 'claude' at {anthropic_fake.url} answered 500: Internal error."
    )
    assert errors["down"].startswith(
        f"Could not reach the model provider 'down' at http://127.0.0.1:{port}: "
    )
    assert set(errors) == {"claude", "down"}


async def test_a_provider_with_a_bad_address_is_reported_not_raised() -> None:
    registry = ProviderRegistry(
        LiveSettings({"typo": {"type": "openai", "baseUrl": "localhost:11434/v1"}})
    )
    models, errors = await registry.list_models()
    await registry.aclose()
    assert [m.id for m in models] == ["builtin/echo"]
    assert "base URL of the model provider 'typo'" in errors["typo"]


async def test_a_builtin_typed_provider_can_be_configured_under_another_id() -> None:
    registry = ProviderRegistry(LiveSettings({"demo": {"type": "builtin"}}))
    provider, _ = await registry.resolve("demo/echo")
    assert isinstance(provider, BuiltinProvider)
    assert provider.id == "demo"
    models, _ = await registry.list_models()
    assert {m.id for m in models} == {"demo/echo", "builtin/echo"}
    await registry.aclose()


async def test_closing_closes_current_and_replaced_adapters(
    settings: LiveSettings, openai_fake: FakeOpenAI
) -> None:
    registry = ProviderRegistry(settings)
    old, _ = await registry.resolve("acme/gpt-fake")
    settings.set({"acme": {"type": "openai", "baseUrl": openai_fake.base_url, "apiKey": "x"}})
    new, _ = await registry.resolve("acme/gpt-fake")
    await registry.aclose()
    assert isinstance(old, OpenAIProvider)
    assert isinstance(new, OpenAIProvider)
    assert old._client.is_closed()
    assert new._client.is_closed()


async def test_a_reply_streams_through_a_resolved_provider(
    registry: ProviderRegistry, anthropic_fake: FakeAnthropic
) -> None:
    anthropic_fake.enqueue(text("Bonjour", "!"))
    provider, name = await registry.resolve("claude/claude-fake")
    deltas = [d async for d in provider.stream(name, [ChatMessage("user", "Bob: salut")])]
    assert [d for d in deltas if isinstance(d, TextDelta)] == [
        TextDelta("Bonjour"),
        TextDelta("!"),
    ]
    assert anthropic_fake.model_requests[-1].body["model"] == "claude-fake"
