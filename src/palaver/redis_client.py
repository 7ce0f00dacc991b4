"""Redis clients as the Redis adapters use them."""

from __future__ import annotations

import inspect
from typing import Any

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

_HAS_MAINT_NOTIFICATIONS = "maint_notifications_config" in inspect.signature(Redis).parameters


def connect(url: str) -> Redis:
    """A client that never sends a command twice: a command whose reply was lost may have run
    (an event published twice, a token taken twice), so the callers decide what a failure means.

    redis-py 8 turns on maintenance notifications by default, and with them stops checking that
    a pooled connection is still open before using it: after Redis restarts, the first command
    on each old connection would fail. Nothing here uses the notifications (a feature of hosted
    Redis), so they are off and the check is back."""
    options: dict[str, Any] = {"retry": Retry(NoBackoff(), 0)}
    if _HAS_MAINT_NOTIFICATIONS:
        from redis.maint_notifications import MaintNotificationsConfig

        options["maint_notifications_config"] = MaintNotificationsConfig(enabled=False)
    client: Redis = Redis.from_url(url, **options)
    return client
