"""Login and logout; the session token travels only in an HttpOnly cookie."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from pydantic import Field

from palaver.actions import auth
from palaver.api.deps import SESSION_COOKIE, Body, Caller, Svc, errors
from palaver.services import Services

router = APIRouter(prefix="/api", tags=["auth"])


class LoginBody(Body):
    password: str = Field(min_length=1, description="The owner key or a guest's key.")


def _client(request: Request, svc: Services) -> str:
    """The address login throttling counts against.

    Behind a trusted proxy it is the last `X-Forwarded-For` entry, the one that proxy added:
    the entries before it come from the client and could be anything.
    """
    if svc.config.trust_proxy:
        forwarded = request.headers.get("x-forwarded-for", "")
        last = forwarded.rsplit(",", 1)[-1].strip()
        if last:
            return last
    return request.client.host if request.client else "unknown"


def _is_https(request: Request, svc: Services) -> bool:
    if svc.config.trust_proxy and "x-forwarded-proto" in request.headers:
        return request.headers["x-forwarded-proto"].split(",")[0].strip() == "https"
    return request.url.scheme == "https"


@router.post("/login", responses=errors(429))
async def login(body: LoginBody, request: Request, response: Response, svc: Svc) -> dict[str, bool]:
    token = await auth.login(svc, body.password, _client(request, svc))
    response.set_cookie(
        SESSION_COOKIE,
        token,
        max_age=svc.settings.current.sessionIdleDays * 86400,
        path="/",
        httponly=True,
        samesite="strict",
        secure=_is_https(request, svc),
    )
    return {"ok": True}


@router.post("/logout", responses=errors())
async def logout(caller: Caller, request: Request, response: Response, svc: Svc) -> dict[str, bool]:
    await auth.logout(svc, caller)
    response.delete_cookie(
        SESSION_COOKIE,
        path="/",
        httponly=True,
        samesite="strict",
        secure=_is_https(request, svc),
    )
    return {"ok": True}


@router.get("/me", responses=errors())
async def me(caller: Caller) -> dict[str, object]:
    return {"user": caller.user.as_json()}
