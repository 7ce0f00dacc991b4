"""Trying a model provider's configuration before (or after) saving it: list its models.

The key may be the stored one, sent back masked as the settings API shows it; it is used
but never echoed, and is cut out of the provider's error text in case the vendor quoted it.
Only the owner tests providers, so a failure is told in full: where, and the vendor's words.
"""

from __future__ import annotations

import asyncio
import logging

from palaver.llm.base import ProviderError
from palaver.llm.registry import build_provider
from palaver.settings import SECRET_MASK, ProviderConfig, Settings, mask_secret, mask_url

log = logging.getLogger(__name__)

TEST_TIMEOUT = 15.0
"""The whole test, connection included: the page waits for it."""


def resolved(settings: Settings, provider_id: str | None, config: ProviderConfig) -> ProviderConfig:
    """The config with a masked key or base URL replaced by the stored provider's own."""
    stored = settings.providers.get(provider_id) if provider_id else None
    if stored is None:
        return config
    key, url = config.apiKey, config.baseUrl
    if key is not None and stored.apiKey and key == mask_secret(stored.apiKey):
        key = stored.apiKey
    if url is not None and stored.baseUrl and url == mask_url(stored.baseUrl):
        url = stored.baseUrl
    return config.model_copy(update={"apiKey": key, "baseUrl": url})


async def try_provider(provider_id: str, config: ProviderConfig) -> tuple[list[str], str | None]:
    """The provider's model names, or why it could not list them."""
    if config.apiKey and SECRET_MASK in config.apiKey:
        return [], "The key is masked and no saved provider has it; type the whole key."
    timeout = min(config.timeoutSeconds, TEST_TIMEOUT)
    config = config.model_copy(update={"timeoutSeconds": timeout})
    try:
        adapter = await build_provider(provider_id, config)
    except ProviderError as exc:
        return [], _scrubbed(exc.detail, config.apiKey)
    try:
        async with asyncio.timeout(timeout + 1):
            models = await adapter.list_models()
        return sorted({m.name for m in models}), None
    except ProviderError as exc:
        return [], _scrubbed(exc.detail, config.apiKey)
    except TimeoutError:
        return [], f"The model provider '{provider_id}' did not answer within {timeout:g} seconds."
    except Exception:
        log.exception("testing the model provider %r failed", provider_id)
        return [], f"Testing the model provider '{provider_id}' failed unexpectedly."
    finally:
        await adapter.aclose()


def _scrubbed(text: str, key: str | None) -> str:
    return text.replace(key, SECRET_MASK) if key else text
