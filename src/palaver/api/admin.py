"""The owner's desk: run-time settings and guests."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from palaver.actions import guests
from palaver.api.deps import Body, Owner, Svc, check_encodable, errors
from palaver.api.routing import StrictJsonRoute
from palaver.errors import Invalid
from palaver.settings import masked

router = APIRouter(prefix="/api", tags=["admin"], route_class=StrictJsonRoute)


class CreateGuest(Body):
    name: str


@router.get("/settings", responses=errors(403))
async def get_settings(_: Owner, svc: Svc) -> dict[str, Any]:
    return {"settings": masked(svc.settings.current)}


@router.put("/settings", responses=errors(403))
async def put_settings(patch: dict[str, Any], _: Owner, svc: Svc) -> dict[str, Any]:
    try:
        check_encodable(patch)
    except ValueError as exc:
        raise Invalid(f"Invalid settings: {exc}.") from None
    return {"settings": masked(await svc.settings.update(patch))}


@router.get("/guests", responses=errors(403))
async def list_guests(_: Owner, svc: Svc) -> dict[str, Any]:
    return {"guests": [g.as_json() for g in await guests.list_guests(svc)]}


@router.post("/guests", responses=errors(403))
async def create_guest(body: CreateGuest, _: Owner, svc: Svc) -> dict[str, Any]:
    guest, key = await guests.create(svc, body.name)
    return {"user": guest.as_json(), "key": key}


@router.delete("/guests/{guest_id}", responses=errors(403, 404))
async def delete_guest(guest_id: str, _: Owner, svc: Svc) -> dict[str, bool]:
    await guests.delete(svc, guest_id)
    return {"ok": True}
