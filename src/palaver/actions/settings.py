"""Run-time settings: read from memory, written through the database, masked on the way out."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from palaver.bus.base import CONTROL, EventBus
from palaver.errors import Conflict, Invalid
from palaver.knowledge.embed import make_embedder
from palaver.settings import Settings, merge, model_problem, shown_changes, well_formed_model
from palaver.store import settings_store
from palaver.store.audit import CHANGED, Actor
from palaver.store.db import Database

_ENTRIES = {"providers": "provider", "mcpServers": "mcpServer"}
"""Maps of the settings whose entries the audit log names one by one (`provider.create`...)."""


class SettingsHolder:
    """The current settings, cached; every node reloads when any node changes them.

    A reload and a change of this node's take turns: a reload reading before the change
    committed and finishing after it would otherwise put the settings before the change back
    in the cache, where they stay until the next change.
    """

    def __init__(self, db: Database, bus: EventBus) -> None:
        self._db = db
        self._bus = bus
        self.current = Settings()
        self.listeners: list[Callable[[], None]] = []
        """Told when the settings held change (here or, through a reload, on another node)."""
        self._turn = asyncio.Lock()

    async def reload(self) -> Settings:
        async with self._turn, self._db.read() as conn:
            self.current = await settings_store.load(conn)
        self._tell()
        return self.current

    def _tell(self) -> None:
        for listener in self.listeners:
            listener()

    async def update(self, patch: dict[str, Any], by: Actor) -> Settings:
        async with self._turn:
            updated = await self._change(patch, by)
        self._tell()
        return updated

    async def _change(self, patch: dict[str, Any], by: Actor) -> Settings:
        async with self._db.write() as tx:
            stored = await settings_store.load(tx.conn)
            try:
                updated = merge(stored, patch)
            except ValidationError as exc:
                message, where = _describe(exc)
                raise Invalid(message, field=where) from None
            problem = model_problem(updated, updated.defaultModel)
            if problem is not None:
                # Well formed but naming a provider that is not configured: a conflict.
                error = Conflict if well_formed_model(updated.defaultModel) else Invalid
                raise error(f"Invalid setting 'defaultModel': {problem}")
            try:
                make_embedder(updated)
            except (Conflict, Invalid) as exc:
                raise type(exc)(f"Invalid setting 'embedding': {exc.message}") from None
            await settings_store.save(tx.conn, updated)
            for action, target, changes in audited(stored, updated):
                await by.add(tx.conn, action, target, changes)
            tx.on_commit(lambda: self._bus.publish(CONTROL, {"type": "settings_changed"}))
        self.current = updated
        return updated


def audited(before: Settings, after: Settings) -> list[tuple[str, str, dict[str, Any]]]:
    """The audit rows of a change of settings: one per provider and MCP server added, changed
    or removed (`provider.create`, `mcpServer.delete`...), named by its id, and one
    `settings.update` for the rest; each with what changed, secrets hidden. No row when
    nothing changed."""
    changes = shown_changes(before, after, CHANGED)
    rows: list[tuple[str, str, dict[str, Any]]] = []
    for field, resource in _ENTRIES.items():
        had = getattr(before, field)
        for name, change in changes.pop(field, {}).items():
            if change is None:
                rows.append((f"{resource}.delete", name, {}))
            else:
                verb = "update" if name in had else "create"
                rows.append((f"{resource}.{verb}", name, change))
    if changes:
        rows.append(("settings.update", "settings", changes))
    return rows


def _describe(exc: ValidationError) -> tuple[str, str]:
    """The message and the field it is about (`prices.openai/gpt-4.1.input`: a form matches
    the map's keys whole, since they may hold dots)."""
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    if first["type"] == "extra_forbidden":
        return f"Unknown setting '{where}'.", where
    return f"Invalid setting '{where}': {str(first['msg']).rstrip('.')}.", where
