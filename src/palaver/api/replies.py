"""Models agents can use, and stopping a reply."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from palaver.actions import replies
from palaver.api import schemas
from palaver.api.deps import Caller, Owner, Svc, errors
from palaver.api.routing import StrictJsonRoute
from palaver.api.schemas import ok

router = APIRouter(prefix="/api", tags=["agents"], route_class=StrictJsonRoute)


@router.post(
    "/messages/{message_id}/cancel",
    responses={**errors(404, 409), **ok(schemas.Ok, "The reply is stopping")},
)
async def cancel_reply(message_id: str, caller: Caller, svc: Svc) -> dict[str, bool]:
    await replies.cancel(svc, caller.user, message_id)
    return {"ok": True}


@router.get(
    "/models",
    responses={**errors(403), **ok(schemas.ModelList, "The models and the providers that failed")},
)
async def list_models(_: Owner, svc: Svc) -> dict[str, Any]:
    """Owner only: a provider's error can name its address, which is the owner's setting."""
    models, failures = await svc.providers.list_models()
    return {
        "models": [
            {"id": m.id, "provider": m.provider, "name": m.name, "label": m.label} for m in models
        ],
        "errors": failures,
    }
