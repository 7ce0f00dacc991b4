"""Benchmark: real `palaver serve` nodes, one against two, SQLite against PostgreSQL (issue 14).

Three setups run side by side, each started here with a PostgreSQL (pgserver, pgvector) and a
`redis-server` of its own: one node on SQLite (in-process bus), one node on PostgreSQL
(in-process bus), and two nodes on one PostgreSQL database and one Redis. The servers (nodes,
PostgreSQL, Redis) are pinned to core 0 and the load (wrk, this process's clients) to core 1;
the setups take turns, in alternating order, over several rounds, and the report gives medians.

- delivery: a socket on node A subscribed to a channel, one post at a time made over HTTP
  through node B; the time from sending the post to its `message` event on A's socket, p50 and
  p99. A = B on every setup; A != B on the two nodes (the event crosses Redis).
- posts: `POST /api/messages` with wrk at 64 connections; on two nodes, one wrk per node with
  32 connections each (round-robin straight to the nodes, no balancer), their rates summed.
- fan-out: posts delivered to 1,000 subscribed sockets (split evenly between the two nodes),
  the posts sent through each node in turn.

    python -m bench.bench_cluster            # the full run (about 5 minutes)
    python -m bench.bench_cluster --quick    # a short run to check the harness

Writes bench/results/cluster.json and .md (`--quick`: cluster_quick.*).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from tests.pg_server import PgServer
from tests.redis_server import RedisServer

from bench.bench_hot_paths import (
    LOAD_CORE,
    SERVER_CORE,
    Palaver,
    _expect,
    _machine,
    _median,
    _open,
    _workdir,
    fanout_across,
    write_results,
    wrk,
)

CONNECTIONS = 64


@dataclass
class Plan:
    rounds: int
    seconds: int
    deliveries: int
    subscribers: int
    fanout_posts: int


FULL = Plan(rounds=3, seconds=10, deliveries=400, subscribers=1000, fanout_posts=100)
QUICK = Plan(rounds=1, seconds=2, deliveries=40, subscribers=100, fanout_posts=10)


class Node(Palaver):
    """One `palaver serve` of a setup: its own folder for its log and wrk script, the data
    folder and the database its setup's nodes share."""

    def __init__(self, workdir: Path, name: str, data_dir: Path, env: dict[str, str]) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        super().__init__(workdir)
        self.name = name
        self.data_dir = data_dir
        self.extra_env = env

    def command(self) -> list[str]:
        return [*super().command()[:-1], str(self.data_dir)]

    def env(self) -> dict[str, str]:
        return {**super().env(), **self.extra_env}

    def same_session_as(self, first: Palaver) -> None:
        """Take the first node's logins and channel: a session made on one node is valid on
        every node."""
        self.cookie, self.posters = first.cookie, first.posters
        self.channel_id, self.page_path = first.channel_id, first.page_path


class Setup:
    """The nodes of one deployment, started and prepared together."""

    def __init__(self, name: str, nodes: list[Node]) -> None:
        self.name = name
        self.nodes = nodes

    def start(self) -> None:
        for node in self.nodes:  # one at a time: the first migrates the database
            node.start()
        self.nodes[0].prepare()
        for node in self.nodes[1:]:
            node.same_session_as(self.nodes[0])

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


def setups(workdir: Path, pg: PgServer, redis: RedisServer) -> list[Setup]:
    def one(name: str, env: dict[str, str]) -> Setup:
        return Setup(name, [Node(workdir / name, name, workdir / name / "data", env)])

    shared = {"DATABASE_URL": pg.new_database("cluster"), "REDIS_URL": redis.url()}
    return [
        one("sqlite", {}),
        one("postgresql", {"DATABASE_URL": pg.new_database("single")}),
        Setup(
            "2 nodes",
            [
                Node(workdir / f"node-{n}", f"node-{n}", workdir / "cluster-data", shared)
                for n in ("a", "b")
            ],
        ),
    ]


# -- measures ---------------------------------------------------------------------------------


async def delivery(listen: Node, via: Node, count: int) -> dict[str, Any]:
    """Posts made one at a time through `via`, each timed until `listen`'s socket has its
    `message` event; the first tenth warms up and is dropped."""
    samples: list[float] = []
    run = uuid.uuid4().hex[:8]
    async with (
        _open(listen) as ws,
        httpx.AsyncClient(headers={"Cookie": f"session={listen.cookie}"}) as http,
    ):
        for i in range(count):
            tag = f"delivery {run} {i}"
            body = {"channelId": listen.channel_id, "content": tag}
            began = time.perf_counter()
            posting = asyncio.create_task(http.post(f"{via.base}/api/messages", json=body))
            while (await _expect(ws, "message"))["data"]["content"] != tag:
                pass
            samples.append(time.perf_counter() - began)
            (await posting).raise_for_status()
    kept = sorted(samples[count // 10 :])
    return {
        "p50_ms": 1000 * kept[len(kept) // 2],
        "p99_ms": 1000 * kept[int(0.99 * (len(kept) - 1))],
    }


async def posts(nodes: list[Node], seconds: int) -> dict[str, Any]:
    """wrk against every node at once, the connections split between them: their rates summed,
    the worse node's latencies."""
    each = CONNECTIONS // len(nodes)
    runs = await asyncio.gather(
        *(
            asyncio.to_thread(wrk, node, node.post_path, each, seconds, node.post_body())
            for node in nodes
        )
    )
    await asyncio.to_thread(settle, nodes)
    return {
        "rps": sum(r["rps"] for r in runs),
        "p50_ms": max(r["p50_ms"] for r in runs),
        "p99_ms": max(r["p99_ms"] for r in runs),
        "cpu_ms_per_request": sum(r["cpu_ms_per_request"] for r in runs) / len(runs),
    }


def settle(nodes: list[Node], timeout: float = 120) -> None:
    """Wait until the nodes are idle: requests wrk left behind when it stopped are still
    being served, and would weigh on the next measure."""
    deadline = time.monotonic() + timeout
    before = sum(node.cpu_seconds() for node in nodes)
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = sum(node.cpu_seconds() for node in nodes)
        if now - before < 0.05:
            return
        before = now
    raise RuntimeError(f"the nodes were still busy {timeout} s after the load stopped")


Measure = Callable[[], Coroutine[Any, Any, dict[str, Any]]]


def measures(setup: Setup, plan: Plan) -> dict[str, Measure]:
    """What each round asks of a setup, by name."""
    first, last = setup.nodes[0], setup.nodes[-1]
    out: dict[str, Measure] = {
        "delivery_same_node": lambda: delivery(first, first, plan.deliveries)
    }
    if last is not first:
        out["delivery_cross_node"] = lambda: delivery(first, last, plan.deliveries)
    out["posts_64"] = lambda: posts(setup.nodes, plan.seconds)
    out["fanout"] = lambda: fanout_across(setup.nodes, plan.subscribers, plan.fanout_posts)
    return out


# -- the run ----------------------------------------------------------------------------------


def run(plan: Plan) -> dict[str, Any]:
    load_before = os.getloadavg()
    samples: dict[str, dict[str, list[dict[str, Any]]]] = {}
    with _workdir() as workdir:
        # PostgreSQL and Redis are started from the server core: they and their children stay
        # on it, as the nodes do.
        os.sched_setaffinity(0, {int(SERVER_CORE)})
        pg = PgServer()
        redis = RedisServer(Path(tempfile.mkdtemp(prefix="bench-redis-", dir=workdir)))
        redis.start()
        os.sched_setaffinity(0, {int(LOAD_CORE)})
        started: list[Setup] = []
        try:
            for setup in setups(workdir, pg, redis):
                setup.start()
                started.append(setup)
            for round_no in range(plan.rounds):
                order = started if round_no % 2 == 0 else started[::-1]
                for setup in order:
                    for name, measure in measures(setup, plan).items():
                        result = asyncio.run(measure())
                        samples.setdefault(name, {}).setdefault(setup.name, []).append(result)
                        print(f"round {round_no + 1} {setup.name} {name}: {result}", flush=True)
        finally:
            for setup in started:
                setup.stop()
            redis.stop()
            pg.stop()
    return {
        "machine": _machine(),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "rounds": plan.rounds,
        "plan": vars(plan),
        "load_average": {
            "start": [round(x, 2) for x in load_before],
            "end": [round(x, 2) for x in os.getloadavg()],
        },
        "results": {
            name: {s: {"median": _median(r), "per_round": r} for s, r in per_setup.items()}
            for name, per_setup in samples.items()
        },
    }


COMPARISONS = [
    # (label, (measure, setup), (baseline measure, baseline setup), key, goal)
    ("delivery p50, other node / same node (2 nodes, Redis)", ("delivery_cross_node", "2 nodes"),
     ("delivery_same_node", "2 nodes"), "p50_ms", ""),
    ("delivery p99, other node / same node (2 nodes, Redis)", ("delivery_cross_node", "2 nodes"),
     ("delivery_same_node", "2 nodes"), "p99_ms", "≤ 2"),
    ("delivery p99, other node / one node (in-process bus)", ("delivery_cross_node", "2 nodes"),
     ("delivery_same_node", "postgresql"), "p99_ms", ""),
    ("delivery p50, same node via Redis / one node in-process", ("delivery_same_node", "2 nodes"),
     ("delivery_same_node", "postgresql"), "p50_ms", ""),
    ("posts/s (64 connections), 2 nodes / 1 node, PostgreSQL", ("posts_64", "2 nodes"),
     ("posts_64", "postgresql"), "rps", "no collapse"),
    ("posts/s (64 connections), PostgreSQL / SQLite, 1 node", ("posts_64", "postgresql"),
     ("posts_64", "sqlite"), "rps", ""),
    ("fan-out to 1,000 sockets, events/s, 2 nodes / 1 node", ("fanout", "2 nodes"),
     ("fanout", "postgresql"), "events_per_s", "no collapse"),
    ("fan-out p99, 2 nodes / 1 node", ("fanout", "2 nodes"), ("fanout", "postgresql"),
     "p99_ms", ""),
    ("fan-out to 1,000 sockets, events/s, PostgreSQL / SQLite", ("fanout", "postgresql"),
     ("fanout", "sqlite"), "events_per_s", ""),
]  # fmt: skip


def comparisons(report: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    results = report["results"]
    for label, (measure, setup), (base_measure, base_setup), key, goal in COMPARISONS:
        if setup not in results.get(measure, {}) or base_setup not in results.get(base_measure, {}):
            continue
        value = results[measure][setup]["median"][key]
        baseline = results[base_measure][base_setup]["median"][key]
        rows.append(
            {
                "measure": label,
                "value": round(value, 2),
                "baseline": round(baseline, 2),
                "ratio": round(value / baseline, 2) if baseline else None,
                "goal": goal,
            }
        )
    return rows


def markdown(report: dict[str, Any]) -> str:
    load = report["load_average"]
    plan = report["plan"]
    lines = [
        "# Scaling out: real nodes (issue 14)",
        "",
        f"On {report['machine']}, {report['date']}; medians of {report['rounds']} rounds, the "
        f"setups in alternating order. Load average (1, 5, 15 min) {load['start']} at the start, "
        f"{load['end']} at the end (2 means both cores busy). Servers (nodes, PostgreSQL, "
        "Redis) on core 0, the load on core 1. Delivery: "
        f"{plan['deliveries']} posts one at a time, the first tenth dropped; posts: wrk, "
        f"{CONNECTIONS} connections, {plan['seconds']} s; fan-out: {plan['fanout_posts']} posts "
        f"to {plan['subscribers']} sockets.",
        "",
        "| measure | value | baseline | ratio | goal |",
        "|---|---|---|---|---|",
        *(
            f"| {r['measure']} | {r['value']} | {r['baseline']} | {r['ratio']} | {r['goal']} |"
            for r in comparisons(report)
        ),
        "",
        "| measure | setup | " + " | ".join(("figure",) * 4) + " |",
        "|---|---|---|---|---|---|",
    ]
    for name, per_setup in report["results"].items():
        for setup, result in per_setup.items():
            figures = [f"{k} {v:.2f}" for k, v in result["median"].items()]
            figures += [""] * (4 - len(figures))
            lines.append(f"| {name} | {setup} | " + " | ".join(figures) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="short runs to check the harness")
    parser.add_argument("--rounds", type=int, help="alternating rounds (default: 3, quick 1)")
    args = parser.parse_args()
    plan = QUICK if args.quick else FULL
    if args.rounds:
        plan = replace(plan, rounds=args.rounds)
    report = run(plan)
    report["comparisons"] = comparisons(report)
    write_results("cluster_quick" if args.quick else "cluster", report, markdown(report))


if __name__ == "__main__":
    main()
