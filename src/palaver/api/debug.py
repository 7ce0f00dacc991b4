"""Hooks for the test suite, mounted only with `PALAVER_DEBUG_HOOKS=1` and kept out of the
schema: what the database was asked so far, a way to make the caches forget, and which
packages the process has imported (so a test can hold start-up to loading features on first
use). Off, as in production, the paths answer 404 like any unknown API path."""

from __future__ import annotations

import sys

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

    @hooks.get("/modules")
    async def modules() -> dict[str, list[str]]:
        """Every name in `sys.modules`: what start-up and the requests so far loaded."""
        return {"modules": sorted(sys.modules)}

    return hooks
