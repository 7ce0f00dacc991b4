"""`GET /metrics` (docs/SPEC.md section 15): on `PALAVER_METRICS_ADDRESS` only, parsed by
prometheus-client's own parser, every metric present and each moved by the work it counts.

One node on Redis (so that it beats and its events travel the Redis bus) with a fake OpenAI
server as its model and its embedder; the fake can hold a reply or an embedding, so that the
gauges of work in progress are read while that work is in progress.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from palaver.config import Config, split_address
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.script import hang, text, tool_call, tool_calls
from tests.fakes.server import RecordedRequest
from tests.fakes.transport import Handler
from tests.pg_server import storage
from tests.redis_server import RedisServer
from tests.support import OWNER_KEY, Api, Server, Ws, new_channel, unique, wait_until

SERVED_AT = re.compile(r"metrics are served at (http://\S+/metrics)")
EVERY_METRIC = {
    "palaver_http_request_duration_seconds": "histogram",
    "palaver_websocket_connections": "gauge",
    "palaver_events_fanned_out": "counter",
    "palaver_bus_lag_seconds": "histogram",
    "palaver_db_write_batch_size": "histogram",
    "palaver_db_write_wait_seconds": "histogram",
    "palaver_replies_in_flight": "gauge",
    "gen_ai_client_token_usage": "histogram",
    "gen_ai_client_operation_duration_seconds": "histogram",
    "palaver_tool_calls": "counter",
    "palaver_knowledge_ingest_queue": "gauge",
    "palaver_node_heartbeats": "counter",
    "palaver_node_last_heartbeat_timestamp_seconds": "gauge",
}
"""Every metric of section 15, by the name the parser gives its family, and its type."""


class HeldFakeOpenAI(FakeOpenAI):
    """The fake OpenAI, whose embeddings wait while `embeddings_held` is clear."""

    def __init__(self) -> None:
        super().__init__()
        self.embeddings_held = threading.Event()
        self.embeddings_held.set()

    def _embeddings(self, handler: Handler, request: RecordedRequest) -> None:
        self.embeddings_held.wait(30)
        super()._embeddings(handler, request)


@dataclass
class Node:
    server: Server
    metrics_url: str
    owner: Api
    fake: HeldFakeOpenAI


class Scrape:
    """One answer of /metrics, parsed."""

    def __init__(self, url: str) -> None:
        response = httpx.get(url, timeout=10)
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].startswith("text/plain; version=")
        self.text = response.text
        self.families = {f.name: f for f in text_string_to_metric_families(self.text)}

    def value(self, sample: str, **labels: str) -> float:
        """The sum of the samples named `sample` whose labels include `labels`."""
        family = sample.removesuffix("_total")
        for suffix in ("_bucket", "_count", "_sum"):
            family = family.removesuffix(suffix)
        found = self.families.get(family)
        assert found is not None, f"no metric {family}"
        return sum(
            s.value
            for s in found.samples
            if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items())
        )


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory, redis_server: RedisServer) -> Iterator[Node]:
    env = {
        "REDIS_URL": redis_server.url(),
        "PALAVER_METRICS_ADDRESS": "127.0.0.1:0",
        "PALAVER_NODE_HEARTBEAT_SECONDS": "0.5",
    }
    server = Server(tmp_path_factory.mktemp("metrics"), env=env)
    with HeldFakeOpenAI() as fake:
        server.start()
        served = SERVED_AT.search(server.read_log())
        assert served is not None, server.read_log()
        owner = server.login()
        provider = {"type": "openai", "baseUrl": fake.base_url, "apiKey": fake.api_key}
        settings = {
            "providers": {"oai": provider},
            "embedding": {"provider": "oai", "model": "fake-embedding"},
        }
        owner.ok("PUT", "/api/settings", json=settings)
        yield Node(server, served.group(1), owner, fake)
        fake.embeddings_held.set()
        fake.release()
        owner.close()
        server.stop()


def scrape(node: Node) -> Scrape:
    return Scrape(node.metrics_url)


def test_every_metric_is_listed_with_its_type(node: Node) -> None:
    families = scrape(node).families
    assert {name: families[name].type for name in EVERY_METRIC if name in families} == EVERY_METRIC


def test_the_public_address_answers_404_for_metrics_and_not_the_page(node: Node) -> None:
    public = node.server.client()
    for path in ("/metrics", "/metrics/", "/metrics/anything"):
        response = public.get(path)
        assert response.status_code == 404, path
        assert response.headers["content-type"].startswith("application/json"), path
        assert "palaver_" not in response.text and "<html" not in response.text.lower()
    public.close()


def test_the_metrics_address_serves_metrics_and_nothing_else(node: Node) -> None:
    root = node.metrics_url.removesuffix("/metrics")
    for path in ("/", "/api/messages", "/metrics/", "/ws", "/index.html"):
        response = httpx.get(root + path, timeout=10)
        assert response.status_code == 404, path
        assert "palaver_" not in response.text
    assert httpx.post(node.metrics_url, timeout=10).status_code == 405


def test_requests_are_counted_by_route_template_and_status(node: Node) -> None:
    channel = new_channel(node.owner)
    before = scrape(node)
    node.owner.ok("GET", f"/api/channels/{channel['id']}")
    missing = node.owner.get(f"/api/channels/{unique('nochannel')}")
    assert missing.status_code == 404
    after = scrape(node)
    route = "/api/channels/{channel_id}"
    count = "palaver_http_request_duration_seconds_count"
    for status in ("200", "404"):
        moved = after.value(count, method="GET", route=route, status=status) - before.value(
            count, method="GET", route=route, status=status
        )
        assert moved == 1, status
    assert after.value("palaver_http_request_duration_seconds_sum", route=route) > before.value(
        "palaver_http_request_duration_seconds_sum", route=route
    )
    assert channel["id"] not in after.text, "the raw path is never a label"


def test_sockets_and_the_events_fanned_out_to_them_are_counted(node: Node) -> None:
    channel = new_channel(node.owner)
    before = scrape(node)
    with Ws(node.server, node.owner.token) as ws, Ws(node.server) as waiting:
        ws.subscribe(channel["id"])
        during = scrape(node)
        connections = "palaver_websocket_connections"
        assert during.value(connections, state="authenticated") == (
            before.value(connections, state="authenticated") + 1
        )
        assert during.value(connections, state="authenticating") >= 1
        body = {"channelId": channel["id"], "content": "counted", "type": "text"}
        node.owner.ok("POST", "/api/messages", json=body)
        ws.expect("message")
        waiting.close()
    after = scrape(node)
    fanned = "palaver_events_fanned_out_total"
    assert after.value(fanned) >= before.value(fanned) + 1, "the message, to the one subscriber"
    wait_until(
        lambda: (
            scrape(node).value(connections, state="authenticated")
            == before.value(connections, state="authenticated")
        ),
        what="the socket's gauge going back down",
    )


def test_a_reply_with_a_tool_call_counts_tokens_duration_tool_and_flight(node: Node) -> None:
    name = unique("Metered")
    agent = node.owner.ok(
        "POST", "/api/agents", json={"name": name, "model": "oai/gpt-test", "tools": ["react"]}
    )["agent"]
    channel = new_channel(node.owner, [agent["id"]])
    genai = {
        "gen_ai_operation_name": "chat",
        "gen_ai_provider_name": "openai",
        "gen_ai_request_model": "gpt-test",
        "gen_ai_agent_id": agent["id"],
        "gen_ai_agent_name": name,
    }
    node.fake.reset()
    node.fake.enqueue(
        # Bounded: were the release to come before the hang began, it would end by itself.
        hang(10, then=tool_calls(tool_call("react", {"emoji": "👍"}))),
        text("Done.", usage=(40, 2)),
    )
    before = scrape(node)
    with Ws(node.server, node.owner.token) as ws:
        ws.subscribe(channel["id"])
        body = {"channelId": channel["id"], "content": f"@{name} react", "type": "text"}
        node.owner.ok("POST", "/api/messages", json=body)
        ws.expect("stream_start")
        node.fake.wait_for_requests(1)
        in_flight = scrape(node).value("palaver_replies_in_flight")
        node.fake.release()
        end = ws.expect("stream_end", timeout=30)
        ws.expect("message", id=end["data"]["messageId"])
    assert in_flight == before.value("palaver_replies_in_flight") + 1
    wait_until(
        lambda: (
            scrape(node).value("palaver_replies_in_flight")
            == before.value("palaver_replies_in_flight")
        ),
        what="the reply leaving the gauge",
    )
    after = scrape(node)
    duration = "gen_ai_client_operation_duration_seconds_count"
    assert after.value(duration, **genai, error_type="") == 2, "two model calls, no error"
    usage = "gen_ai_client_token_usage"
    assert after.value(f"{usage}_count", **genai, gen_ai_token_type="input") == 2
    assert after.value(f"{usage}_count", **genai, gen_ai_token_type="output") == 2
    output = after.value(f"{usage}_sum", **genai, gen_ai_token_type="output")
    assert output >= 2, "the second call's two output tokens, and the first call's"
    calls = "palaver_tool_calls_total"
    assert (
        after.value(calls, tool="react", outcome="ok")
        == before.value(calls, tool="react", outcome="ok") + 1
    )


def test_an_upload_is_counted_in_the_ingest_queue_until_it_is_stored(node: Node) -> None:
    agent = node.owner.ok("POST", "/api/agents", json={"name": unique("Reader")})["agent"]
    queue = "palaver_knowledge_ingest_queue"
    before = scrape(node)
    node.fake.embeddings_held.clear()
    with ThreadPoolExecutor(1) as pool:
        upload = pool.submit(
            node.owner.post,
            "/api/rag/upload",
            files={"file": ("gate.txt", b"The garden gate is painted green each May.")},
            data={"agentId": agent["id"]},
        )
        try:
            wait_until(
                lambda: (
                    scrape(node).value(queue, unit="documents")
                    == before.value(queue, unit="documents") + 1
                ),
                what="the upload entering the ingest queue",
            )
            assert scrape(node).value(queue, unit="chunks") >= before.value(queue, unit="chunks")
        finally:
            node.fake.embeddings_held.set()
        response = upload.result(30)
    assert response.status_code == 200, response.text
    after = scrape(node)
    assert after.value(queue, unit="documents") == before.value(queue, unit="documents")
    assert after.value(queue, unit="chunks") == before.value(queue, unit="chunks")


def test_heartbeats_bus_lag_and_write_batches_are_measured(node: Node) -> None:
    before = scrape(node)
    channel = new_channel(node.owner)
    body = {"channelId": channel["id"], "content": "one more", "type": "text"}
    node.owner.ok("POST", "/api/messages", json=body)
    beats = "palaver_node_heartbeats_total"
    wait_until(
        lambda: scrape(node).value(beats, outcome="ok") >= before.value(beats, outcome="ok") + 2,
        what="two heartbeats",
    )
    after = scrape(node)
    assert after.value("palaver_node_last_heartbeat_timestamp_seconds") > before.value(
        "palaver_node_last_heartbeat_timestamp_seconds"
    )
    lag = "palaver_bus_lag_seconds_count"
    assert after.value(lag) > before.value(lag), "the events travelled through Redis"
    assert after.value("palaver_bus_lag_seconds_sum") < 5 * after.value(lag)
    if storage() == "sqlite":  # PostgreSQL has no write batches (group commit is SQLite's)
        batches = "palaver_db_write_batch_size_count"
        assert after.value(batches) > before.value(batches)
        waits = "palaver_db_write_wait_seconds_count"
        assert after.value(waits) - before.value(waits) >= after.value(batches) - before.value(
            batches
        )


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("127.0.0.1:9100", ("127.0.0.1", 9100)),
        ("0.0.0.0:0", ("0.0.0.0", 0)),
        ("[::1]:9100", ("::1", 9100)),
        ("metrics.internal:9100", ("metrics.internal", 9100)),
    ],
)
def test_a_metrics_address_is_host_and_port(address: str, expected: tuple[str, int]) -> None:
    assert split_address(address) == expected


@pytest.mark.parametrize("address", ["9100", "localhost", ":9100", "::1:9100", "host:99999"])
def test_a_malformed_metrics_address_is_refused(address: str) -> None:
    with pytest.raises(ValueError, match=r"host:port|IPv6|port"):
        Config(OWNER_KEY=OWNER_KEY, metrics_address=address)


def test_unset_or_empty_there_are_no_metrics() -> None:
    assert Config(OWNER_KEY=OWNER_KEY).metrics_bind is None
    assert Config(OWNER_KEY=OWNER_KEY, metrics_address="").metrics_bind is None


def test_the_metrics_address_cannot_be_the_public_one() -> None:
    with pytest.raises(ValueError, match="must differ from the public address"):
        Config(OWNER_KEY=OWNER_KEY, port=8000, metrics_address="127.0.0.1:8000")


def _serve(tmp_path: Path, metrics_address: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALAVER_")}
    env.update(OWNER_KEY=OWNER_KEY, HF_HUB_OFFLINE="1", PALAVER_METRICS_ADDRESS=metrics_address)
    return subprocess.run(
        [sys.executable, "-m", "palaver", "serve", "--port", "0", "--data-dir", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_serve_stops_with_status_2_and_one_line_on_a_bad_metrics_address(tmp_path: Path) -> None:
    done = _serve(tmp_path, "nowhere")
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "metrics_address" in lines[0] and "host:port" in lines[0]


def test_serve_stops_with_status_2_when_the_metrics_address_is_taken(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _serve(tmp_path, f"127.0.0.1:{port}")
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"PALAVER_METRICS_ADDRESS 127.0.0.1:{port} cannot be listened on" in lines[0]
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "palaver.db").exists(), "refused before anything was prepared"
