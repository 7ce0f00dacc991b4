"""Budgets hold across nodes: two nodes on one PostgreSQL and one Redis. What a reply on node A
spends is in the ledger node B reads before its own reply's model call, so B refuses once the
install's cap is reached, and the report on either node sums both."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.script import text
from tests.pg_server import PgServer
from tests.redis_server import RedisServer
from tests.support import Api, Server, Ws, new_agent, new_channel, post, unique
from tests.test_cluster import Cluster, running


@pytest.fixture
def cluster(tmp_path: Path, pg: PgServer, redis_server: RedisServer) -> Iterator[Cluster]:
    with running(Cluster(tmp_path, pg.new_database("budgets"), redis_server.url())) as nodes:
        yield nodes


def _reply_on(node: Server, api: Api, channel: dict[str, Any], content: str) -> dict[str, Any]:
    with Ws(node, api.token) as ws:
        ws.subscribe(channel["id"])
        post(api, channel["id"], content)
        reply = ws.expect("message", timeout=30, agentId=channel["agentIds"][0])
    data: dict[str, Any] = reply["data"]
    return data


def test_the_installs_cap_spent_on_one_node_refuses_the_next_reply_on_the_other(
    cluster: Cluster,
) -> None:
    with FakeOpenAI() as model:
        provider = {"type": "openai", "baseUrl": f"{model.url}/v1"}
        cluster.owner.ok("PUT", "/api/settings", json={"providers": {"oai": provider}})
        cluster.owner.ok(
            "PUT", "/api/settings", json={"budgets": {"total": {"monthlyTokens": 100}}}
        )
        cluster.until_both_hold(
            lambda held: (
                (held["budgets"].get("total") or {}).get("monthlyTokens") == 100
                and "oai" in held["providers"]
            )
        )
        name = unique("Spender")
        agent = new_agent(cluster.owner, name=name, model="oai/gpt-test")
        channel = new_channel(cluster.owner, [agent["id"]])
        with (
            cluster.direct(cluster.a, cluster.owner) as on_a,
            cluster.direct(cluster.b, cluster.owner) as on_b,
        ):
            _spend_on_a_and_refuse_on_b(model, name, agent, channel, cluster, on_a, on_b)


def _spend_on_a_and_refuse_on_b(
    model: FakeOpenAI,
    name: str,
    agent: dict[str, Any],
    channel: dict[str, Any],
    cluster: Cluster,
    on_a: Api,
    on_b: Api,
) -> None:
    model.enqueue(text("Spent it.", usage=(70, 50)))
    first = _reply_on(cluster.a, on_a, channel, f"@{name} spend")
    assert first["content"] == "Spent it." and "error" not in first["metadata"]
    asked = len(model.model_requests)

    refused = _reply_on(cluster.b, on_b, channel, f"@{name} spend more")
    error = refused["metadata"]["error"]
    assert "monthly token budget of this installation is spent" in error, error
    assert "120 of 100 tokens" in error and "resets on" in error
    assert len(model.model_requests) == asked, "node B did not call the model"

    for api in (on_a, on_b):
        rows = api.ok("GET", "/api/usage", params={"groupBy": "agent"})["rows"]
        assert rows == [
            {
                "key": agent["id"],
                "inputTokens": 70,
                "outputTokens": 50,
                "cachedTokens": 0,
                "cost": 0,
                "calls": 1,
                "unpricedCalls": 1,
            }
        ]
