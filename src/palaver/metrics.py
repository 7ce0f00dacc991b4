"""What a node counts for Prometheus: every metric, in a registry of this process's own.

Served as `GET /metrics` on `PALAVER_METRICS_ADDRESS` only (`palaver.metrics_server`); each
node counts for itself. docs/SPEC.md section 15 lists the metrics and their labels. The GenAI
ones carry the names OpenTelemetry's semantic conventions give them, as its Prometheus exporter
writes them (`gen_ai.client.token.usage` as `gen_ai_client_token_usage`).

Recording must cost the hot paths nothing that shows: the counts that follow state the hot
paths keep anyway (open sockets, replies in flight, the ingest queue) are read when scraped,
and the hot paths' own hooks are installed only when metrics are served (`app.py`). When they
are not, a node records into `Uncounted` and never imports prometheus-client (issue 26).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from palaver.llm.builtin import BUILTIN_ID
from palaver.settings import Settings

SECONDS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
"""Buckets for the durations of requests and of waits inside one node."""
BATCH_SIZES = (1, 2, 4, 8, 16, 32, 64)
"""Up to `store.db.GROUP_COMMIT_MAX`."""
TOKEN_BUCKETS = (
    1,
    4,
    16,
    64,
    256,
    1024,
    4096,
    16384,
    65536,
    262144,
    1048576,
    4194304,
    16777216,
    67108864,
)
"""As the semantic conventions advise for `gen_ai.client.token.usage`."""
OPERATION_SECONDS = (
    0.01,
    0.02,
    0.04,
    0.08,
    0.16,
    0.32,
    0.64,
    1.28,
    2.56,
    5.12,
    10.24,
    20.48,
    40.96,
    81.92,
)
"""As the semantic conventions advise for `gen_ai.client.operation.duration`."""
CHAT = "chat"
"""`gen_ai.operation.name` of a reply's model call."""


class Uncounted:
    """What the code that records calls, when metrics are not served: nothing is kept."""

    def tool_called(self, tool: str, ok: bool) -> None:
        """A tool call an agent made, by tool and outcome."""

    def heartbeat(self, outcome: str) -> None:
        """This node's heartbeat in the node registry, by outcome."""

    @contextmanager
    def model_call(self, call: ModelCall) -> Iterator[ModelCall]:
        """One model call of an agent's reply."""
        yield call


class Metrics(Uncounted):
    """Every metric, in a registry of this process's own."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        registry = self.registry = CollectorRegistry()
        self.http_requests = Histogram(
            "palaver_http_request_duration_seconds",
            "HTTP requests by method, route template and status, and how long each took "
            "(to its last byte); _count is the number of requests.",
            ("method", "route", "status"),
            buckets=SECONDS,
            registry=registry,
        )
        self.websockets = Gauge(
            "palaver_websocket_connections",
            "Open WebSocket connections: authenticated (in the hub) or still authenticating.",
            ("state",),
            registry=registry,
        )
        self.events_fanned_out = Counter(
            "palaver_events_fanned_out",
            "Events put on a socket's send queue by the hub, once per socket.",
            registry=registry,
        )
        self.bus_lag = Histogram(
            "palaver_bus_lag_seconds",
            "Time from an event's publication (on any node) to its delivery to this node's "
            "listeners, through Redis; empty with the in-process bus.",
            buckets=SECONDS,
            registry=registry,
        )
        self.write_batch_size = Histogram(
            "palaver_db_write_batch_size",
            "Write units committed in one SQLite transaction (group commit).",
            buckets=BATCH_SIZES,
            registry=registry,
        )
        self.write_wait = Histogram(
            "palaver_db_write_wait_seconds",
            "Time a write unit waited for its batch to begin (SQLite group commit).",
            buckets=SECONDS,
            registry=registry,
        )
        self.replies_in_flight = Gauge(
            "palaver_replies_in_flight",
            "Agent replies being written on this node.",
            registry=registry,
        )
        genai = ("gen_ai_operation_name", "gen_ai_provider_name", "gen_ai_request_model")
        agent = ("gen_ai_agent_id", "gen_ai_agent_name")
        self.token_usage = Histogram(
            "gen_ai_client_token_usage",
            "Tokens per model call of an agent's reply, input and output, as the usage ledger "
            "counts them.",
            (*genai, *agent, "gen_ai_token_type"),
            buckets=TOKEN_BUCKETS,
            registry=registry,
        )
        self.operation_duration = Histogram(
            "gen_ai_client_operation_duration_seconds",
            "Duration of each model call of an agent's reply, to its last delta; error_type "
            "names what ended a failed one.",
            (*genai, *agent, "error_type"),
            buckets=OPERATION_SECONDS,
            registry=registry,
        )
        self.tool_calls = Counter(
            "palaver_tool_calls",
            "Tool calls made by agents, by tool and outcome (ok, error).",
            ("tool", "outcome"),
            registry=registry,
        )
        self.ingest_queue = Gauge(
            "palaver_knowledge_ingest_queue",
            "Knowledge uploads handed to the embedding queue and not yet stored, in documents "
            "and in chunks.",
            ("unit",),
            registry=registry,
        )
        self.node_heartbeats = Counter(
            "palaver_node_heartbeats",
            "This node's heartbeats in the node registry (with REDIS_URL), by outcome: ok, "
            "rejoined (it had been judged dead) or failed.",
            ("outcome",),
            registry=registry,
        )
        self.node_heartbeat_time = Gauge(
            "palaver_node_last_heartbeat_timestamp_seconds",
            "When this node last beat (Unix time).",
            registry=registry,
        )

    def observe_write_batch(self, size: int, waits: list[float]) -> None:
        self.write_batch_size.observe(size)
        for wait in waits:
            self.write_wait.observe(wait)

    def tool_called(self, tool: str, ok: bool) -> None:
        self.tool_calls.labels(tool, "ok" if ok else "error").inc()

    def heartbeat(self, outcome: str) -> None:
        self.node_heartbeats.labels(outcome).inc()
        if outcome != "failed":
            self.node_heartbeat_time.set(time.time())

    @contextmanager
    def model_call(self, call: ModelCall) -> Iterator[ModelCall]:
        """Time one model call; a call that raises is counted with the exception's name."""
        labels = (CHAT, call.provider, call.model, call.agent_id, call.agent_name)
        started = time.perf_counter()
        error = ""
        try:
            yield call
        except asyncio.CancelledError:
            error = "cancelled"
            raise
        except Exception as exc:
            error = type(exc).__name__
            raise
        finally:
            seconds = time.perf_counter() - started
            self.operation_duration.labels(*labels, error).observe(seconds)
            if call.tokens is not None:
                self.token_usage.labels(*labels, "input").observe(call.tokens[0])
                self.token_usage.labels(*labels, "output").observe(call.tokens[1])


@dataclass
class ModelCall:
    """One model call being measured; `tokens` (input, output) once they are known."""

    provider: str
    model: str
    agent_id: str
    agent_name: str
    tokens: tuple[int, int] | None = None


def provider_name(settings: Settings, provider_id: str) -> str:
    """`gen_ai.provider.name`: the kind of API a provider speaks (openai, anthropic, builtin),
    not the id the owner gave it, as the conventions want."""
    config = settings.providers.get(provider_id)
    if config is not None:
        return config.type
    return "builtin" if provider_id == BUILTIN_ID else "unknown"
