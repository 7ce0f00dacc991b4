"""Hooks for the test suite, mounted only with `PALAVER_DEBUG_HOOKS=1` and kept out of the
schema: what the database was asked so far, and a way to make the caches forget."""

from __future__ import annotations

from fastapi import APIRouter

from palaver.api.deps import Svc
from palaver.store.counts import DbCounts


def router(counts: DbCounts) -> APIRouter:
    hooks = APIRouter(prefix="/api/debug", include_in_schema=False)

    @hooks.get("/db-counts")
    async def db_counts() -> dict[str, int]:
        return counts.as_json()

    @hooks.post("/forget-caches")
    async def forget_caches(svc: Svc) -> dict[str, bool]:
        """As if every session and channel had changed: a test edited the database itself."""
        svc.caches.clear()
        return {"ok": True}

    return hooks
