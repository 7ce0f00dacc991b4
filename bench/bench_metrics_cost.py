"""Benchmark: what counting for /metrics adds to each hot-path operation, in microseconds.

The hot paths' own benchmark (bench_hot_paths) compares whole servers, and on a shared machine
its ratios move by more than this cost; here each hook is timed alone, in one process, against
the same operation without it:

- a request through the request middleware (`api/request_metrics.py`) around an app that
  answers at once, against the bare app;
- the hub handing one event to one subscribed socket, with and without its count;
- the writer's batch observer, per write unit;
- the bus lag, per event heard (a histogram observation).

    python -m bench.bench_metrics_cost      # writes bench/results/metrics_cost.json and .md
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from starlette.types import Message, Receive, Scope, Send

from palaver.api.request_metrics import RequestMetrics
from palaver.metrics import Metrics
from palaver.realtime.hub import Connection, Hub

RESULTS = Path(__file__).parent / "results"
ROUNDS = 7
N = 20_000


class _Route:
    path = "/api/messages"


async def _answer(scope: Scope, receive: Receive, send: Send) -> None:
    scope["route"] = _Route
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"{}"})


async def _receive() -> Message:
    return {"type": "http.request", "body": b"", "more_body": False}


async def _send(_: Message) -> None:
    return None


async def _requests(app: Any, n: int) -> float:
    started = time.perf_counter()
    for _ in range(n):
        scope = {"type": "http", "method": "POST", "path": "/api/messages"}
        await app(scope, _receive, _send)
    return time.perf_counter() - started


def _per_op_us(run: Callable[[], float]) -> float:
    """Median over rounds of the time per operation, in microseconds."""
    return statistics.median(run() for _ in range(ROUNDS)) / N * 1e6


def _hub(counted: bool) -> tuple[Hub, dict[str, Any]]:
    hub = Hub(Metrics().events_fanned_out.inc if counted else None)

    async def send(_: str) -> None:
        return None

    conn = Connection("usr_1", False, "hash", send, queue_size=N * ROUNDS + 10)
    hub.add(conn)
    hub.subscribe(conn, "chn_1")
    event = {"type": "message", "data": {"id": "msg_1", "content": "hello"}}
    return hub, event


def main() -> None:
    metrics = Metrics()
    counted_app = RequestMetrics(_answer, metrics.http_requests)
    results: dict[str, tuple[float, float]] = {}

    results["request"] = (
        _per_op_us(lambda: asyncio.run(_requests(_answer, N))),
        _per_op_us(lambda: asyncio.run(_requests(counted_app, N))),
    )

    def fan_out(counted: bool) -> float:
        hub, event = _hub(counted)
        started = time.perf_counter()
        for _ in range(N):
            hub.dispatch("channel:chn_1", event)
        return time.perf_counter() - started

    async def fan_out_in_loop(counted: bool) -> float:
        return fan_out(counted)

    results["hub event to one socket"] = (
        _per_op_us(lambda: asyncio.run(fan_out_in_loop(False))),
        _per_op_us(lambda: asyncio.run(fan_out_in_loop(True))),
    )

    def batches() -> float:
        started = time.perf_counter()
        for _ in range(N):
            metrics.observe_write_batch(1, [0.0004])
        return time.perf_counter() - started

    results["write unit (batch of one)"] = (0.0, _per_op_us(batches))

    def lag() -> float:
        started = time.perf_counter()
        for _ in range(N):
            metrics.bus_lag.observe(max(0.0, time.time() - 1.0))
        return time.perf_counter() - started

    results["bus event heard"] = (0.0, _per_op_us(lag))

    rows = [
        f"{datetime.now(UTC):%Y-%m-%d %H:%M UTC}, medians of {ROUNDS} rounds of {N:,} "
        f"operations, 5-minute load average {os.getloadavg()[1]:.2f} (2 means both cores busy).",
        "",
        "| operation | without metrics (µs) | with metrics (µs) | added (µs) |",
        "|---|---|---|---|",
    ]
    for name, (bare, counted) in results.items():
        shown = f"{bare:.2f}" if bare else "(the hook alone)"
        rows.append(f"| {name} | {shown} | {counted:.2f} | {counted - bare:.2f} |")
    text = "\n".join(rows) + "\n"
    RESULTS.mkdir(exist_ok=True)
    figures = {name: {"without_us": b, "with_us": c} for name, (b, c) in results.items()}
    (RESULTS / "metrics_cost.json").write_text(json.dumps(figures, indent=2) + "\n")
    (RESULTS / "metrics_cost.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
