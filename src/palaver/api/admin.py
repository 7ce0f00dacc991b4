"""The owner's desk: run-time settings and guests."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter
from pydantic import Field

from palaver.actions import guests, provider_test
from palaver.api import schemas
from palaver.api.deps import NOT_BLANK, Body, Owner, OwnerActing, Svc, check_encodable, errors
from palaver.api.routing import StrictJsonRoute
from palaver.api.schemas import ok
from palaver.errors import Invalid
from palaver.settings import ProviderConfig, Settings, masked

router = APIRouter(prefix="/api", tags=["admin"], route_class=StrictJsonRoute)


def _inline(schema: Any, defs: dict[str, Any]) -> Any:
    """The schema with its `$defs` references replaced by what they name (none recurse)."""
    if isinstance(schema, dict):
        if "$ref" in schema:
            return _inline(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
        return {k: _inline(v, defs) for k, v in schema.items() if k != "$defs"}
    if isinstance(schema, list):
        return [_inline(item, defs) for item in schema]
    return schema


def _patch_schema() -> dict[str, Any]:
    """The settings as a patch: every field optional, merged into the stored settings, and a
    provider, an MCP server or one of its `env` or `headers` entries, a price or an agent's or a
    guest's budget removed by sending null in its place."""
    full = Settings.model_json_schema()
    schema: dict[str, Any] = _inline(full, full.get("$defs", {}))
    server = schema["properties"]["mcpServers"]["additionalProperties"]["properties"]
    for name in ("env", "headers"):
        server[name]["additionalProperties"] = {"anyOf": [{"type": "string"}, {"type": "null"}]}
        server[name]["description"] = "Merged by name; an entry set to null is removed."
    budgets = schema["properties"]["budgets"]["properties"]
    for holder, name in (
        (schema["properties"], "providers"),
        (schema["properties"], "mcpServers"),
        (schema["properties"], "prices"),
        (budgets, "agents"),
        (budgets, "guests"),
    ):
        entry = holder[name]["additionalProperties"]
        holder[name]["additionalProperties"] = {"anyOf": [entry, {"type": "null"}]}
    schema["properties"]["defaultModel"]["pattern"] = r"^[A-Za-z0-9_.-]+/\S.*$"
    schema["properties"]["defaultModel"]["description"] = (
        "<provider id>/<model name>; a provider that is not configured answers 409."
    )
    schema["properties"]["embedding"]["description"] = (
        "'local' with its one model, or a configured provider of type 'openai'; "
        "another choice answers 409."
    )
    return schema


class CreateGuest(Body):
    name: str = Field(min_length=1, max_length=128, json_schema_extra=NOT_BLANK)


@router.get(
    "/settings",
    responses={**errors(403), **ok(schemas.SettingsAnswer, "The settings, secrets masked")},
)
async def get_settings(_: Owner, svc: Svc) -> dict[str, Any]:
    return {"settings": masked(svc.settings.current)}


@router.put(
    "/settings",
    responses=errors(403, 409),
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": _patch_schema()}},
        }
    },
)
async def put_settings(patch: dict[str, Any], by: OwnerActing, svc: Svc) -> dict[str, Any]:
    try:
        check_encodable(patch)
    except ValueError as exc:
        raise Invalid(f"Invalid settings: {exc}.") from None
    return {"settings": masked(await svc.settings.update(patch, by))}


class TestProvider(Body):
    """A provider's settings as the settings form holds them; with the `id` of a stored
    provider, a masked key or base URL sent back means the stored one."""

    id: str | None = Field(default=None, min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")
    type: Literal["openai", "anthropic", "builtin"]
    baseUrl: str | None = Field(default=None, max_length=2048)
    apiKey: str | None = Field(default=None, max_length=4096)


@router.post(
    "/settings/providers/test",
    responses={**errors(403), **ok(schemas.ProviderTest, "The provider's models, or its error")},
)
async def test_provider(body: TestProvider, _: Owner, svc: Svc) -> dict[str, Any]:
    """Asks the provider for its models, at most 15 seconds; a provider that refuses or cannot
    be reached is an answer (`ok: false` with its error, never holding the key), not a failure
    of this request."""
    config = ProviderConfig(type=body.type, baseUrl=body.baseUrl or None, apiKey=body.apiKey)
    config = provider_test.resolved(svc.settings.current, body.id, config)
    models, error = await provider_test.try_provider(body.id or "new", config)
    if error is not None:
        return {"ok": False, "error": error}
    return {"ok": True, "models": models}


@router.get("/guests", responses={**errors(403), **ok(schemas.GuestList, "Every guest")})
async def list_guests(_: Owner, svc: Svc) -> dict[str, Any]:
    return {"guests": [g.as_json() for g in await guests.list_guests(svc)]}


@router.post(
    "/guests",
    responses={**errors(403), **ok(schemas.NewGuest, "The guest and its key, shown once")},
)
async def create_guest(body: CreateGuest, by: OwnerActing, svc: Svc) -> dict[str, Any]:
    guest, key = await guests.create(svc, body.name, by)
    return {"user": guest.as_json(), "key": key}


@router.delete("/guests/{guest_id}", responses={**errors(403, 404), **ok(schemas.Ok, "Removed")})
async def delete_guest(guest_id: str, by: OwnerActing, svc: Svc) -> dict[str, bool]:
    await guests.delete(svc, guest_id, by)
    return {"ok": True}
