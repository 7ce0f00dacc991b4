"""Login and logout; the session token travels only in an HttpOnly cookie."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from pydantic import Field

from palaver.actions import auth
from palaver.api import schemas
from palaver.api.deps import (
    SESSION_COOKIE,
    Acting,
    Body,
    Caller,
    Svc,
    actor,
    errors,
    is_https,
    set_session_cookie,
)
from palaver.api.routing import StrictJsonRoute
from palaver.api.schemas import ok

router = APIRouter(prefix="/api", tags=["auth"], route_class=StrictJsonRoute)


class LoginBody(Body):
    password: str = Field(min_length=1, description="The owner key or a guest's key.")


@router.post(
    "/login", responses={**errors(429), **ok(schemas.Ok, "Logged in; the session cookie is set")}
)
async def login(body: LoginBody, request: Request, response: Response, svc: Svc) -> dict[str, bool]:
    token = await auth.login(svc, body.password, actor(None, request, svc))
    set_session_cookie(response, request, svc, token)
    return {"ok": True}


@router.post("/logout", responses={**errors(), **ok(schemas.Ok, "Logged out")})
async def logout(
    caller: Caller, by: Acting, request: Request, response: Response, svc: Svc
) -> dict[str, bool]:
    await auth.logout(svc, caller, by)
    response.delete_cookie(
        SESSION_COOKIE,
        path="/",
        httponly=True,
        samesite="strict",
        secure=is_https(request, svc),
    )
    return {"ok": True}


@router.get("/me", responses={**errors(), **ok(schemas.UserAnswer, "Who the caller is")})
async def me(caller: Caller) -> dict[str, object]:
    return {"user": caller.user.as_json()}
