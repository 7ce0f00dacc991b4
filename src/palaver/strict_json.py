"""JSON as the service accepts it: standard JSON only, and not nested without end.

Python's parser takes `NaN` and `Infinity`, which no browser's `JSON.parse` reads back: one such
message, stored and broadcast, would break every client in its channel. Deep nesting is refused
early, before anything recursive (validation, encoding) can overflow on it.
"""

from __future__ import annotations

import json
from typing import Any

import anyio

MAX_DEPTH = 64
"""Arrays and objects within each other; metadata needs a handful."""


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def is_refusal(reason: str) -> bool:
    """Whether a decode error's reason is one of this module's refusals, worth showing."""
    return reason.endswith(("is not a JSON number", "levels deep"))


def loads(text: str | bytes) -> Any:
    """Parse, or raise `json.JSONDecodeError` saying what is wrong."""
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError:
        raise
    except ValueError as exc:
        raise json.JSONDecodeError(_reason(exc), "", 0) from None
    except RecursionError:
        raise _too_deep() from None
    if _may_nest_deeply(text) and _depth_exceeds(value, MAX_DEPTH):
        raise _too_deep()
    return value


LARGE = 64 * 1024
"""Texts longer than this are parsed in a worker thread: megabytes take the loop too long."""


async def loads_off_loop(text: str | bytes) -> Any:
    """`loads`, in a worker thread for a large text."""
    if len(text) <= LARGE:
        return loads(text)
    return await anyio.to_thread.run_sync(loads, text)


def _may_nest_deeply(text: str | bytes) -> bool:
    """A cheap bound (counted in C): fewer brackets than the limit cannot nest past it."""
    if isinstance(text, str):
        return text.count("[") + text.count("{") > MAX_DEPTH
    return text.count(b"[") + text.count(b"{") > MAX_DEPTH


def _reason(exc: ValueError) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return "the text is not valid UTF-8"
    return str(exc)


def _too_deep() -> json.JSONDecodeError:
    return json.JSONDecodeError(f"nested more than {MAX_DEPTH} levels deep", "", 0)


def _depth_exceeds(value: Any, limit: int) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False
