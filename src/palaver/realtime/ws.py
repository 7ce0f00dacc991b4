"""The `/ws` endpoint: authentication, the client protocol, and one send loop per socket."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

from fastapi import APIRouter, WebSocket, WebSocketDisconnect
from fastapi.responses import JSONResponse

from palaver import strict_json
from palaver.actions import auth, channels
from palaver.actions.auth import Principal
from palaver.errors import DomainError, storage_fault
from palaver.realtime.hub import CLOSE_TRY_LATER, CLOSE_UNAUTHENTICATED, Connection
from palaver.services import Services
from palaver.store.faults import describe, fault_of

log = logging.getLogger(__name__)

router = APIRouter()

CLOSE_IDLE = 4408
CLOSE_TIMEOUT = 5.0


def _error(code: str, message: str) -> str:
    return json.dumps({"type": "error", "data": {"code": code, "message": message}})


def _fault_event(exc: Exception) -> str | None:
    """The `error` event for a storage fault (code `unavailable` or `insufficient_storage`,
    as the HTTP API's 503 and 507), or None for any other failure, which must stay loud."""
    fault, answer = fault_of(exc), storage_fault(exc)
    if fault is None or answer is None:
        return None
    log.warning("%s on the socket: %s", answer.message, describe(exc))
    return _error(fault.value, answer.message)


def _origin_allowed(ws: WebSocket, svc: Services) -> bool:
    """Refuse cross-site pages: a browser sends the page's Origin with every upgrade."""
    origin = ws.headers.get("origin")
    if origin is None:
        return True
    if origin.rstrip("/") in svc.config.allowed_origins:
        return True
    return svc.hosts.allows_origin(origin, ws.headers.get("host"))


async def _receive(ws: WebSocket, idle: float) -> str | bytes:
    """The next message, text or binary; TimeoutError after `idle` seconds of silence.

    `asyncio.timeout`, not `wait_for`, which on Python 3.11 wraps every receive in a task."""
    async with asyncio.timeout(idle):
        message = await ws.receive()
    if message["type"] == "websocket.disconnect":
        raise WebSocketDisconnect(message.get("code", 1000))
    text: str | None = message.get("text")
    return text if text is not None else bytes(message.get("bytes") or b"")


class _Malformed:
    def __init__(self, reason: str) -> None:
        self.reason = reason


def _parse(raw: str | bytes) -> dict[str, Any] | _Malformed:
    """The JSON object of a text frame; `_Malformed` says why there is none."""
    if isinstance(raw, bytes):
        return _Malformed("Each message must be a JSON text frame.")
    try:
        value = strict_json.loads(raw)
    except ValueError as exc:
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        if strict_json.is_refusal(reason):
            return _Malformed(f"The message is not valid JSON: {reason}.")
        return _Malformed("Each message must be a JSON text frame.")
    if not isinstance(value, dict):
        return _Malformed("Each message must be a JSON object with a 'type'.")
    return value


async def _authenticate(ws: WebSocket, svc: Services) -> Principal | None:
    """By the session cookie if the upgrade carried one, otherwise by a first `auth` message
    that must come within `ws_auth_seconds`."""
    cookie = ws.cookies.get("session")
    token: str | None = cookie
    if token is None:
        try:
            raw = await _receive(ws, svc.config.ws_auth_seconds)
        except TimeoutError:
            await _refuse(ws, "Authenticate within the first seconds of the connection.")
            return None
        except (WebSocketDisconnect, RuntimeError):
            return None
        first = _parse(raw)
        if not isinstance(first, dict) or first.get("type") != "auth":
            await _refuse(ws, 'Authenticate first with {"type": "auth", "token": ...}.')
            return None
        token = first.get("token") if isinstance(first.get("token"), str) else None
    try:
        return await auth.resolve(svc, token)
    except DomainError as exc:
        await _refuse(ws, exc.message)
        return None
    except Exception as exc:
        event = _fault_event(exc)
        if event is None:
            raise
        with contextlib.suppress(Exception):
            await ws.send_text(event)
            await ws.close(CLOSE_TRY_LATER)
        return None


async def _deny(ws: WebSocket, status: int, message: str) -> None:
    """Refuse the upgrade with an HTTP answer where the server can send one."""
    if "websocket.http.response" in ws.scope.get("extensions", {}):
        await ws.send_denial_response(JSONResponse({"error": message}, status_code=status))
    else:
        await ws.close(code=1008)


async def _refuse(ws: WebSocket, message: str) -> None:
    with contextlib.suppress(Exception):
        await ws.send_text(_error("unauthenticated", message))
        await ws.close(CLOSE_UNAUTHENTICATED)


@router.websocket("/ws")
async def websocket_endpoint(ws: WebSocket) -> None:
    svc: Services = ws.app.state.services
    if not _origin_allowed(ws, svc):
        await _deny(ws, 403, "This page's origin may not open the socket.")
        return
    # A socket with a session cookie is answered at once, right or wrong; only one that must
    # still send `auth` can linger, so only those count against the address's cap.
    address = None if "session" in ws.cookies else ws.client.host if ws.client else "unknown"
    limit = svc.config.ws_unauthenticated_per_address
    if address is not None and not svc.hub.admit_unauthenticated(address, limit):
        await _deny(ws, 429, "Too many connections from this address are not logged in yet.")
        return
    try:
        await ws.accept()
        principal = await _authenticate(ws, svc)
    finally:
        if address is not None:
            svc.hub.release_unauthenticated(address)
    if principal is None:
        return
    conn = Connection(
        user_id=principal.user.id,
        is_owner=principal.user.is_owner,
        token_hash=principal.token_hash,
        send=ws.send_text,
        queue_size=svc.config.ws_queue_size,
    )
    conn.offer(json.dumps({"type": "auth_ok", "userId": principal.user.id}))
    svc.hub.add(conn)
    conn.sender = asyncio.create_task(conn.send_loop())
    tasks = [conn.sender, asyncio.create_task(_receive_loop(ws, svc, conn, principal))]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        svc.hub.remove(conn)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    if conn.close_code is not None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(ws.close(conn.close_code, conn.close_reason), CLOSE_TIMEOUT)


async def _receive_loop(ws: WebSocket, svc: Services, conn: Connection, who: Principal) -> None:
    while True:
        try:
            raw = await _receive(ws, svc.config.ws_idle_seconds)
        except TimeoutError:
            conn.kill(CLOSE_IDLE)
            return
        except (WebSocketDisconnect, RuntimeError):
            return
        message = _parse(raw)
        if isinstance(message, _Malformed):
            conn.offer(_error("bad_request", message.reason))
            continue
        kind = message.get("type")
        if kind == "ping":
            conn.offer(json.dumps({"type": "pong"}))
        elif kind in ("subscribe", "unsubscribe"):
            try:
                await _subscription(svc, conn, who, kind, message.get("channelId"))
            except Exception as exc:
                event = _fault_event(exc)
                if event is None:
                    raise
                conn.offer(event)
        elif kind == "auth":
            conn.offer(json.dumps({"type": "auth_ok", "userId": who.user.id}))
        else:
            conn.offer(_error("bad_request", f"Unknown message type {kind!r}."))


async def _subscription(
    svc: Services, conn: Connection, who: Principal, kind: str, channel_id: Any
) -> None:
    if not isinstance(channel_id, str):
        conn.offer(_error("bad_request", "The field 'channelId' must be a string."))
        return
    if kind == "unsubscribe":
        svc.hub.unsubscribe(conn, channel_id)
        conn.offer(json.dumps({"type": "unsubscribed", "data": {"channelId": channel_id}}))
        return
    try:
        await channels.visible(svc, who.user, channel_id)
    except DomainError as exc:
        conn.offer(_error("not_found", exc.message))
        return
    svc.hub.subscribe(conn, channel_id)
