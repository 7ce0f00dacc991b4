"""Soak: hours of mixed, steady work on real nodes, and proof that nothing was lost (issue 25).

One node (SQLite, the in-process bus) or two nodes (one PostgreSQL, one Redis, nginx in front
running the shipped `deploy/nginx.conf`), all pinned to core 0; this process (the load, the fake
model) on core 1. For `--minutes` the load runs at a modest, steady rate, not at saturation:

- posts: 10 posters, 2 posts/s each, each poster in turn in its own channel (5 channels);
- history: a page of 50 from a channel, 5/s;
- sockets: 50 that stay for the whole run (each subscribed to two of the post channels, one
  in five to the mention and schedule channels too), and one that joins a post channel every
  2 s and leaves 3 to 12 s later;
- mentions: one every 5 s, answered by the fake model with a `rag_query` tool call, then text;
- uploads: a 64 KiB file every 10 s; knowledge queries: one every 10 s on a 24-section document;
- a schedule (made through the schedules API) firing every minute, its prompt answered too.

Every minute: throughput and p50/p99 per operation, and each node's RSS, open file descriptors
and CPU. At the end it checks that every message answered 2xx is stored exactly once (in the
database and in history), that every socket that stayed saw every message event of its channels
exactly once and in one order (the same for every socket, each poster's order kept), that every
socket that came and went saw a gap-free slice of that order, that every upload reads back
intact and that the schedule fired once each minute. Goals: those hold, RSS grows at most 10%
after the warm-up (the first sixth of the run), latency stays flat.

    python -m bench.soak --nodes 1 --minutes 60    # bench/results/soak-1node.md and .json
    python -m bench.soak --nodes 2 --minutes 60    # bench/results/soak-2nodes.md and .json
    python -m bench.soak --nodes 1 --minutes 3     # a short run: soak-1node-short.*

Exit status: 0 when every goal holds, 1 when something was lost (a verification failed),
2 when nothing was lost but memory or latency was not flat.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import os
import random
import re
import shutil
import sqlite3
import statistics
import sys
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from tests import pg_server
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.script import Reply, text, tool_call, tool_calls
from tests.fakes.server import RecordedRequest
from tests.nginx_server import Nginx
from tests.pg_server import PgServer
from tests.redis_server import RedisServer
from websockets.asyncio.client import ClientConnection, connect

from bench.bench_cluster import Node
from bench.bench_hot_paths import (
    LOAD_CORE,
    OWNER_KEY,
    SERVER_CORE,
    _machine,
    _workdir,
    write_results,
)

POST_CHANNELS = 5
POSTERS = 10
POSTS_PER_S_EACH = 2.0
HISTORY_PER_S = 5.0
STAYING_SOCKETS = 50
CHURN_EVERY_S = 2.0
CHURN_STAY_S = (3.0, 12.0)
MENTION_EVERY_S = 5.0
UPLOAD_EVERY_S = 10.0
UPLOAD_BYTES = 64 * 1024
QUERY_EVERY_S = 10.0
PING_EVERY_S = 20.0
JOIN_TIMEOUT_S = 30.0
FIRING_GRACE_S = 10.0
LAG_PROBE_S = 0.1
REPLY_TIMEOUT_S = 60.0
MEMORY_GROWTH_GOAL = 0.10
P50_DRIFT_GOAL = (1.5, 2.0)
"""Latency is flat when the end's p50 is at most 1.5 times the start's plus 2 ms..."""
P99_DRIFT_GOAL = (2.0, 10.0)
"""...and the end's p99 at most twice the start's plus 10 ms (a p99 of a minute's few
mentions or uploads is nearly their maximum: it needs the wider bound)."""
OPERATIONS = {
    "post": "post (POST /api/messages)",
    "history": "history (GET /api/messages, 50)",
    "socket_join": "socket join (open, auth, subscribed)",
    "mention_first_token": "mention → first token",
    "mention_done": "mention → reply stored",
    "upload": "upload (64 KiB)",
    "knowledge": "knowledge query (topK 5)",
    "schedule_delay": "schedule firing delay",
}
TOPICS = [
    "bee hives", "bicycle chains", "sourdough starters", "tomato blight", "roof gutters",
    "chess openings", "violin strings", "compost heaps", "kayak repair", "wool felting",
    "clock springs", "pond pumps", "tile grout", "apple grafting", "canvas tents",
    "wood stoves", "seed saving", "cast iron pans", "rain barrels", "knife sharpening",
    "fence posts", "honey harvest", "bread ovens", "garden sheds",
]  # fmt: skip


def handbook() -> str:
    """The document the knowledge queries search: one section per topic."""
    sections = [
        f"## {topic.title()}\n\nNotes on {topic}: check the {topic} every spring, keep a log of "
        f"what was done to the {topic}, and ask the club before changing how {topic} are kept. "
        f"Section {n} of the handbook.\n"
        for n, topic in enumerate(TOPICS)
    ]
    return "# The club handbook\n\n" + "\n".join(sections)


def respond(request: RecordedRequest) -> Reply | None:
    """The fake model: grades every passage it is asked to re-score, calls `rag_query` for a
    question, and answers in text once the tool has answered."""
    messages = (request.body or {}).get("messages") or []
    if not messages:
        return None
    if str(messages[0].get("content", "")).startswith("You grade search results."):
        passages = re.findall(r"(?m)^\[\d+\] ", str(messages[-1]["content"]))
        return text(json.dumps({"scores": [5] * len(passages)}))
    if messages[-1].get("role") == "tool":
        return text("The", " handbook", " says", " to check", " it every spring.")
    topic = random.choice(TOPICS)
    return tool_calls(tool_call("rag_query", {"query": f"how to look after {topic}", "topK": 3}))


# -- what runs -------------------------------------------------------------------------------


class Deployment:
    """The nodes under test and what they stand on: SQLite for one, PostgreSQL, Redis and
    nginx for two. Servers are started from the server core, which their children keep."""

    def __init__(self, workdir: Path, nodes: int, node_env: dict[str, str] | None = None) -> None:
        self.workdir = workdir
        self.count = nodes
        self.node_env = node_env or {}
        self.nodes: list[Node] = []
        self.pg: PgServer | None = None
        self.redis: RedisServer | None = None
        self.nginx: Nginx | None = None
        self.database_url: str | None = None

    @property
    def base_url(self) -> str:
        return self.nginx.base_url if self.nginx else self.nodes[0].base

    @property
    def ws_url(self) -> str:
        return self.nginx.ws_url if self.nginx else self.nodes[0].ws_url

    def start(self) -> None:
        os.sched_setaffinity(0, {int(SERVER_CORE)})
        try:
            env: dict[str, str] = {}
            if self.count > 1:
                self.pg = PgServer()
                self.redis = RedisServer(self.workdir / "redis")
                self.redis.start()
                self.database_url = self.pg.new_database("soak")
                env = {
                    "DATABASE_URL": self.database_url,
                    "REDIS_URL": self.redis.url(),
                    "PALAVER_TRUST_PROXY": "1",
                }
            for n in range(self.count):  # one at a time: the first migrates the database
                name = f"node-{'ab'[n]}"
                node = Node(
                    self.workdir / name, name, self.workdir / "data", {**env, **self.node_env}
                )
                self.nodes.append(node)
                node.start()
            if self.count > 1:
                upstreams = [f"127.0.0.1:{node.port}" for node in self.nodes]
                self.nginx = Nginx(self.workdir / "nginx", upstreams)
                self.nginx.start()
        finally:
            os.sched_setaffinity(0, {int(LOAD_CORE)})

    def stop(self) -> None:
        """Stop everything, each part whatever the others did; PostgreSQL's folder goes even
        when pgserver's own removal raced with the server's last writes."""
        for part in (self.nginx, *self.nodes, self.redis, self.pg):
            if part is None:
                continue
            try:
                part.stop()
            except Exception as exc:
                print(f"stopping {type(part).__name__}: {exc!r}", file=sys.stderr)
        if self.pg is not None and self.pg.folder.exists():
            time.sleep(1)
            shutil.rmtree(self.pg.folder, ignore_errors=True)

    def logged_problems(self) -> list[str]:
        """Lines of the nodes' logs (and nginx's) that tell of a failure."""
        logs = [(node.name, node.workdir / f"{node.name}.log") for node in self.nodes]
        if self.nginx is not None:
            logs.append(("nginx", self.nginx.prefix / "error.log"))
        found = []
        for name, log in logs:
            for line in log.read_text(errors="replace").splitlines() if log.exists() else []:
                if re.search(r"Traceback|\bERROR\b|\[(error|crit|alert|emerg)\]", line):
                    found.append(f"{name}: {line[:300]}")
        return found

    def stored(self, channel_ids: list[str]) -> list[tuple[str, str, str, str]]:
        """(id, channel id, type, content) of every message stored in these channels, read
        from the database as an operator would, not through the service."""
        marks = ", ".join("?" * len(channel_ids))
        query = f"SELECT id, channel_id, type, content FROM messages WHERE channel_id IN ({marks})"
        if self.database_url is not None:
            with pg_server.connect(self.database_url) as conn:
                rows = conn.execute(query.replace("?", "%s").encode(), channel_ids).fetchall()
        else:
            path = self.workdir / "data" / "palaver.db"
            with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
                rows = db.execute(query, channel_ids).fetchall()
        return [(str(a), str(b), str(c), str(d)) for a, b, c, d in rows]


@dataclass
class Sample:
    minute: int
    op: str
    ms: float


@dataclass
class Recorder:
    """Every timed operation and every failure, by minute of the run."""

    started: float = field(default_factory=time.monotonic)
    samples: list[Sample] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)

    def minute(self) -> int:
        return int((time.monotonic() - self.started) // 60)

    def ok(self, op: str, began: float) -> None:
        self.samples.append(Sample(self.minute(), op, 1000 * (time.monotonic() - began)))

    def ms(self, op: str, ms: float) -> None:
        self.samples.append(Sample(self.minute(), op, ms))

    def fail(self, op: str, what: str) -> None:
        self.failures.append({"minute": self.minute(), "op": op, "what": what[:300]})


class Listener:
    """One socket: subscribes to its channels, answers nothing but pings, and keeps the ids of
    the `message` events of each channel in the order they came."""

    def __init__(
        self, name: str, channels: list[str], on_event: Callable[..., None] | None = None
    ) -> None:
        self.name = name
        self.channels = channels
        self.on_event = on_event
        self.seen: dict[str, list[str]] = {c: [] for c in channels}
        self.joined = asyncio.Event()
        self.join_ms = 0.0
        self.broken: str | None = None

    async def run(self, ws_url: str, token: str, stop: asyncio.Event) -> None:
        began = time.monotonic()
        try:
            async with connect(ws_url, compression=None, max_queue=None, open_timeout=30) as ws:
                await ws.send(json.dumps({"type": "auth", "token": token}))
                for channel in self.channels:
                    await ws.send(json.dumps({"type": "subscribe", "channelId": channel}))
                reading = asyncio.create_task(self._read(ws, began))
                pinging = asyncio.create_task(self._ping(ws))
                stopping = asyncio.create_task(stop.wait())
                await asyncio.wait({reading, stopping}, return_when=asyncio.FIRST_COMPLETED)
                for task in (pinging, stopping):
                    task.cancel()
                await asyncio.gather(pinging, stopping, return_exceptions=True)
                if reading.done():
                    reading.result()  # raises what ended the reading, if anything did
                    if not stop.is_set():
                        self.broken = "the server closed the socket"
                else:
                    reading.cancel()
                    await asyncio.gather(reading, return_exceptions=True)
        except Exception as exc:
            self.broken = f"{type(exc).__name__}: {exc}"
        finally:
            self.joined.set()

    async def _read(self, ws: ClientConnection, began: float) -> None:
        waiting = set(self.channels)
        async for raw in ws:
            event = json.loads(raw)
            kind, data = event.get("type"), event.get("data") or {}
            if kind == "subscribed":
                waiting.discard(data.get("channelId"))
                if not waiting:
                    self.join_ms = 1000 * (time.monotonic() - began)
                    self.joined.set()
            elif kind == "message" and data.get("channelId") in self.seen:
                self.seen[data["channelId"]].append(sys.intern(data["id"]))
            if self.on_event is not None:
                self.on_event(kind, data)

    async def _ping(self, ws: ClientConnection) -> None:
        while True:
            await asyncio.sleep(PING_EVERY_S)
            await ws.send(json.dumps({"type": "ping"}))


def _share(used: float, elapsed: float | None) -> int | None:
    """CPU seconds used as a percentage of one core over `elapsed` seconds."""
    return round(100 * used / elapsed) if elapsed else None


def cpu_pressure() -> float | None:
    """The share of the last minute in which some runnable task of the machine waited for a
    core (Linux PSI): how much other work competed with the servers and the load."""
    try:
        line = Path("/proc/pressure/cpu").read_text().splitlines()[0]
    except OSError:
        return None
    found = re.search(r"avg60=([\d.]+)", line)
    return float(found.group(1)) if found else None


async def paced(every: float, until: float, work: Callable[[int], Awaitable[None]]) -> None:
    """`work(n)` started every `every` seconds until `until` (monotonic), each awaited: a
    slow answer delays the next rather than piling up."""
    start, n = time.monotonic(), 0
    while time.monotonic() < until:
        await work(n)
        n += 1
        await asyncio.sleep(max(0.0, start + n * every - time.monotonic()))


# -- the load --------------------------------------------------------------------------------


class Soak:
    """The workspace the load works in, the load itself, and what it saw."""

    def __init__(self, deployment: Deployment, fake: FakeOpenAI, minutes: int) -> None:
        self.dep = deployment
        self.fake = fake
        self.minutes = minutes
        self.run_id = uuid.uuid4().hex[:8]
        self.rec = Recorder()
        # Idle connections are dropped after 2 s, well before a node closes them (uvicorn: 5 s,
        # httpx's own default too): a request sent on one the node was closing is reset.
        limits = httpx.Limits(max_connections=64, keepalive_expiry=2.0)
        self.http = httpx.AsyncClient(base_url=deployment.base_url, timeout=30, limits=limits)
        self.token = ""
        self.agent_id = ""
        self.post_channels: list[str] = []
        self.mention_channel = ""
        self.schedule_channel = ""
        self.schedule_id = ""
        self.schedule_made = 0.0
        self.accepted: dict[str, tuple[str, str]] = {}
        """Message id answered 2xx: (channel, content)."""
        self.unanswered: list[str] = []
        """Contents of posts that got no answer (a transport error): stored or not, unknown."""
        self.sent_order: dict[str, list[str]] = {}
        """Each poster's accepted ids, in the order it sent them (one after another)."""
        self.uploads: list[tuple[str, str]] = []
        self.staying: list[Listener] = []
        self.churned: list[Listener] = []
        self.firings: list[dict[str, Any]] = []
        self.resources: list[dict[str, Any]] = []
        self.lags: list[float] = []
        self.mention_events: asyncio.Queue[tuple[str, dict[str, Any], float]] = asyncio.Queue()
        self.streams_open: set[str] = set()
        self.load_ended = 0.0
        self.baseline: set[str] = set()
        """The ids stored in the channels before the load (none but setup's)."""

    # setup

    async def prepare(self) -> None:
        login = await self.http.post("/api/login", json={"password": OWNER_KEY})
        login.raise_for_status()
        self.token = login.cookies["session"]
        self.http.headers["Cookie"] = f"session={self.token}"
        settings = {
            "providers": {"fake": {"type": "openai", "baseUrl": f"{self.fake.url}/v1"}},
            "limits": {"messagesPerMinute": 100_000, "messageBurst": 100_000},
        }
        await self._ok("PUT", "/api/settings", json=settings)
        agent = {"name": "Soaker", "model": "fake/m", "tools": ["rag_query"]}
        self.agent_id = (await self._ok("POST", "/api/agents", json=agent))["agent"]["id"]
        document = ("handbook.md", handbook().encode(), "text/markdown")
        await self._ok(
            "POST", "/api/rag/upload", files={"file": document}, data={"agentId": self.agent_id}
        )
        for n in range(POST_CHANNELS):
            self.post_channels.append(await self._channel(f"posts-{n}", []))
        self.mention_channel = await self._channel("mentions", [self.agent_id])
        self.schedule_channel = await self._channel("schedules", [self.agent_id])

    async def start_schedule(self) -> None:
        body = {
            "agentId": self.agent_id,
            "channelId": self.schedule_channel,
            "prompt": "Say what the handbook asks of the bee hives.",
            "schedule": "* * * * *",
        }
        self.schedule_made = time.time()
        self.schedule_id = (await self._ok("POST", "/api/schedules", json=body))["schedule"]["id"]

    async def _channel(self, name: str, agents: list[str]) -> str:
        body = {"name": f"{name}-{self.run_id}", "type": "group", "agentIds": agents}
        channel_id: str = (await self._ok("POST", "/api/channels", json=body))["channel"]["id"]
        return channel_id

    async def _ok(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        answer = await self.http.request(method, path, **kwargs)
        if answer.status_code != 200:
            raise RuntimeError(f"{method} {path}: {answer.status_code} {answer.text[:300]}")
        body: dict[str, Any] = answer.json()
        return body

    async def _timed(self, op: str, method: str, path: str, **kwargs: Any) -> httpx.Response | None:
        """A request of the load: timed when it answers 2xx, recorded as a failure if not."""
        began = time.monotonic()
        try:
            answer = await self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            self.rec.fail(op, f"{type(exc).__name__}: {exc}")
            return None
        if answer.is_success:
            self.rec.ok(op, began)
            return answer
        self.rec.fail(op, f"{answer.status_code} {answer.text[:200]}")
        return None

    # the parts of the load

    async def poster(self, n: int, until: float) -> None:
        channel = self.post_channels[n % POST_CHANNELS]
        order = self.sent_order.setdefault(f"p{n}", [])

        async def one(seq: int) -> None:
            content = f"soak {self.run_id} p{n}-{seq}"
            body = {"channelId": channel, "content": content}
            began = time.monotonic()
            try:
                answer = await self.http.post("/api/messages", json=body)
            except httpx.HTTPError as exc:
                self.unanswered.append(content)
                self.rec.fail("post", f"{type(exc).__name__}: {exc}")
                return
            if answer.is_success:
                self.rec.ok("post", began)
                message_id = answer.json()["id"]
                self.accepted[message_id] = (channel, content)
                order.append(message_id)
            else:
                self.rec.fail("post", f"{answer.status_code} {answer.text[:200]}")

        await asyncio.sleep(random.uniform(0, 1 / POSTS_PER_S_EACH))
        await paced(1 / POSTS_PER_S_EACH, until, one)

    async def history(self, until: float) -> None:
        async def one(_: int) -> None:
            channel = random.choice(self.post_channels)
            params = {"channelId": channel, "limit": 50}
            await self._timed("history", "GET", "/api/messages", params=params)

        await paced(1 / HISTORY_PER_S, until, one)

    async def churn(self, until: float) -> None:
        """A socket joins a post channel every few seconds and leaves a few seconds later."""
        visits: list[asyncio.Task[None]] = []

        async def visit(listener: Listener) -> None:
            stop = asyncio.Event()
            running = asyncio.create_task(listener.run(self.dep.ws_url, self.token, stop))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(listener.joined.wait(), JOIN_TIMEOUT_S)
            if not listener.join_ms and listener.broken is None:
                listener.broken = f"not subscribed within {JOIN_TIMEOUT_S} s"
            if listener.broken is None:
                self.rec.ms("socket_join", listener.join_ms)
                await asyncio.sleep(random.uniform(*CHURN_STAY_S))
            stop.set()
            await running
            if listener.broken is not None:
                self.rec.fail("socket_join", listener.broken)

        async def one(n: int) -> None:
            listener = Listener(f"churn-{n}", [random.choice(self.post_channels)])
            self.churned.append(listener)
            visits.append(asyncio.create_task(visit(listener)))

        await paced(CHURN_EVERY_S, until, one)
        await asyncio.gather(*visits)

    async def mentions(self, until: float) -> None:
        """One mention at a time: posted, then timed until the reply's first token and until
        the reply is stored."""

        async def one(n: int) -> None:
            while not self.mention_events.empty():
                self.mention_events.get_nowait()
            content = f"@Soaker soak {self.run_id} question {n}: what about the bee hives?"
            body = {"channelId": self.mention_channel, "content": content}
            began = time.monotonic()
            answer = await self._timed("post", "POST", "/api/messages", json=body)
            if answer is None:
                return
            self.accepted[answer.json()["id"]] = (self.mention_channel, content)
            reply = ""
            first = False
            deadline = began + REPLY_TIMEOUT_S
            while True:
                try:
                    kind, data, at = await asyncio.wait_for(
                        self.mention_events.get(), deadline - time.monotonic()
                    )
                except TimeoutError:
                    self.rec.fail("mention_done", f"no reply to mention {n} in {REPLY_TIMEOUT_S} s")
                    return
                if kind == "stream_start" and data.get("agentId"):
                    reply = data["messageId"]
                elif kind == "stream_chunk" and data.get("messageId") == reply and not first:
                    first = True
                    self.rec.ms("mention_first_token", 1000 * (at - began))
                elif kind == "message" and data.get("agentId") and data["id"] == reply:
                    self.rec.ms("mention_done", 1000 * (at - began))
                    return

        await paced(MENTION_EVERY_S, until, one)

    def watch(self, kind: str, data: dict[str, Any]) -> None:
        """What one staying socket of the mention and schedule channels hears: the mention's
        reply goes to `mentions`; a schedule's prompt is timed against its due time."""
        at = time.monotonic()
        channel = data.get("channelId")
        if kind == "stream_start":
            self.streams_open.add(data["messageId"])
        elif kind == "stream_end":
            self.streams_open.discard(data.get("messageId", ""))
        if channel == self.mention_channel or (kind == "stream_chunk"):
            self.mention_events.put_nowait((kind, data, at))
        if kind == "message" and channel == self.schedule_channel:
            metadata = data.get("metadata") or {}
            if metadata.get("scheduleId") == self.schedule_id and "dueAt" in metadata:
                due = datetime.fromisoformat(metadata["dueAt"].replace("Z", "+00:00"))
                delay_ms = 1000 * (time.time() - due.timestamp())
                self.firings.append({"dueAt": metadata["dueAt"], "id": data["id"]})
                self.rec.ms("schedule_delay", delay_ms)

    async def uploads_and_queries(self, until: float) -> None:
        async def upload(n: int) -> None:
            data = os.urandom(UPLOAD_BYTES)
            files = {"file": (f"soak-{n}.bin", data, "application/octet-stream")}
            answer = await self._timed("upload", "POST", "/api/upload", files=files)
            if answer is not None:
                self.uploads.append((answer.json()["url"], hashlib.sha256(data).hexdigest()))

        async def query(_: int) -> None:
            body = {"agentId": self.agent_id, "query": random.choice(TOPICS), "topK": 5}
            answer = await self._timed("knowledge", "POST", "/api/rag/query", json=body)
            if answer is not None and not answer.json().get("results"):
                self.rec.fail("knowledge", "no passage found")

        await asyncio.sleep(UPLOAD_EVERY_S / 2)
        await asyncio.gather(
            paced(UPLOAD_EVERY_S, until, upload), paced(QUERY_EVERY_S, until, query)
        )

    async def probe_lag(self, until: float) -> None:
        """How late this process's loop wakes up: the load's own delay, which every latency
        measured here includes."""
        while time.monotonic() < until:
            began = time.monotonic()
            await asyncio.sleep(LAG_PROBE_S)
            self.lags.append(1000 * (time.monotonic() - began - LAG_PROBE_S))

    async def sample_resources(self, until: float) -> None:
        """Each node's RSS, open files and CPU at the start and at the end of every minute;
        the load's own CPU and loop lag over the minute before (none at the start)."""
        last_cpu = {node.name: node.cpu_seconds() for node in self.dep.nodes}
        last_own = sum(os.times()[:2])
        last_at = time.monotonic()
        minute = 0
        while True:
            now = time.monotonic()
            own = sum(os.times()[:2])
            lags, self.lags = self.lags, []
            elapsed = now - last_at if minute else None
            row: dict[str, Any] = {
                "minute": minute,
                "nodes": {},
                "load_cpu_pct": _share(own - last_own, elapsed),
                "load_lag_p99_ms": round(_pct(lags, 0.99), 1) if lags else None,
                "cpu_pressure_pct": cpu_pressure(),
            }
            last_own = own
            for node in self.dep.nodes:
                assert node.proc is not None
                cpu = node.cpu_seconds()
                row["nodes"][node.name] = {
                    "rss_mib": round(node.rss_bytes() / 2**20, 1),
                    "fds": len(os.listdir(f"/proc/{node.proc.pid}/fd")),
                    "cpu_pct": _share(cpu - last_cpu[node.name], elapsed),
                }
                last_cpu[node.name] = cpu
            last_at = now
            self.resources.append(row)
            minute += 1
            next_at = self.rec.started + 60 * minute
            if next_at > until + 1:
                return
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))

    # the run

    async def run(self) -> None:
        await self.prepare()
        stop_staying = asyncio.Event()
        for n in range(STAYING_SOCKETS):
            channels = [self.post_channels[(n + k) % POST_CHANNELS] for k in (0, 1)]
            if n % 5 == 0:
                channels += [self.mention_channel, self.schedule_channel]
            self.staying.append(Listener(f"stay-{n}", channels, self.watch if n == 0 else None))
        staying = [
            asyncio.create_task(s.run(self.dep.ws_url, self.token, stop_staying))
            for s in self.staying
        ]
        for listener in self.staying:
            await asyncio.wait_for(listener.joined.wait(), JOIN_TIMEOUT_S)
            if listener.broken is not None:
                raise RuntimeError(f"{listener.name} could not join: {listener.broken}")
        self.baseline = {m[0] for m in self.dep.stored(self.channels())}
        await self.start_schedule()
        self.rec = Recorder()
        until = self.rec.started + 60 * self.minutes
        print(f"load started: {self.minutes} min on {len(self.dep.nodes)} node(s)", flush=True)
        progress = asyncio.create_task(self._progress(until))
        await asyncio.gather(
            *(self.poster(n, until) for n in range(POSTERS)),
            self.history(until),
            self.churn(until),
            self.mentions(until),
            self.uploads_and_queries(until),
            self.sample_resources(until),
            self.probe_lag(until),
        )
        self.load_ended = time.time()
        progress.cancel()
        await self._drain()
        stop_staying.set()
        await asyncio.gather(*staying)

    async def _drain(self) -> None:
        """Stop the schedule, then wait until no reply is streaming and the channels have been
        quiet for a few seconds: every event of the run has reached the sockets."""
        await self._ok("PATCH", f"/api/schedules/{self.schedule_id}", json={"active": False})
        deadline = time.monotonic() + REPLY_TIMEOUT_S
        heard = -1
        while time.monotonic() < deadline:
            now_heard = sum(len(ids) for s in self.staying for ids in s.seen.values())
            if not self.streams_open and now_heard == heard:
                return
            heard = now_heard
            await asyncio.sleep(3)

    async def _progress(self, until: float) -> None:
        while True:
            await asyncio.sleep(60)
            left = max(0, round((until - time.monotonic()) / 60))
            print(
                f"minute {self.rec.minute()}: {len(self.accepted)} messages accepted, "
                f"{len(self.rec.failures)} failures, {left} min left",
                flush=True,
            )

    def channels(self) -> list[str]:
        return [*self.post_channels, self.mention_channel, self.schedule_channel]

    # the verification

    async def verify(self) -> list[dict[str, Any]]:
        """Every check of "nothing lost", each with its verdict and what it found."""
        stored = [m for m in self.dep.stored(self.channels()) if m[0] not in self.baseline]
        history = {c: await self._history(c) for c in self.channels()}
        return [
            self._stored_once(stored, history),
            self._staying_saw_all(stored),
            self._churn_saw_slices(),
            await self._uploads_intact(),
            self._schedule_every_minute(),
            {
                "check": "every request of the load answered 2xx",
                "ok": not self.rec.failures,
                "found": ", ".join(
                    f"{n} {op} failed"
                    for op, n in Counter(f["op"] for f in self.rec.failures).items()
                )
                or "none failed",
                "examples": self.rec.failures[:5],
            },
            {
                "check": "the nodes logged no error",
                "ok": not (problems := self.dep.logged_problems()),
                "found": f"{len(problems)} lines",
                "examples": problems[:5],
            },
        ]

    async def _history(self, channel: str) -> list[str]:
        """The channel's whole main timeline through the API, paged back from the newest."""
        pages: list[list[str]] = []
        before: str | None = None
        while True:
            params: dict[str, Any] = {"channelId": channel, "limit": 100}
            if before:
                params["before"] = before
            page = (await self._ok("GET", "/api/messages", params=params))["messages"]
            if not page:
                break
            pages.append([m["id"] for m in page])
            before = page[0]["id"]
        return [i for page in reversed(pages) for i in page]

    def _stored_once(
        self, stored: list[tuple[str, str, str, str]], history: dict[str, list[str]]
    ) -> dict[str, Any]:
        by_id = {m[0]: m for m in stored}
        contents = Counter(m[3] for m in stored)
        missing = [i for i in self.accepted if i not in by_id]
        twice = [c for _, c in self.accepted.values() if contents[c] != 1]
        wrong = [
            i for i, (ch, c) in self.accepted.items() if i in by_id and by_id[i][1:4:2] != (ch, c)
        ]
        in_history = Counter(i for ids in history.values() for i in ids)
        not_in_history = [i for i in self.accepted if in_history[i] != 1]
        stray = [
            m[0]
            for m in stored
            if m[3].startswith(f"soak {self.run_id} p") and m[0] not in self.accepted
        ]
        unanswered_stored = sum(1 for c in self.unanswered if contents[c])
        ok = not (missing or twice or wrong or not_in_history)
        return {
            "check": "every accepted message stored exactly once (database and history)",
            "ok": ok,
            "found": (
                f"{len(self.accepted)} accepted; {len(missing)} missing from the database, "
                f"{len(twice)} stored more or less than once, {len(wrong)} stored with another "
                f"channel or text, {len(not_in_history)} not once in history; "
                f"{len(self.unanswered)} posts unanswered ({unanswered_stored} of them stored), "
                f"{len(stray)} stored posts not acknowledged"
            ),
            "examples": (missing + twice + wrong + not_in_history)[:5],
        }

    def _order(self) -> dict[str, list[str]]:
        """Each channel's order as the staying sockets heard it (the first socket that holds
        the channel); checked against the others and against the store."""
        order: dict[str, list[str]] = {}
        for listener in self.staying:
            for channel, ids in listener.seen.items():
                order.setdefault(channel, ids)
        return order

    def _staying_saw_all(self, stored: list[tuple[str, str, str, str]]) -> dict[str, Any]:
        """Every stored message is heard, tool calls and results included (they are messages
        too)."""
        expected: dict[str, set[str]] = {c: set() for c in self.channels()}
        for message_id, channel, _, _ in stored:
            expected[channel].add(message_id)
        order = self._order()
        problems: list[str] = []
        events = 0
        for listener in self.staying:
            if listener.broken:
                problems.append(f"{listener.name} lost its socket: {listener.broken}")
            for channel, ids in listener.seen.items():
                events += len(ids)
                duplicated = len(ids) - len(set(ids))
                missing = expected[channel] - set(ids)
                extra = set(ids) - expected[channel]
                if duplicated or missing or extra:
                    problems.append(
                        f"{listener.name} {channel}: {len(missing)} missed, {duplicated} twice, "
                        f"{len(extra)} not stored (such as {sorted(missing | extra)[:2]})"
                    )
                elif ids != order[channel]:
                    problems.append(f"{listener.name} {channel}: another order than the others")
        position = {i: n for ids in order.values() for n, i in enumerate(ids)}
        for poster, sent in self.sent_order.items():
            heard = [position[i] for i in sent if i in position]
            if heard != sorted(heard):
                problems.append(f"{poster}'s posts heard out of the order they were sent")
        history_order = sum(ids == sorted(ids) for ids in order.values())
        return {
            "check": "every staying socket saw every message of its channels once, in one order",
            "ok": not problems,
            "found": (
                f"{len(self.staying)} sockets, {events} message events checked against "
                f"{len(stored)} stored; {len(problems)} problems; each poster's order kept: "
                f"{not any('order they were sent' in p for p in problems)}; channels whose "
                f"event order is also id order: {history_order} of {len(order)}"
            ),
            "examples": problems[:5],
        }

    def _churn_saw_slices(self) -> dict[str, Any]:
        order = self._order()
        position = {c: {i: n for n, i in enumerate(ids)} for c, ids in order.items()}
        problems: list[str] = []
        events = 0
        for listener in self.churned:
            for channel, ids in listener.seen.items():
                events += len(ids)
                places = [position[channel].get(i, -1) for i in ids]
                if -1 in places:
                    problems.append(f"{listener.name}: an event of a message nobody else heard")
                elif places and places != list(range(places[0], places[0] + len(places))):
                    problems.append(f"{listener.name}: a gap, a repeat or another order")
        broken = [f"{c.name}: {c.broken}" for c in self.churned if c.broken]
        return {
            "check": "every socket that joined and left saw a gap-free slice of that order",
            "ok": not problems and not broken,
            "found": (
                f"{len(self.churned)} sockets came and went, {events} events, {len(problems)} "
                f"problems, {len(broken)} failed to join"
            ),
            "examples": (problems + broken)[:5],
        }

    async def _uploads_intact(self) -> dict[str, Any]:
        bad = []
        for url, digest in self.uploads:
            answer = await self.http.get(url)
            if answer.status_code != 200 or hashlib.sha256(answer.content).hexdigest() != digest:
                bad.append(f"{url}: {answer.status_code}")
        return {
            "check": "every upload reads back with the bytes sent",
            "ok": not bad,
            "found": f"{len(self.uploads)} uploads, {len(bad)} missing or changed",
            "examples": bad[:5],
        }

    def _schedule_every_minute(self) -> dict[str, Any]:
        due = Counter(f["dueAt"] for f in self.firings)
        # A minute that came due in the load's last seconds may have been paused before it ran.
        last = int((self.load_ended - FIRING_GRACE_S) // 60)
        expected = list(range(int(self.schedule_made // 60) + 1, last + 1))
        fired = {
            int(datetime.fromisoformat(d.replace("Z", "+00:00")).timestamp() // 60) for d in due
        }
        missed = [m for m in expected if m not in fired]
        twice = [d for d, n in due.items() if n > 1]
        return {
            "check": "the schedule fired once every minute",
            "ok": not missed and not twice and bool(expected),
            "found": f"{len(expected)} minutes due, {len(fired)} fired, {len(missed)} missed, "
            f"{len(twice)} fired twice",
            "examples": [*map(str, missed), *twice][:5],
        }


# -- the report ------------------------------------------------------------------------------


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def per_minute(rec: Recorder, minutes: int) -> list[dict[str, Any]]:
    """Each minute's count, p50 and p99 per operation, and its failures."""
    grouped: dict[tuple[int, str], list[float]] = {}
    for sample in rec.samples:
        grouped.setdefault((sample.minute, sample.op), []).append(sample.ms)
    rows = []
    for minute in range(minutes):
        row: dict[str, Any] = {"minute": minute, "ops": {}}
        for op in OPERATIONS:
            values = grouped.get((minute, op))
            if values:
                row["ops"][op] = {
                    "count": len(values),
                    "p50_ms": round(_pct(values, 0.5), 1),
                    "p99_ms": round(_pct(values, 0.99), 1),
                }
        row["failures"] = sum(1 for f in rec.failures if f["minute"] == minute)
        rows.append(row)
    return rows


def flatness(rec: Recorder, resources: list[dict[str, Any]], minutes: int) -> dict[str, Any]:
    """Warm-up against the end: each node's RSS growth from the end of the warm-up to the end
    of the run, and each operation's latency in the window after the warm-up against the last
    window of the same length."""
    warm = max(1, minutes // 6)
    window = max(1, min(warm, (minutes - warm) // 2))
    start = range(warm, warm + window)
    end = range(minutes - window, minutes)
    memory = {}
    after_warm = [r for r in resources if r["minute"] >= warm]
    for name in resources[0]["nodes"] if resources else []:
        first, last = after_warm[0]["nodes"][name], after_warm[-1]["nodes"][name]
        peak = max(r["nodes"][name]["rss_mib"] for r in after_warm)
        growth = (last["rss_mib"] - first["rss_mib"]) / first["rss_mib"]
        memory[name] = {
            "rss_mib_after_warm_up": first["rss_mib"],
            "rss_mib_end": last["rss_mib"],
            "rss_mib_peak": peak,
            "growth": round(growth, 4),
            "fds_after_warm_up": first["fds"],
            "fds_end": last["fds"],
            "ok": growth <= MEMORY_GROWTH_GOAL,
        }
    latency = {}
    for op in OPERATIONS:
        a = [s.ms for s in rec.samples if s.op == op and s.minute in start]
        b = [s.ms for s in rec.samples if s.op == op and s.minute in end]
        if not a or not b:
            continue
        figures = {
            "start_p50_ms": _pct(a, 0.5), "end_p50_ms": _pct(b, 0.5),
            "start_p99_ms": _pct(a, 0.99), "end_p99_ms": _pct(b, 0.99),
        }  # fmt: skip
        ok = (
            figures["end_p50_ms"] <= P50_DRIFT_GOAL[0] * figures["start_p50_ms"] + P50_DRIFT_GOAL[1]
        )
        ok &= (
            figures["end_p99_ms"] <= P99_DRIFT_GOAL[0] * figures["start_p99_ms"] + P99_DRIFT_GOAL[1]
        )
        latency[op] = {
            **{k: round(v, 1) for k, v in figures.items()},
            "p50_drift": round(figures["end_p50_ms"] / max(figures["start_p50_ms"], 1e-9), 2),
            "ok": ok,
        }
    return {
        "warm_up_minutes": warm,
        "start_window": [start.start, start.stop - 1],
        "end_window": [end.start, end.stop - 1],
        "memory": memory,
        "latency": latency,
    }


def goals(checks: list[dict[str, Any]], flat: dict[str, Any]) -> list[dict[str, Any]]:
    memory, latency = flat["memory"], flat["latency"]
    growth = ", ".join(f"{n} {100 * m['growth']:+.1f}%" for n, m in memory.items())
    drifting = [OPERATIONS[op] for op, f in latency.items() if not f["ok"]]
    return [
        {
            "goal": "nothing lost",
            "ok": all(c["ok"] for c in checks),
            "found": "; ".join(c["check"] + (": yes" if c["ok"] else ": NO") for c in checks),
        },
        {
            "goal": f"flat memory (RSS growth after warm-up ≤ {100 * MEMORY_GROWTH_GOAL:.0f}%)",
            "ok": bool(memory) and all(m["ok"] for m in memory.values()),
            "found": growth,
        },
        {
            "goal": "flat latency (end vs just after warm-up: p50 ≤ 1.5× + 2 ms, p99 ≤ 2× + 10 ms)",
            "ok": bool(latency) and not drifting,
            "found": "drifted: " + ", ".join(drifting)
            if drifting
            else f"{len(latency)} operations flat",
        },
    ]


def _or_dash(value: Any) -> str:
    return "–" if value is None else str(value)


def _cell(figures: dict[str, Any] | None) -> str:
    return f"{figures['p50_ms']:.0f} / {figures['p99_ms']:.0f}" if figures else "–"


def markdown(report: dict[str, Any]) -> str:
    flat = report["flatness"]
    node_names = list(report["resources"][0]["nodes"]) if report["resources"] else []
    pressures = [r["cpu_pressure_pct"] for r in report["resources"][1:] if r["cpu_pressure_pct"]]
    pressure = f"{statistics.mean(pressures):.0f}%" if pressures else "unknown"
    lines = [
        f"# Soak: {report['minutes']} minutes on {report['setup']} (issue 25)",
        "",
        "| goal | verdict | found |",
        "|---|---|---|",
        *(
            f"| {g['goal']} | {'PASS' if g['ok'] else 'FAIL'} | {g['found']} |"
            for g in report["goals"]
        ),
        "",
        f"On {report['machine']}, {report['date']}. Servers on core 0, the load and the fake "
        f"model on core 1. Load average (1, 5, 15 min) {report['load_average']['start']} at "
        f"the start, {report['load_average']['end']} at the end; the machine's CPU pressure "
        f"(PSI, see the last table) {pressure} on average over the run. The load: "
        f"{report['plan']}."
        + (
            f" The nodes' extra environment: {', '.join(f'{k}={v}' for k, v in env.items())}."
            if (env := report.get("node_env"))
            else ""
        ),
        "",
        "## Verification",
        "",
        "Read after the load stopped and the last reply was stored: the message ids answered "
        "2xx against the database (read directly) and the history API; each socket's `message` "
        'events against the database. "In order": every socket of a channel heard one order '
        "(the bus's), in which each poster's posts (each sent after the previous was answered) "
        "keep the order they were sent. Id order is not asked for: an agent's reply takes its "
        "id when it starts streaming, before its tool calls, and two nodes take ids by two "
        "clocks.",
        "",
        "| check | verdict | found |",
        "|---|---|---|",
        *(
            f"| {c['check']} | {'PASS' if c['ok'] else 'FAIL'} | {c['found']} |"
            + "".join(f"<br>{e}" for e in c.get("examples", []) if not c["ok"])
            for c in report["checks"]
        ),
        "",
        f"## Warm-up ({flat['warm_up_minutes']} min) against the end",
        "",
        "| node | RSS after warm-up MiB | RSS end MiB | peak MiB | growth | fds after warm-up | "
        "fds end |",
        "|---|---|---|---|---|---|---|",
        *(
            f"| {name} | {m['rss_mib_after_warm_up']} | {m['rss_mib_end']} | {m['rss_mib_peak']} "
            f"| {100 * m['growth']:+.1f}% | {m['fds_after_warm_up']} | {m['fds_end']} |"
            for name, m in flat["memory"].items()
        ),
        "",
        f"Latency, minutes {flat['start_window'][0]}–{flat['start_window'][1]} against minutes "
        f"{flat['end_window'][0]}–{flat['end_window'][1]} (ms):",
        "",
        "| operation | p50 start | p50 end | p50 drift | p99 start | p99 end | flat |",
        "|---|---|---|---|---|---|---|",
        *(
            f"| {OPERATIONS[op]} | {f['start_p50_ms']} | {f['end_p50_ms']} | {f['p50_drift']}× "
            f"| {f['start_p99_ms']} | {f['end_p99_ms']} | {'yes' if f['ok'] else 'NO'} |"
            for op, f in flat["latency"].items()
        ),
        "",
        "## Per minute",
        "",
        "Operations per second, then p50 / p99 in ms.",
        "",
        "| min | posts/s | " + " | ".join(OPERATIONS[op] for op in OPERATIONS) + " | failures |",
        "|---" * (len(OPERATIONS) + 3) + "|",
    ]
    for row in report["per_minute"]:
        posts = row["ops"].get("post", {}).get("count", 0) / 60
        cells = " | ".join(_cell(row["ops"].get(op)) for op in OPERATIONS)
        lines.append(f"| {row['minute']} | {posts:.1f} | {cells} | {row['failures']} |")
    lines += [
        "",
        "Each node at the start of each minute (the last row: the end of the load): RSS MiB, "
        "open file descriptors, CPU % over the minute before (100: one core); the load's own "
        "process (this script and the fake model) over the minute before: its CPU %, and how "
        "late its event loop woke (every latency above includes that); the machine's CPU "
        "pressure (PSI, `some` over the last minute: the share of time some runnable task "
        "waited for a core; near 100 means other work competed with this run throughout).",
        "",
        "| min | "
        + " | ".join(f"{n} RSS | {n} fds | {n} CPU %" for n in node_names)
        + " | load CPU % | load loop lag p99 ms | machine CPU pressure % |",
        "|---" * (4 + 3 * len(node_names)) + "|",
    ]
    for row in report["resources"]:
        cells = " | ".join(
            " | ".join(_or_dash(row["nodes"][n][k]) for k in ("rss_mib", "fds", "cpu_pct"))
            for n in node_names
        )
        load = " | ".join(
            _or_dash(row[k]) for k in ("load_cpu_pct", "load_lag_p99_ms", "cpu_pressure_pct")
        )
        lines.append(f"| {row['minute']} | {cells} | {load} |")
    return "\n".join(lines) + "\n"


# -- the run ---------------------------------------------------------------------------------


PLAN = (
    f"{POSTERS} posters at {POSTS_PER_S_EACH:g} posts/s each in {POST_CHANNELS} channels, "
    f"history {HISTORY_PER_S:g}/s, {STAYING_SOCKETS} sockets staying, one joining every "
    f"{CHURN_EVERY_S:g} s for {CHURN_STAY_S[0]:g}–{CHURN_STAY_S[1]:g} s, a mention every "
    f"{MENTION_EVERY_S:g} s (answered with a rag_query tool call), an upload of "
    f"{UPLOAD_BYTES // 1024} KiB and a knowledge query every {UPLOAD_EVERY_S:g} s, a schedule "
    "every minute"
)


async def soak(deployment: Deployment, fake: FakeOpenAI, minutes: int) -> dict[str, Any]:
    run = Soak(deployment, fake, minutes)
    try:
        await run.run()
        checks = await run.verify()
    finally:
        await run.http.aclose()
    flat = flatness(run.rec, run.resources, minutes)
    return {
        "minutes": minutes,
        "checks": checks,
        "flatness": flat,
        "goals": goals(checks, flat),
        "per_minute": per_minute(run.rec, minutes),
        "resources": run.resources,
        "failures": run.rec.failures,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, choices=(1, 2), default=1)
    parser.add_argument("--minutes", type=int, default=60)
    parser.add_argument("--stem", help="results file name (default: soak-1node, soak-2nodes, "
                        "with -short under 60 minutes)")  # fmt: skip
    parser.add_argument("--node-env", action="append", default=[], metavar="NAME=VALUE",
                        help="more environment for every node, e.g. MALLOC_ARENA_MAX=2 or "
                        "PYTHONTRACEMALLOC=25 (repeatable)")  # fmt: skip
    args = parser.parse_args()
    if any("=" not in item for item in args.node_env):
        parser.error("--node-env takes NAME=VALUE")
    node_env = dict(item.split("=", 1) for item in args.node_env)
    if args.minutes < 2:
        parser.error("--minutes must be at least 2: a warm-up and a minute to compare it with")
    stem = args.stem or (
        f"soak-{'1node' if args.nodes == 1 else '2nodes'}{'-short' if args.minutes < 60 else ''}"
    )
    load_before = os.getloadavg()
    os.sched_setaffinity(0, {int(LOAD_CORE)})
    with _workdir() as workdir, FakeOpenAI(responder=respond) as fake:
        deployment = Deployment(workdir, args.nodes, node_env)
        try:
            deployment.start()
            report = asyncio.run(soak(deployment, fake, args.minutes))
        finally:
            deployment.stop()
    report = {
        "setup": "one node, SQLite"
        if args.nodes == 1
        else "two nodes, PostgreSQL + Redis, nginx in front",
        "machine": _machine(),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "plan": PLAN,
        "node_env": node_env,
        "load_average": {
            "start": [round(x, 2) for x in load_before],
            "end": [round(x, 2) for x in os.getloadavg()],
        },
        **report,
    }
    write_results(stem, report, markdown(report))
    lost, memory, latency = (not g["ok"] for g in report["goals"])
    sys.exit(1 if lost else 2 if memory or latency else 0)


if __name__ == "__main__":
    main()
