"""Time-ordered identifiers: a kind prefix on a monotonic ULID.

Ids made in the same millisecond still sort in creation order, which is what makes
`before=` pagination stable.
"""

from __future__ import annotations

import os
import threading
import time

from ulid import ULID

_lock = threading.Lock()
_last_ms = 0
_last_rand = 0
_RAND_MAX = (1 << 80) - 1


def _next_ulid() -> ULID:
    global _last_ms, _last_rand
    with _lock:
        ms = time.time_ns() // 1_000_000
        if ms <= _last_ms:
            ms = _last_ms
            _last_rand += 1
            if _last_rand > _RAND_MAX:
                ms += 1
                _last_rand = int.from_bytes(os.urandom(10)) >> 1
        else:
            _last_rand = int.from_bytes(os.urandom(10)) >> 1
        _last_ms = ms
        return ULID.from_bytes(ms.to_bytes(6, "big") + _last_rand.to_bytes(10, "big"))


def new_id(prefix: str) -> str:
    """A new id such as `msg_01J...`; `prefix` is the kind without the underscore."""
    return f"{prefix}_{_next_ulid()}"


def first_id_at(prefix: str, seconds: float) -> str:
    """The smallest id of a kind that can be made at `seconds` (Unix time): every id made then
    or later sorts at or after it as a string, so it bounds a range of ids by time."""
    ms = max(0, int(seconds * 1000))
    return f"{prefix}_{ULID.from_bytes(ms.to_bytes(6, 'big') + bytes(10))}"
