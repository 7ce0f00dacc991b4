"""Benchmark: start-up and memory, beside the bare app and the previous release, in one run.

For each of three servers, in alternating order each round:

- Palaver as it is in this tree,
- the previous release: Palaver at `--previous` (default: the commit before issue 26's start-up
  work), checked out with `git worktree add` in a temporary directory and run from there,
- the bare app (`bench/bare_app.py`: FastAPI on the same uvicorn settings, no work),

it measures:

- launch to first login: from the process's launch until `POST /api/login` answers 200 (the
  bare app: until `GET /page` answers), on a first start (an empty data dir: the schema is made)
  and on a restart (the same data dir);
- idle RSS a few seconds after that login;
- RSS after a burst (100 listening sockets subscribed to one channel; posts for `burst_seconds`
  at 16 connections, each fanned out to the 100; history pages for as long; then the sockets
  close) and again 60 s later, idle.

Each server is pinned to core 0 (taskset) and the load (wrk, this process's sockets) to core 1.
Python's bytecode is cached in a directory of the run's own (`PYTHONPYCACHEPREFIX`), and each
server starts once unmeasured to fill it, as an installed package has its `.pyc` files: without
them every start compiles every module again. Medians of `--rounds` rounds.

    python -m bench.bench_startup                  # 3 rounds (~12 minutes on a quiet machine)
    python -m bench.bench_startup --quick          # 1 round, short bursts and waits
    python -m bench.bench_startup --previous REF   # another release to compare with
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from tests.support import free_port
from websockets.asyncio.client import ClientConnection, connect

from bench.bench_hot_paths import _machine, write_results, wrk

ROOT = Path(__file__).resolve().parent.parent
SERVER_CORE = "0"
LOAD_CORE = 1
OWNER_KEY = "benchmark-owner-key"
PREVIOUS = "1359ccd"
"""The last commit before issue 26's start-up work: the release this one is measured against."""
CONTENT = "hello from the start-up benchmark"
MEASURES = (
    ("first_login_s", "launch to first login, first start", "s"),
    ("restart_login_s", "launch to first login, restart", "s"),
    ("first_login_cpu_s", "server CPU until that login, first start", "s"),
    ("restart_login_cpu_s", "server CPU until that login, restart", "s"),
    ("idle_rss_mib", "idle RSS after login", "MiB"),
    ("burst_rss_mib", "RSS after a burst", "MiB"),
    ("settled_rss_mib", "RSS 60 s after the burst", "MiB"),
)


@dataclass(frozen=True)
class Plan:
    rounds: int
    burst_seconds: int
    settle_seconds: int
    listeners: int


FULL = Plan(rounds=3, burst_seconds=10, settle_seconds=60, listeners=100)
QUICK = Plan(rounds=1, burst_seconds=2, settle_seconds=5, listeners=100)


class Target:
    """One server: how it is launched, and what the load asks of it."""

    name = ""
    post_path = ""
    page_path = ""

    def __init__(self, workdir: Path, pycache: Path) -> None:
        self.workdir = workdir / self.name
        self.workdir.mkdir(parents=True)
        self.pycache = pycache
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.cookie = "unused"
        self.posters = ["unused"]
        self.channel_id = "ch_bare"

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        return {**env, "OWNER_KEY": OWNER_KEY, "PYTHONPYCACHEPREFIX": str(self.pycache)}

    def first_answer(self, client: httpx.Client) -> bool:
        raise NotImplementedError

    def launch(self) -> tuple[float, float]:
        """Start it; seconds from launch to its first successful answer, and the CPU seconds
        the server spent until then (less swayed than the former by a busy machine)."""
        self.port = free_port()
        log = (self.workdir / "server.log").open("ab")
        start = time.perf_counter()
        self.proc = subprocess.Popen(
            ["taskset", "-c", SERVER_CORE, *self.command()],
            env=self.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        with httpx.Client(base_url=self.base, timeout=10) as client:
            while time.perf_counter() - start < 120:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"{self.name} exited; see {self.workdir / 'server.log'}")
                with contextlib.suppress(httpx.TransportError):
                    if self.first_answer(client):
                        return time.perf_counter() - start, self.cpu_seconds()
                time.sleep(0.005)
        raise RuntimeError(f"{self.name} did not answer within 120 s")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None

    def reset(self) -> None:
        """A first start again: no data."""

    def prepare(self) -> None:
        """What the burst needs (a session, a channel, limits wide enough)."""

    def cpu_seconds(self) -> float:
        assert self.proc is not None
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_mib(self) -> float:
        assert self.proc is not None
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no VmRSS")

    async def listen(self, ws: ClientConnection) -> None:
        raise NotImplementedError


class Palaver(Target):
    post_path = "/api/messages"

    def __init__(self, workdir: Path, pycache: Path, name: str, src: Path) -> None:
        self.name = name
        super().__init__(workdir, pycache)
        self.src = src

    def command(self) -> list[str]:
        data = self.workdir / "data"
        return [sys.executable, "-m", "palaver", "serve", "--port", str(self.port),
                "--data-dir", str(data)]  # fmt: skip

    def env(self) -> dict[str, str]:
        return {
            **super().env(),
            "PYTHONPATH": str(self.src),
            "PALAVER_LOG_LEVEL": "warning",
            "HF_HUB_OFFLINE": "1",
        }

    def first_answer(self, client: httpx.Client) -> bool:
        answer = client.post("/api/login", json={"password": OWNER_KEY})
        if answer.status_code != 200:
            return False
        self.cookie = answer.cookies["session"]
        return True

    def reset(self) -> None:
        shutil.rmtree(self.workdir / "data", ignore_errors=True)

    def prepare(self) -> None:
        with httpx.Client(base_url=self.base, timeout=30, cookies={"session": self.cookie}) as api:
            limits = {"messagesPerMinute": 100_000, "messageBurst": 100_000}
            api.put("/api/settings", json={"limits": limits}).raise_for_status()
            body = {"name": "bench", "type": "group", "agentIds": [], "memberIds": []}
            self.channel_id = api.post("/api/channels", json=body).json()["channel"]["id"]
            for _ in range(50):
                post = {"channelId": self.channel_id, "content": CONTENT}
                api.post("/api/messages", json=post).raise_for_status()
            self.page_path = f"/api/messages?channelId={self.channel_id}&limit=50"
        self.posters = [self.cookie]

    def page(self) -> dict[str, Any]:
        cookies = {"session": self.cookie}
        with httpx.Client(base_url=self.base, timeout=30, cookies=cookies) as api:
            page: dict[str, Any] = api.get(self.page_path).raise_for_status().json()
            return page

    async def listen(self, ws: ClientConnection) -> None:
        await ws.send(json.dumps({"type": "auth", "token": self.cookie}))
        await _expect(ws, "auth_ok")
        await ws.send(json.dumps({"type": "subscribe", "channelId": self.channel_id}))
        await _expect(ws, "subscribed")


class Bare(Target):
    name = "bare"
    post_path = "/publish"
    page_path = "/page"

    def command(self) -> list[str]:
        page = str(self.workdir / "page.json")
        return [sys.executable, "-m", "bench.bare_app", "--port", str(self.port), "--page", page]

    def env(self) -> dict[str, str]:
        return {**super().env(), "PYTHONPATH": f"{ROOT}:{ROOT / 'src'}"}

    def first_answer(self, client: httpx.Client) -> bool:
        return client.get("/page").status_code == 200

    async def listen(self, ws: ClientConnection) -> None:
        await ws.send(json.dumps({"type": "auth", "token": "unused"}))
        await _expect(ws, "auth_ok")
        await ws.send(json.dumps({"type": "subscribe", "channelId": self.channel_id}))
        await _expect(ws, "subscribed")


async def _expect(ws: ClientConnection, kind: str) -> None:
    while json.loads(await ws.recv()).get("type") != kind:
        pass


async def _burst(target: Target, plan: Plan) -> None:
    """Listeners subscribed; posts fanned out to them, then history pages; listeners closed."""
    url = f"ws://127.0.0.1:{target.port}/ws"
    async with contextlib.AsyncExitStack() as stack:
        sockets = []
        for _ in range(plan.listeners):
            ws = await stack.enter_async_context(connect(url, compression=None, max_queue=None))
            await target.listen(ws)
            sockets.append(ws)
        readers = [asyncio.create_task(_drain(ws)) for ws in sockets]
        body = json.dumps({"channelId": target.channel_id, "content": CONTENT})
        await asyncio.to_thread(wrk, target, target.post_path, 16, plan.burst_seconds, body)
        await asyncio.to_thread(wrk, target, target.page_path, 16, plan.burst_seconds, None)
        for reader in readers:
            reader.cancel()
        await asyncio.gather(*readers, return_exceptions=True)


async def _drain(ws: ClientConnection) -> None:
    async for _ in ws:
        pass


def _round(targets: list[Target], plan: Plan, samples: dict[str, dict[str, list[float]]]) -> None:
    settled_at: list[tuple[Target, float]] = []
    try:
        for target in targets:
            target.reset()
            figures: dict[str, float] = {}
            figures["first_login_s"], figures["first_login_cpu_s"] = target.launch()
            target.stop()
            figures["restart_login_s"], figures["restart_login_cpu_s"] = target.launch()
            time.sleep(3)
            figures["idle_rss_mib"] = target.rss_mib()
            target.prepare()
            asyncio.run(_burst(target, plan))
            figures["burst_rss_mib"] = target.rss_mib()
            settled_at.append((target, time.monotonic() + plan.settle_seconds))
            for key, value in figures.items():
                samples[target.name].setdefault(key, []).append(value)
            print(f"{target.name}: {figures}", flush=True)
        for target, when in settled_at:
            time.sleep(max(0.0, when - time.monotonic()))
            settled = target.rss_mib()
            samples[target.name].setdefault("settled_rss_mib", []).append(settled)
            print(f"{target.name}: settled {settled:.1f} MiB", flush=True)
    finally:
        for target in targets:
            target.stop()


@contextlib.contextmanager
def _previous_tree(ref: str, where: Path) -> Iterator[Path]:
    tree = where / "previous-tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), ref],
                   check=True, capture_output=True)  # fmt: skip
    try:
        yield tree
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                       check=False, capture_output=True)  # fmt: skip


def run(plan: Plan, previous: str) -> dict[str, Any]:
    os.sched_setaffinity(0, {LOAD_CORE})
    load_before = os.getloadavg()[1]
    workdir = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    try:
        with _previous_tree(previous, workdir) as tree:
            pycache = workdir / "pycache"
            current = Palaver(workdir, pycache, "palaver", ROOT / "src")
            older = Palaver(workdir, pycache, "previous", tree / "src")
            bare = Bare(workdir, pycache)
            current.launch()  # unmeasured: fills the bytecode cache, and makes the bare page
            current.prepare()
            (bare.workdir / "page.json").write_text(json.dumps(current.page()))
            current.stop()
            for target in (older, bare):
                target.launch()
                target.stop()
            samples: dict[str, dict[str, list[float]]] = {"palaver": {}, "previous": {}, "bare": {}}
            order: list[Target] = [current, older, bare]
            for number in range(plan.rounds):
                print(f"round {number + 1}", flush=True)
                _round(order[number % 3 :] + order[: number % 3], plan, samples)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    return {
        "machine": _machine(),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "rounds": plan.rounds,
        "burst_seconds": plan.burst_seconds,
        "settle_seconds": plan.settle_seconds,
        "listeners": plan.listeners,
        "commit": commit,
        "previous": previous,
        "load_average_5min": [round(load_before, 2), round(os.getloadavg()[1], 2)],
        "medians": {
            name: {key: statistics.median(values) for key, values in figures.items()}
            for name, figures in samples.items()
        },
        "per_round": samples,
    }


def markdown(report: dict[str, Any]) -> str:
    medians = report["medians"]
    rows = [
        f"On {report['machine']}, {report['date']}: medians of {report['rounds']} rounds "
        f"(the three servers in turn, in a rotating order), 5-minute load average "
        f"{report['load_average_5min'][0]} at the start and {report['load_average_5min'][1]} "
        "at the end (2 means both cores busy). Palaver at "
        f"{report['commit']}, the previous release at {report['previous']}, the bare app "
        "`bench/bare_app.py`. Burst: "
        f"{report['listeners']} subscribed sockets, {report['burst_seconds']} s of posts (16 "
        f"connections, each post fanned out to every socket) and {report['burst_seconds']} s of "
        "history pages, then the sockets closed. The bare app has no login and no data: its "
        "launch time is to its first answer, the same on both rows.",
        "",
        "| measure | Palaver | previous release | bare app |",
        "|---|---|---|---|",
    ]
    for key, label, unit in MEASURES:
        cells = [medians[name].get(key) for name in ("palaver", "previous", "bare")]
        digits = 2 if unit == "s" else 0
        shown = [f"{value:.{digits}f} {unit}" if value is not None else "" for value in cells]
        rows.append(f"| {label} | {' | '.join(shown)} |")
    return "\n".join(rows) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="one short round")
    parser.add_argument("--rounds", type=int, help="rounds (default: 3, quick 1)")
    parser.add_argument("--previous", default=PREVIOUS, help=f"git ref (default {PREVIOUS})")
    args = parser.parse_args()
    plan = QUICK if args.quick else FULL
    if args.rounds:
        plan = replace(plan, rounds=args.rounds)
    report = run(plan, args.previous)
    write_results("startup_quick" if args.quick else "startup", report, markdown(report))


if __name__ == "__main__":
    main()
