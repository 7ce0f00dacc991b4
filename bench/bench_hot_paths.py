"""Benchmark: the hot paths beside bare FastAPI/Starlette baselines, in one run.

Each server is pinned to core 0 (taskset) and the load (wrk, and this process's WebSocket
clients) to core 1. Palaver and the bare app alternate over several rounds; the report gives
medians and the ratio Palaver / bare.

- posts: `POST /api/messages` (small text, no mention) against `POST /echo`, wrk at 64
  connections and at 1; the server's CPU time per post from /proc.
- history: `GET /api/messages?limit=50` against a same-size JSON page.
- sockets: open + auth + subscribe per second against a bare accept + auth + subscribe, and a
  storm of reconnects all at once.
- fan-out: posts, edits and reactions delivered to 1,000 subscribed sockets, events/s and
  latency (the bare app broadcasts the same event for all three).
- idle sockets: resident memory per authenticated, subscribed socket.

    python -m bench.bench_hot_paths            # the full run (quiet machine: ~15 minutes)
    python -m bench.bench_hot_paths --quick    # a short run to check the harness
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from tests.support import free_port
from websockets.asyncio.client import ClientConnection, connect

RESULTS = Path(__file__).parent / "results"
SERVER_CORE = "0"
LOAD_CORE = "1"
OWNER_KEY = "benchmark-owner-key"
CONTENT = "hello from the benchmark"
POSTERS = 8
"""People the load posts as, in turn: each has its own rate limit (at most 100,000 a minute)."""


@dataclass
class Plan:
    rounds: int
    seconds: int
    socket_opens: int
    storm: int
    subscribers: int
    fanout_posts: int
    idle_sockets: int


FULL = Plan(
    rounds=5,
    seconds=10,
    socket_opens=3000,
    storm=10_000,
    subscribers=1000,
    fanout_posts=200,
    idle_sockets=10_000,
)
QUICK = Plan(
    rounds=2,
    seconds=2,
    socket_opens=300,
    storm=1000,
    subscribers=200,
    fanout_posts=30,
    idle_sockets=500,
)


# -- servers ----------------------------------------------------------------------------------


class Target:
    """One server process, pinned to the server core, and what the load asks of it."""

    name: str

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.cookie = ""
        self.posters: list[str] = []
        self.channel_id = ""

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    def command(self) -> list[str]:
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        return {**os.environ, "OWNER_KEY": OWNER_KEY}

    def start(self) -> None:
        log = (self.workdir / f"{self.name}.log").open("ab")
        self.proc = subprocess.Popen(
            ["taskset", "-c", SERVER_CORE, *self.command()],
            env=self.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                httpx.get(f"{self.base}/", timeout=1)
                return
            except httpx.TransportError:
                time.sleep(0.1)
        raise RuntimeError(f"{self.name} did not start")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def cpu_seconds(self) -> float:
        assert self.proc is not None
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        return (int(fields[11]) + int(fields[12])) / ticks

    def rss_bytes(self) -> int:
        assert self.proc is not None
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise RuntimeError("no VmRSS")

    # what the load does, per target
    post_path = ""
    page_path = ""
    publish_path = ""

    def post_body(self) -> str:
        return json.dumps({"channelId": self.channel_id, "content": CONTENT})

    async def auth_and_subscribe(self, ws: ClientConnection) -> None:
        await ws.send(json.dumps({"type": "auth", "token": self.cookie}))
        await _expect(ws, "auth_ok")
        await ws.send(json.dumps({"type": "subscribe", "channelId": self.channel_id}))
        await _expect(ws, "subscribed")


class Palaver(Target):
    name = "palaver"
    post_path = "/api/messages"
    publish_path = "/api/messages"

    def command(self) -> list[str]:
        data = self.workdir / "palaver-data"
        return [sys.executable, "-m", "palaver", "serve", "--port", str(self.port),
                "--data-dir", str(data)]  # fmt: skip

    def env(self) -> dict[str, str]:
        return {
            **super().env(),
            "PALAVER_LOG_LEVEL": "warning",
            "PALAVER_WS_UNAUTHENTICATED_PER_ADDRESS": "100000",
            # The storm's 10,000 sockets come from one client process, which needs longer than
            # the 10 s a socket is given to authenticate to send every `auth`.
            "PALAVER_WS_AUTH_SECONDS": "300",
            "HF_HUB_OFFLINE": "1",
        }

    def prepare(self) -> dict[str, Any]:
        """Log in, lift the rate limit, make a channel with a full page; answer the page."""
        with httpx.Client(base_url=self.base, timeout=30) as api:
            api.post("/api/login", json={"password": OWNER_KEY}).raise_for_status()
            self.cookie = api.cookies["session"]
            limits = {"messagesPerMinute": 100_000, "messageBurst": 100_000}
            api.put("/api/settings", json={"limits": limits}).raise_for_status()
            guests = []
            for i in range(POSTERS):
                made = api.post("/api/guests", json={"name": f"poster {i}"}).json()
                guests.append(made["user"]["id"])
                with httpx.Client(base_url=self.base, timeout=30) as guest:
                    guest.post("/api/login", json={"password": made["key"]}).raise_for_status()
                    self.posters.append(guest.cookies["session"])
            body = {"name": "bench", "type": "group", "agentIds": [], "memberIds": guests}
            self.channel_id = api.post("/api/channels", json=body).json()["channel"]["id"]
            for _ in range(50):
                post = {"channelId": self.channel_id, "content": CONTENT}
                api.post("/api/messages", json=post).raise_for_status()
            self.page_path = f"/api/messages?channelId={self.channel_id}&limit=50"
            page: dict[str, Any] = api.get(self.page_path).json()
            return page


class Bare(Target):
    name = "bare"
    post_path = "/echo"
    page_path = "/page"
    publish_path = "/publish"

    def __init__(self, workdir: Path, page: dict[str, Any]) -> None:
        super().__init__(workdir)
        (workdir / "page.json").write_text(json.dumps(page))
        self.cookie = "unused"
        self.posters = [f"unused-{i}" for i in range(POSTERS)]
        self.channel_id = "ch_bare"

    def command(self) -> list[str]:
        page = str(self.workdir / "page.json")
        return [sys.executable, "-m", "bench.bare_app", "--port", str(self.port), "--page", page]


# -- HTTP load (wrk) --------------------------------------------------------------------------


_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1000.0}


def _ms(text: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s)", text)
    assert match, text
    return float(match.group(1)) * _UNITS[match.group(2)]


def wrk(
    target: Target, path: str, connections: int, seconds: int, body: str | None
) -> dict[str, Any]:
    script = target.workdir / "wrk.lua"
    method = "POST" if body is not None else "GET"
    lua = [f'wrk.method = "{method}"', 'wrk.headers["Content-Type"] = "application/json"']
    lua.append(f'wrk.headers["Cookie"] = "session={target.cookie}"')
    if body is not None:
        lua.append(f"wrk.body = {json.dumps(body)}")
        cookies = ", ".join(f'"session={c}"' for c in target.posters)
        lua += [
            f"local cookies = {{{cookies}}}",
            "local turn = 0",
            "request = function()",
            "  turn = turn % #cookies + 1",
            '  wrk.headers["Cookie"] = cookies[turn]',
            "  return wrk.format()",
            "end",
        ]
    script.write_text("\n".join(lua) + "\n")
    threads = min(2, connections)
    before = target.cpu_seconds()
    out = subprocess.run(
        ["taskset", "-c", LOAD_CORE, "wrk", "--latency", f"-t{threads}", f"-c{connections}",
         f"-d{seconds}s", "-s", str(script), f"{target.base}{path}"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    cpu = target.cpu_seconds() - before
    requests = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors:
        raise RuntimeError(f"{target.name} answered errors under load:\n{out}")
    return {
        "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),  # type: ignore[union-attr]
        "p50_ms": _ms(re.search(r"^\s+50%\s+(\S+)", out, re.M).group(1)),  # type: ignore[union-attr]
        "p99_ms": _ms(re.search(r"^\s+99%\s+(\S+)", out, re.M).group(1)),  # type: ignore[union-attr]
        "cpu_ms_per_request": 1000 * cpu / max(1, requests),
    }


# -- WebSocket load (this process, pinned to the load core) ----------------------------------


async def _expect(ws: ClientConnection, kind: str) -> dict[str, Any]:
    while True:
        event: dict[str, Any] = json.loads(await ws.recv())
        if event.get("type") == kind:
            return event


@contextlib.asynccontextmanager
async def _open(target: Target) -> Any:
    async with connect(target.ws_url, compression=None, open_timeout=300, max_queue=None) as ws:
        await target.auth_and_subscribe(ws)
        yield ws


async def socket_opens(target: Target, count: int, concurrency: int = 64) -> dict[str, Any]:
    """Sockets opened, authenticated and subscribed per second, `concurrency` at a time."""
    left = count

    async def worker() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            async with _open(target):
                pass

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return {"opens_per_s": count / (time.perf_counter() - start)}


async def storm(target: Target, count: int) -> dict[str, Any]:
    """`count` sockets reconnecting at once: seconds until every one is subscribed again."""
    ready = 0
    done = asyncio.Event()
    release = asyncio.Event()

    async def one() -> None:
        nonlocal ready
        async with _open(target):
            ready += 1
            if ready == count:
                done.set()
            await release.wait()

    start = time.perf_counter()
    tasks = [asyncio.create_task(one()) for _ in range(count)]
    waiter = asyncio.create_task(done.wait())
    finished, _ = await asyncio.wait([waiter, *tasks], return_when=asyncio.FIRST_COMPLETED)
    seconds = time.perf_counter() - start
    release.set()
    if waiter not in finished:  # a socket ended before all were back: it failed
        waiter.cancel()
        for task in tasks:
            task.cancel()
        failed = next(iter(finished))
        await asyncio.gather(*tasks, return_exceptions=True)
        raise RuntimeError(f"a reconnecting socket failed after {ready} were back") from (
            failed.exception()
        )
    await asyncio.gather(*tasks)
    return {"sockets": count, "all_back_s": seconds}


FANOUT_KINDS = ("post", "edit", "reaction")
"""What a fan-out sends: new messages, edits of one message, or a reaction added and removed
in turn. The bare app has one broadcast for all three: the baseline is the same event."""


async def fanout(
    target: Target, subscribers: int, posts: int, kind: str = "post"
) -> dict[str, Any]:
    """Changes sent one after another, each delivered to every subscriber: events/s, latency."""
    return await fanout_across([target], subscribers, posts, kind)


async def fanout_across(
    targets: Sequence[Target], subscribers: int, posts: int, kind: str = "post"
) -> dict[str, Any]:
    """`fanout` over several nodes of one cluster: the subscribers split evenly between them,
    the changes sent through each in turn."""
    sent: list[float] = []
    latencies: list[float] = []
    expected = subscribers * posts
    finished = asyncio.Event()
    palaver = targets[0].name != "bare"
    event_types = {
        "post": {"message"},
        "edit": {"message_updated"} if palaver else {"message"},
        "reaction": {"reaction_added", "reaction_removed"} if palaver else {"message"},
    }[kind]
    prefix = f"fan-out {time.monotonic_ns()} "

    def index_of(event: dict[str, Any], seen: int) -> int | None:
        if event.get("type") not in event_types:
            return None
        if event["type"].startswith("reaction_"):
            return seen  # a socket hears the reactions in the order they were made
        content = event["data"].get("content", "")
        return int(content[len(prefix) :]) if content.startswith(prefix) else None

    async def reader(ws: ClientConnection) -> None:
        seen = 0
        async for raw in ws:
            index = index_of(json.loads(raw), seen)
            if index is None:
                continue  # not one of these changes: an event of an earlier measure
            seen += 1
            latencies.append(time.perf_counter() - sent[index])
            if len(latencies) == expected:
                finished.set()
                return

    async with contextlib.AsyncExitStack() as stack:
        sockets = [
            await stack.enter_async_context(_open(targets[i % len(targets)]))
            for i in range(subscribers)
        ]
        readers = [asyncio.create_task(reader(ws)) for ws in sockets]
        target = targets[0]
        headers = {"Cookie": f"session={target.cookie}"}
        async with httpx.AsyncClient(headers=headers) as http:
            edited = ""
            if palaver and kind != "post":
                first = {"channelId": target.channel_id, "content": "to be changed"}
                made = await http.post(f"{target.base}{target.publish_path}", json=first)
                edited = made.raise_for_status().json()["id"]
            start = time.perf_counter()
            for i in range(posts):
                via = targets[i % len(targets)]
                sent.append(time.perf_counter())
                body = {"channelId": target.channel_id, "content": f"{prefix}{i}"}
                if not palaver or kind == "post":
                    answer = await http.post(f"{via.base}{via.publish_path}", json=body)
                elif kind == "edit":
                    path = f"{via.base}/api/messages/{edited}"
                    answer = await http.patch(path, json={"content": body["content"]})
                elif i % 2 == 0:
                    path = f"{via.base}/api/messages/{edited}/reactions"
                    answer = await http.post(path, json={"emoji": "👍"})
                else:
                    answer = await http.delete(f"{via.base}/api/messages/{edited}/reactions/👍")
                answer.raise_for_status()
            await asyncio.wait_for(finished.wait(), 120)
            seconds = time.perf_counter() - start
        for task in readers:
            task.cancel()
    latencies.sort()
    return {
        "events_per_s": expected / seconds,
        "p50_ms": 1000 * latencies[len(latencies) // 2],
        "p99_ms": 1000 * latencies[int(0.99 * (len(latencies) - 1))],
    }


async def idle_memory(target: Target, count: int) -> dict[str, Any]:
    """Resident memory the server holds per authenticated, subscribed, idle socket; on a freshly
    started server, since memory freed by earlier sockets would be reused and hide the cost."""
    await asyncio.to_thread(target.restart)
    async with contextlib.AsyncExitStack() as stack:
        await stack.enter_async_context(_open(target))
        await asyncio.sleep(1)
        before = target.rss_bytes()
        for _ in range(count):
            await stack.enter_async_context(_open(target))
        await asyncio.sleep(2)
        after = target.rss_bytes()
    return {"sockets": count, "kib_per_socket": (after - before) / count / 1024}


# -- the run ----------------------------------------------------------------------------------


Measure = Callable[[Target], Coroutine[Any, Any, dict[str, Any]]]


def measures(plan: Plan) -> dict[str, Measure]:
    def http(kind: str, connections: int) -> Measure:
        async def run(t: Target) -> dict[str, Any]:
            path = t.post_path if kind == "post" else t.page_path
            body = t.post_body() if kind == "post" else None
            return await asyncio.to_thread(wrk, t, path, connections, plan.seconds, body)

        return run

    return {
        "posts_64": http("post", 64),
        "posts_1": http("post", 1),
        "history_64": http("history", 64),
        "socket_opens": lambda t: socket_opens(t, plan.socket_opens),
        "reconnect_storm": lambda t: storm(t, plan.storm),
        "fanout": lambda t: fanout(t, plan.subscribers, plan.fanout_posts),
        "fanout_edits": lambda t: fanout(t, plan.subscribers, plan.fanout_posts, "edit"),
        "fanout_reactions": lambda t: fanout(t, plan.subscribers, plan.fanout_posts, "reaction"),
        "idle_sockets": lambda t: idle_memory(t, plan.idle_sockets),
    }


def _median(samples: list[dict[str, Any]]) -> dict[str, Any]:
    return {k: statistics.median(s[k] for s in samples) for k in samples[0]}


RATIOS = {
    "posts_64": ("rps", "higher"),
    "posts_1": ("p50_ms", "lower"),
    "history_64": ("rps", "higher"),
    "socket_opens": ("opens_per_s", "higher"),
    "reconnect_storm": ("all_back_s", "lower"),
    "fanout": ("events_per_s", "higher"),
    "fanout_edits": ("events_per_s", "higher"),
    "fanout_reactions": ("events_per_s", "higher"),
    "idle_sockets": ("kib_per_socket", "lower"),
}


def run(plan: Plan, only: list[str]) -> dict[str, Any]:
    os.sched_setaffinity(0, {int(LOAD_CORE)})
    load_before = os.getloadavg()[1]
    samples: dict[str, dict[str, list[dict[str, Any]]]] = {}
    with _workdir() as workdir:
        palaver = Palaver(workdir)
        palaver.start()
        try:
            page = palaver.prepare()
            bare = Bare(workdir, page)
            bare.start()
            try:
                for name, measure in measures(plan).items():
                    if only and name not in only:
                        continue
                    for round_no in range(plan.rounds):
                        for target in (palaver, bare) if round_no % 2 == 0 else (bare, palaver):
                            result = asyncio.run(measure(target))
                            samples.setdefault(name, {}).setdefault(target.name, []).append(result)
                            label = f"{name} round {round_no + 1} {target.name}"
                            print(f"{label}: {result}", flush=True)
            finally:
                bare.stop()
        finally:
            palaver.stop()
    run_info = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "rounds": plan.rounds,
        "load_average_5min": [round(load_before, 2), round(os.getloadavg()[1], 2)],
    }
    report: dict[str, Any] = {
        "machine": _machine(),
        "server": "uvicorn (uvloop, httptools, websockets), one process on one core",
        "results": {},
    }
    for name, per_target in samples.items():
        medians = {t: _median(s) for t, s in per_target.items()}
        key, better = RATIOS[name]
        ratio = medians["palaver"][key] / medians["bare"][key] if medians["bare"][key] else 0.0
        report["results"][name] = {
            **medians,
            "ratio": ratio if better == "higher" else 1 / ratio,
            "ratio_of": key,
            "per_round": per_target,
            "run": run_info,
        }
    return report


@contextlib.contextmanager
def _workdir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="bench-hot-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _machine() -> str:
    model = "unknown CPU"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    return f"{os.cpu_count()} cores ({model}), {platform.system()} {platform.release()}"


def markdown(report: dict[str, Any]) -> str:
    runs: dict[str, list[str]] = {}
    for name, result in report["results"].items():
        run = result["run"]
        label = (
            f"{run['date']}, medians of {run['rounds']} alternating rounds, 5-minute load "
            f"average {run['load_average_5min'][0]} at the start and "
            f"{run['load_average_5min'][1]} at the end"
        )
        runs.setdefault(label, []).append(name)
    rows = [
        f"On {report['machine']}; {report['server']}. Ratio: Palaver as a fraction of the bare "
        "app's figure (for latency, time and memory: bare / Palaver). A load average of 2 means "
        "both cores busy.",
        "",
        *(f"- {', '.join(names)}: {label}." for label, names in runs.items()),
        "",
        "| path | measure | Palaver | bare app | ratio |",
        "|---|---|---|---|---|",
    ]
    for name, result in report["results"].items():
        for key in result["palaver"]:
            ratio = f"{result['ratio']:.2f}" if key == result["ratio_of"] else ""
            rows.append(
                f"| {name} | {key} | {result['palaver'][key]:.2f} | {result['bare'][key]:.2f} "
                f"| {ratio} |"
            )
    return "\n".join(rows) + "\n"


def write_results(stem: str, report: dict[str, Any], text: str) -> None:
    """`bench/results/<stem>.json` and `.md`; the Markdown printed too."""
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{stem}.json").write_text(json.dumps(report, indent=2) + "\n")
    (RESULTS / f"{stem}.md").write_text(text)
    print(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="short runs to check the harness")
    parser.add_argument("--only", action="append", default=[], choices=list(RATIOS))
    parser.add_argument("--rounds", type=int, help="alternating rounds (default: 5, quick 2)")
    args = parser.parse_args()
    plan = QUICK if args.quick else FULL
    if args.rounds:
        plan = replace(plan, rounds=args.rounds)
    report = run(plan, args.only)
    stem = "hot_paths_quick" if args.quick else "hot_paths"
    earlier = RESULTS / f"{stem}.json"
    if args.only and earlier.exists():
        # A partial run replaces its own measures and keeps the others, each with its own run.
        kept = json.loads(earlier.read_text())["results"]
        report["results"] = {**kept, **report["results"]}
    write_results(stem, report, markdown(report))


if __name__ == "__main__":
    main()
