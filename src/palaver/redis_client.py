"""Redis clients as the Redis adapters use them, whichever redis-py 5 to 8 is installed."""

from __future__ import annotations

import inspect
from typing import Any

import redis
from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

_PARAMETERS = inspect.signature(Redis).parameters


def _version_options() -> dict[str, Any]:
    """redis-py 8 reads its own version from the installed package's metadata (the file system)
    for every new connection unless it is handed one: read once here, at import, instead of on
    the event loop.

    redis-py 8.1 turns on maintenance notifications by default, and with them stops checking
    that a pooled connection is still open before using it: after Redis restarts, the first
    command on each old connection would fail. Nothing here uses the notifications (a feature of
    hosted Redis), so they are off and the check is back."""
    options: dict[str, Any] = {}
    if "driver_info" in _PARAMETERS:
        from redis.driver_info import DriverInfo

        options["driver_info"] = DriverInfo()
    if "maint_notifications_config" in _PARAMETERS:
        from redis.maint_notifications import MaintNotificationsConfig

        options["maint_notifications_config"] = MaintNotificationsConfig(enabled=False)
    return options


_OPTIONS = _version_options()


def connect(url: str) -> Redis:
    """A client that never sends a command twice: a command whose reply was lost may have run
    (an event published twice, a token taken twice), so the callers decide what a failure means."""
    client: Redis = Redis.from_url(url, retry=Retry(NoBackoff(), 0), **_OPTIONS)
    return client


def unreachable(url: str) -> str | None:
    """Why `palaver serve` cannot use Redis at `url`, or None: asked once, before the service
    starts, so that a wrong `REDIS_URL` answers in one line instead of a failed start-up."""
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=5, socket_timeout=5)
    except ValueError as exc:
        return f"REDIS_URL is not a Redis URL: {exc}"
    try:
        client.ping()
    except redis.RedisError as exc:
        where = client.connection_pool.connection_kwargs
        address = where.get("path") or f"{where.get('host')}:{where.get('port')}"
        return f"Redis cannot be reached at {address} (REDIS_URL): {exc}"
    finally:
        client.close()
    return None
