"""Resolves an agent's `"<provider id>/<model name>"` to an adapter, following live settings.

Adapters hold connection pools, so they are cached per provider id and rebuilt only when that
provider's settings change. A replaced adapter may still be serving a reply, so it is closed
with the registry rather than at once.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import sys
from collections.abc import Callable
from typing import cast

import anyio

from palaver.llm.base import ModelInfo, ModelProvider, ProviderError
from palaver.llm.builtin import BUILTIN_ID, CONTEXT_WINDOW, BuiltinProvider
from palaver.settings import ProviderConfig, Settings

log = logging.getLogger(__name__)


_ADAPTERS = {
    "openai": ("palaver.llm.openai", "OpenAIProvider"),
    "anthropic": ("palaver.llm.anthropic", "AnthropicProvider"),
}
"""Vendor SDKs take seconds to import, so an adapter's module loads only once it is used."""


async def build_provider(provider_id: str, config: ProviderConfig) -> ModelProvider:
    if config.type == "builtin":
        return BuiltinProvider(provider_id)
    module_name, class_name = _ADAPTERS[config.type]
    module = sys.modules.get(module_name)
    if module is None or not hasattr(module, class_name):
        # Absent, or still being imported by another thread (two first uses at once):
        # import_module waits for that import to finish.
        module = await anyio.to_thread.run_sync(importlib.import_module, module_name)
    return cast(ModelProvider, getattr(module, class_name)(provider_id, config))


def split_model(model: str) -> tuple[str, str]:
    """Split on the first "/": model names may hold slashes of their own (`org/model`)."""
    provider_id, _, name = model.partition("/")
    if not provider_id or not name:
        raise ProviderError(
            f"The model '{model}' should read '<provider>/<model name>', such as 'builtin/echo'."
        )
    return provider_id, name


class ProviderRegistry:
    def __init__(self, settings: Callable[[], Settings]) -> None:
        self._settings = settings
        self._builtin = BuiltinProvider()
        self._cache: dict[str, tuple[ProviderConfig, ModelProvider]] = {}
        self._retired: list[ModelProvider] = []

    async def resolve(self, model: str) -> tuple[ModelProvider, str]:
        """The adapter and the model name to pass it; ProviderError if there is no such provider."""
        provider_id, name = split_model(model)
        return await self._provider(provider_id), name

    def context_window(self, model: str) -> int:
        provider_id, _ = split_model(model)
        config = self._settings().providers.get(provider_id)
        if config is None and provider_id == BUILTIN_ID:
            return CONTEXT_WINDOW
        if config is None:
            raise self._unknown(provider_id)
        return config.contextWindow

    async def list_models(self) -> tuple[list[ModelInfo], dict[str, str]]:
        """Every provider's models, and for each provider whose listing failed, why."""
        ids = [*self._settings().providers]
        if BUILTIN_ID not in ids:
            ids.append(BUILTIN_ID)
        results = await asyncio.gather(*(self._models_of(p) for p in ids))
        models = [m for found, _ in results for m in found]
        errors = {p: error for p, (_, error) in zip(ids, results, strict=True) if error}
        return models, errors

    async def aclose(self) -> None:
        adapters = [adapter for _, adapter in self._cache.values()] + self._retired
        self._cache.clear()
        self._retired.clear()
        for adapter in adapters:
            await adapter.aclose()

    async def _models_of(self, provider_id: str) -> tuple[list[ModelInfo], str | None]:
        try:
            return await (await self._provider(provider_id)).list_models(), None
        except ProviderError as exc:
            return [], exc.detail  # for the owner's models page: where, and why
        except Exception:
            # The page of models must show the others; this one is logged and reported.
            log.exception("listing the models of provider %r failed", provider_id)
            return [], f"Listing the models of '{provider_id}' failed unexpectedly."

    async def _provider(self, provider_id: str) -> ModelProvider:
        config = self._settings().providers.get(provider_id)
        if config is None:
            if provider_id == BUILTIN_ID:
                return self._builtin
            raise self._unknown(provider_id)
        cached = self._cache.get(provider_id)
        if cached is not None and cached[0] == config:
            return cached[1]
        adapter = await build_provider(provider_id, config)
        cached = self._cache.get(provider_id)
        if cached is not None and cached[0] == config:
            await adapter.aclose()
            return cached[1]
        if cached is not None:
            self._retired.append(cached[1])
        self._cache[provider_id] = (config, adapter)
        return adapter

    def _unknown(self, provider_id: str) -> ProviderError:
        known = sorted({*self._settings().providers, BUILTIN_ID})
        return ProviderError(
            f"There is no model provider '{provider_id}'; the configured ones are "
            + ", ".join(f"'{k}'" for k in known)
            + "."
        )
