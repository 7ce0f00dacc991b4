"""A trace crosses nodes: two nodes on one PostgreSQL and one Redis, both exporting to one OTLP
receiver. A chain's first reply runs on node A, which is killed (`kill -9`) mid-stream; node B
stores the reply as interrupted and, when the chain is resumed there, runs the next step: all
of it is one trace, continued from the `traceparent` stored with the reply and the chain."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.otlp_receiver import OtlpReceiver, Span
from tests.fakes.script import stall, text
from tests.pg_server import PgServer
from tests.redis_server import RedisServer
from tests.support import Ws, new_channel, unique
from tests.test_cluster import Cluster, running
from tests.test_cluster_failover import LEASES, TAKEOVER_SECONDS, _streamed


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as found:
        yield found


@pytest.fixture
def cluster(
    tmp_path: Path, pg: PgServer, redis_server: RedisServer, receiver: OtlpReceiver
) -> Iterator[Cluster]:
    env = {**LEASES, **receiver.env()}
    database = pg.new_database("traced_failover")
    with running(Cluster(tmp_path, database, redis_server.url(), **env)) as nodes:
        yield nodes


def _node_of(span: Span) -> str:
    node: str = span.resource["service.instance.id"]
    return node


def test_a_reply_taken_over_and_a_chain_resumed_on_another_node_stay_one_trace(
    cluster: Cluster, receiver: OtlpReceiver
) -> None:
    doomed, survivor = cluster.a, cluster.b
    with FakeOpenAI() as model:
        provider = {"type": "openai", "baseUrl": f"{model.url}/v1"}
        cluster.owner.ok("PUT", "/api/settings", json={"providers": {"slow": provider}})
        cluster.until_both_hold(
            lambda held: held["providers"].get("slow", {}).get("baseUrl") == provider["baseUrl"]
        )
        model.enqueue(stall(text("Half", " an", " answer"), after=2), text("The rest."))
        names = [unique("First"), unique("Second")]
        first, second = (
            cluster.owner.ok("POST", "/api/agents", json={"name": n, "model": "slow/gpt-test"})[
                "agent"
            ]
            for n in names
        )
        group = new_channel(cluster.owner, agent_ids=[first["id"], second["id"]])
        on_doomed = cluster.direct(doomed, cluster.owner)
        with Ws(survivor, cluster.owner.token) as ws:
            ws.subscribe(group["id"])
            chain = on_doomed.ok(
                "POST",
                "/api/chains",
                json={
                    "channelId": group["id"],
                    "agentIds": [first["id"], second["id"]],
                    "content": "Tell me a long story.",
                },
            )["chain"]
            reply_id = _streamed(ws, first["id"], "Half an")
            time.sleep(0.5)  # the spans that ended on the doomed node are exported
            on_doomed.close()
            doomed.kill()
            ws.expect("message", timeout=TAKEOVER_SECONDS, id=reply_id)
            ws.expect("collab_status", timeout=5, chainId=chain["id"], status="paused")
            on_survivor = cluster.direct(survivor, cluster.owner)
            on_survivor.ok("POST", f"/api/chains/{chain['id']}/resume")
            on_survivor.close()
            ws.expect("stream_end", timeout=30)
            model.release()

    step = f"invoke_agent {second['name']}"
    spans = receiver.wait_for(lambda got: any(s.name == step for s in got), what=step)
    time.sleep(0.5)
    later = _one(spans, step)
    whole = receiver.trace(later.trace_id)
    taken = _one(whole, "store_interrupted_reply")
    assert taken.attributes["palaver.message.id"] == reply_id

    # The doomed node's part: its SQL under the first reply's span (the reply's own span never
    # ended: its node died) and the request that started the chain, which the workflow links.
    doomed_node = _node_of(
        next(s for s in receiver.snapshot() if s.attributes.get("http.route") == "/api/chains")
    )
    survivor_node = _node_of(taken)
    assert doomed_node != survivor_node
    on_doomed_node = [s for s in whole if _node_of(s) == doomed_node]
    assert on_doomed_node, "the doomed node exported spans of the trace before it died"
    assert any(s.parent_id == taken.parent_id for s in on_doomed_node), (
        "the survivor continued the span of the reply the doomed node ran"
    )
    resumed = next(
        s for s in whole if s.name.startswith("invoke_workflow ") and _node_of(s) == survivor_node
    )
    assert resumed.attributes["palaver.chain.resumed"] is True
    assert any(s.span_id == resumed.parent_id for s in whole) or any(
        s.parent_id == resumed.parent_id for s in on_doomed_node
    ), "the resumed workflow continues the doomed node's workflow span"
    assert later.parent_id == resumed.span_id and _node_of(later) == survivor_node


def _one(spans: list[Span], name: str) -> Span:
    found = [s for s in spans if s.name == name]
    assert len(found) == 1, (name, sorted(s.name for s in spans))
    return found[0]
