"""Logging in and out, and resolving a session token to the person behind it."""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import timedelta

import anyio
from sqlalchemy.ext.asyncio import AsyncConnection

from palaver.auth.secrets import hash_token, new_session_token, owner_key_tag, same_secret
from palaver.bus.base import CONTROL
from palaver.caches import CachedSession
from palaver.domain import User
from palaver.errors import Invalid, RateLimited, Unauthenticated
from palaver.ids import new_id
from palaver.services import Services
from palaver.store import users
from palaver.store.audit import Actor
from palaver.store.faults import Fault, describe, fault_of
from palaver.store.tables.base import utcnow

log = logging.getLogger(__name__)

LOGIN_FAILURE_LIMIT = 10
LOGIN_FAILURE_WINDOW = 300.0
TOUCH_EVERY = timedelta(minutes=5)
"""Idle expiry counts in days, so refreshing `last_used_at` more often only costs writes."""


@dataclass(frozen=True)
class Principal:
    user: User
    token_hash: str
    renewed: bool = False
    """This request refreshed the session's last use: its cookie's lifetime starts again."""


async def prepare_owner(svc: Services) -> None:
    """Make sure the owner user exists and drop owner sessions made under another OWNER_KEY."""
    async with svc.db.write() as tx:
        salt_hex = await users.get_meta(tx.conn, "owner_key_salt")
        if salt_hex is None:
            salt_hex = os.urandom(16).hex()
            await users.set_meta(tx.conn, "owner_key_salt", salt_hex)
        owner = await users.owner(tx.conn)
        if owner is None:
            owner = User(id=new_id("user"), name="Owner", role="owner", created_at=utcnow())
            await users.create(tx.conn, owner, key_hash=None)
    tag = await anyio.to_thread.run_sync(
        owner_key_tag, svc.config.owner_key.get_secret_value(), bytes.fromhex(salt_hex)
    )
    async with svc.db.write() as tx:
        await users.delete_owner_sessions_not_tagged(tx.conn, tag)
    svc.owner_key_tag = tag
    svc.owner_id = owner.id


async def login(svc: Services, password: str, by: Actor) -> str:
    """Answer a new session token; throttle a client address after repeated failures. The
    audit log gets `login.succeeded` in the session's own transaction, or `login.failed` (with
    nobody as the actor) for a wrong password; a throttled attempt is not checked, and leaves
    no row (an address hammering the login would otherwise fill the log)."""
    if not password:
        raise Invalid("The field 'password' must not be empty.")
    throttle_key = f"login:{by.address or 'unknown'}"
    retry = await svc.limiter.reserve_attempt(
        throttle_key, LOGIN_FAILURE_WINDOW, LOGIN_FAILURE_LIMIT
    )
    if retry > 0:
        raise RateLimited(
            "Too many failed logins from this address; try again later.",
            headers={"Retry-After": str(max(1, math.ceil(retry)))},
        )
    user_id, tag = await _check_password(svc, password)
    if user_id is None:
        async with svc.db.write() as tx:
            await by.add(tx.conn, "login.failed", None)
        raise Unauthenticated("Wrong password.")
    await svc.limiter.release_attempt(throttle_key)
    token = new_session_token()
    by = replace(by, user_id=user_id)
    async with svc.db.write() as tx:
        await users.create_session(tx.conn, hash_token(token), user_id, tag, utcnow())
        await by.add(tx.conn, "login.succeeded", user_id)
    return token


async def _check_password(svc: Services, password: str) -> tuple[str | None, str | None]:
    """The user the password logs in, and the owner-key tag for the owner's session."""
    if same_secret(password, svc.config.owner_key.get_secret_value()):
        return svc.owner_id, svc.owner_key_tag
    async with svc.db.read() as conn:
        found = await users.by_key_hash(conn, hash_token(password))
    if found is not None and same_secret(hash_token(password), found[1]):
        return found[0].id, None
    return None, None


async def logout(svc: Services, principal: Principal, by: Actor) -> None:
    async with svc.db.write() as tx:
        await users.delete_session(tx.conn, principal.token_hash)
        await by.add(tx.conn, "logout.succeeded", principal.user.id)
        tx.on_commit(
            lambda: svc.bus.publish(
                CONTROL, {"type": "revoke", "tokenHashes": [principal.token_hash]}
            )
        )


async def resolve(svc: Services, token: str | None) -> Principal:
    """The session's person, or Unauthenticated for a missing, unknown or expired token.

    A session used within `TOUCH_EVERY` is answered from memory; an older one is read again,
    so that its idle time is judged by the database, which every node touches."""
    if not token:
        raise Unauthenticated("You are not logged in.")
    token_hash = hash_token(token)
    now = utcnow()
    cache = svc.caches.sessions
    cached = cache.get(token_hash)
    if cached is not None and cached.last_used_at >= now - TOUCH_EVERY:
        return Principal(user=cached.user, token_hash=token_hash)
    generation = cache.generation
    async with svc.db.read() as conn:
        row = await users.session(conn, token_hash)
        user = await users.get(conn, row.user_id) if row is not None else None
    if row is None or user is None or not same_secret(token_hash, row.token_hash):
        raise Unauthenticated("Your session is unknown or has expired; log in again.")
    idle = timedelta(days=svc.settings.current.sessionIdleDays)
    if row.last_used_at < now - idle:
        await _bookkeeping(
            svc,
            lambda conn: users.delete_session(conn, token_hash),
            "an expired session could not be removed",
        )
        cache.forget([token_hash])
        raise Unauthenticated("Your session is unknown or has expired; log in again.")
    if row.last_used_at < now - TOUCH_EVERY:
        if not await _bookkeeping(
            svc,
            lambda conn: users.touch_session(conn, token_hash, now),
            "a session's last use could not be recorded",
        ):
            return Principal(user=user, token_hash=token_hash)
        cache.put(token_hash, CachedSession(user, now), generation)
        return Principal(user=user, token_hash=token_hash, renewed=True)
    cache.put(token_hash, CachedSession(user, row.last_used_at), generation)
    return Principal(user=user, token_hash=token_hash)


async def _bookkeeping(
    svc: Services, write: Callable[[AsyncConnection], Awaitable[object]], what: str
) -> bool:
    """A write a session's check makes on the side; on a full disk it is logged and left for
    a later use (answers False), so that a session still reads then."""
    try:
        async with svc.db.write() as tx:
            await write(tx.conn)
    except Exception as exc:
        if fault_of(exc) is not Fault.FULL:
            raise
        log.warning("%s: %s", what, describe(exc))
        return False
    return True
