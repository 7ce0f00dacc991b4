"""FastAPI dependencies: the services, the caller, and the owner-only guard."""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from fastapi import Depends, Request, Response
from pydantic import BaseModel, ConfigDict, model_validator

from palaver.actions import auth
from palaver.actions.auth import Principal
from palaver.errors import JSON, Forbidden, error_body_ref
from palaver.services import Services
from palaver.settings import whole_numbers
from palaver.store.audit import Actor

SESSION_COOKIE = "session"


async def services(request: Request) -> Services:
    """Async, as every dependency here: FastAPI runs a plain function on a worker thread."""
    svc: Services = request.app.state.services
    return svc


Svc = Annotated[Services, Depends(services)]


async def principal(request: Request, response: Response, svc: Svc) -> Principal:
    caller = await auth.resolve(svc, request.cookies.get(SESSION_COOKIE))
    renew_cookie(response, request, svc, caller)
    return caller


AnswerT = TypeVar("AnswerT", bound=Response)


def carrying(answer: AnswerT, response: Response) -> AnswerT:
    """A route's own answer (JSON it encoded, a file, a stream) with the headers the route's
    dependencies set on `response` (a renewed session cookie): FastAPI adds those only to
    answers it makes itself."""
    answer.headers.raw.extend(response.headers.raw)
    return answer


def encoded_json(body: bytes, response: Response) -> Response:
    """An answer whose JSON is already encoded, carrying the dependencies' headers."""
    return carrying(Response(body, media_type="application/json"), response)


def renew_cookie(response: Response, request: Request, svc: Services, caller: Principal) -> None:
    """A session the check found due for renewal gets its cookie again, with a new age."""
    token = request.cookies.get(SESSION_COOKIE)
    if caller.renewed and token:
        set_session_cookie(response, request, svc, token)


def set_session_cookie(response: Response, request: Request, svc: Services, token: str) -> None:
    """The cookie lives as long as the session may stay idle, counted from its last use."""
    response.set_cookie(
        SESSION_COOKIE,
        token,
        max_age=svc.settings.current.sessionIdleDays * 86400,
        path="/",
        httponly=True,
        samesite="strict",
        secure=is_https(request, svc),
    )


def is_https(request: Request, svc: Services) -> bool:
    if svc.config.trust_proxy and "x-forwarded-proto" in request.headers:
        return request.headers["x-forwarded-proto"].split(",")[0].strip() == "https"
    return request.url.scheme == "https"


Caller = Annotated[Principal, Depends(principal)]


async def owner(caller: Caller) -> Principal:
    if not caller.user.is_owner:
        raise Forbidden("Only the owner may do that.")
    return caller


Owner = Annotated[Principal, Depends(owner)]


def client_address(request: Request, svc: Services) -> str | None:
    """The client's address, as login throttling counts it and the audit log records it.

    Behind a trusted proxy it is the last `X-Forwarded-For` entry, the one that proxy added:
    the entries before it come from the client and could be anything.
    """
    if svc.config.trust_proxy:
        forwarded = request.headers.get("x-forwarded-for", "")
        last = forwarded.rsplit(",", 1)[-1].strip()
        if last:
            return last
    return request.client.host if request.client else None


def actor(user_id: str | None, request: Request, svc: Services) -> Actor:
    return Actor(user_id, client_address(request, svc), svc.node_id)


async def acting(caller: Caller, request: Request, svc: Svc) -> Actor:
    """The caller as the audit log names them, for an action anyone may take."""
    return actor(caller.user.id, request, svc)


async def owner_acting(caller: Owner, request: Request, svc: Svc) -> Actor:
    """The owner as the audit log names them; 403 for anyone else."""
    return actor(caller.user.id, request, svc)


Acting = Annotated[Actor, Depends(acting)]
OwnerActing = Annotated[Actor, Depends(owner_acting)]


class Body(BaseModel):
    """Request bodies reject fields they do not know, so a typo is an error, not a no-op, and
    text that is not valid Unicode (JSON allows lone surrogates such as "\\ud800").

    Strict, as the schema is: `"3"` is not a number nor `1` a boolean."""

    model_config = ConfigDict(extra="forbid", strict=True)

    @model_validator(mode="before")
    @classmethod
    def _encodable_whole_numbers(cls, data: Any) -> Any:
        """Before the fields are validated, so a lone surrogate is named as such."""
        check_encodable(data)
        return whole_numbers(cls, data)


def check_encodable(value: Any) -> None:
    if isinstance(value, str):
        try:
            value.encode()
        except UnicodeEncodeError:
            raise ValueError("text must be valid Unicode (it has an unpaired surrogate)") from None
    elif isinstance(value, dict):
        for key, item in value.items():
            check_encodable(key)
            check_encodable(item)
    elif isinstance(value, list | tuple):
        for item in value:
            check_encodable(item)


def pattern(regex: str) -> dict[str, Any]:
    """A pattern the schema states and the action checks, with a message that says why."""
    return {"pattern": regex}


NOT_BLANK = pattern(r"\S")
"""Text that must hold more than whitespace (the server strips it)."""


_DESCRIPTIONS = {
    400: "Malformed request or invalid field",
    401: "Not logged in, or the session expired",
    403: "Only the owner may do this",
    404: "Unknown id, or not visible to the caller",
    408: "The upload stalled and was ended",
    409: "Conflicts with an existing record",
    413: "Too large",
    415: "Unsupported kind of content",
    429: "Rate limited; see Retry-After",
    500: "Server error; the body carries a requestId",
    502: "A model or embedding endpoint failed; the body says why",
}


def errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI entries for the error statuses a route can answer, beside 400/401/500.

    Their body is `ErrorBody`, named by reference rather than given as a `model`: FastAPI
    would build a response field for each entry of every route (some 420) at start-up, for the
    document alone. The document gets `ErrorBody`'s schema from `errors.py`."""
    return {
        code: {"description": _DESCRIPTIONS[code], "content": {JSON: {"schema": error_body_ref()}}}
        for code in sorted({400, 401, 500, *codes})
    }
