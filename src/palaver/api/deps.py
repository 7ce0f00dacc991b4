"""FastAPI dependencies: the services, the caller, and the owner-only guard."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request
from pydantic import BaseModel, ConfigDict

from palaver.actions import auth
from palaver.actions.auth import Principal
from palaver.errors import Forbidden
from palaver.services import Services

SESSION_COOKIE = "session"


def services(request: Request) -> Services:
    svc: Services = request.app.state.services
    return svc


Svc = Annotated[Services, Depends(services)]


async def principal(request: Request, svc: Svc) -> Principal:
    return await auth.resolve(svc, request.cookies.get(SESSION_COOKIE))


Caller = Annotated[Principal, Depends(principal)]


async def owner(caller: Caller) -> Principal:
    if not caller.user.is_owner:
        raise Forbidden("Only the owner may do that.")
    return caller


Owner = Annotated[Principal, Depends(owner)]


class Body(BaseModel):
    """Request bodies reject fields they do not know, so a typo is an error, not a no-op."""

    model_config = ConfigDict(extra="forbid")


class ErrorBody(BaseModel):
    error: str
    requestId: str | None = None


_DESCRIPTIONS = {
    400: "Malformed request or invalid field",
    401: "Not logged in, or the session expired",
    403: "Only the owner may do this",
    404: "Unknown id, or not visible to the caller",
    409: "Conflicts with an existing record",
    413: "Too large",
    415: "Unsupported kind of content",
    429: "Rate limited; see Retry-After",
    500: "Server error; the body carries a requestId",
    502: "A model or embedding endpoint failed; the body says why",
}


def errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI entries for the error statuses a route can answer, beside 400/401/500."""
    return {
        code: {"model": ErrorBody, "description": _DESCRIPTIONS[code]}
        for code in sorted({400, 401, 500, *codes})
    }
