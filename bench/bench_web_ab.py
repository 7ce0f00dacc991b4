"""A/B of two builds of the client on the 10,000-message channel, in alternating rounds.

The machine's load moves from minute to minute (it is shared), so two runs of `bench_web` one
after the other compare two moments as much as two builds. Here two servers run side by side,
one from another source tree (`--before`, e.g. an earlier commit's `src/` with its build) and
one from this one, each with its own 10,000-message channel; each round opens and scrolls both,
in turns (before first, then after first, and so on), and the medians are compared. Server
and browser are pinned to a core each, as in `bench_web`.

    git archive <commit> src | tar -x -C /tmp/before
    python -m bench.bench_web_ab --before /tmp/before/src --rounds 4
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright
from tests.support import Server
from tests.web.conftest import CHROMIUM, CHROMIUM_ARGS

from bench.bench_web import LONG_CHANNEL, RESULTS, _fill, long_channel

FIGURES = (
    "interactive_ms",
    "playwright_sees_ms",
    "frame_ms_p50",
    "frame_ms_p95",
    "frame_ms_max",
    "frames_over_50ms",
    "long_tasks",
    "long_task_ms_max",
    "most_message_nodes_in_dom",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="the other source tree's src/")
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    here = str(Path(__file__).parents[1] / "src")
    cpus = sorted(os.sched_getaffinity(0))
    runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    loads: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        if len(cpus) >= 2:
            os.sched_setaffinity(0, {cpus[0]})
        servers = {
            "before": Server(Path(tmp) / "before", env={"PYTHONPATH": args.before}),
            "after": Server(Path(tmp) / "after", env={"PYTHONPATH": here}),
        }
        for server in servers.values():
            server.start()
        if len(cpus) >= 2:
            os.sched_setaffinity(0, {cpus[1]})
        channels = {}
        for name, server in servers.items():
            with server.login() as api:
                limits = {"messagesPerMinute": 100_000, "messageBurst": 100_000}
                api.ok("PUT", "/api/settings", json={"limits": limits})
                big = api.ok("POST", "/api/channels", json={"name": "big", "type": "group"})
                channels[name] = big["channel"]["id"]
                _fill(api, channels[name], LONG_CHANNEL)
        pw = sync_playwright().start()
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for i in range(args.rounds):
                for name in ("before", "after") if i % 2 == 0 else ("after", "before"):
                    loads.append(round(os.getloadavg()[0], 1))
                    runs[name].append(long_channel(browser, servers[name], channels[name]))
        finally:
            browser.close()
            pw.stop()
            for server in servers.values():
                server.stop()
    result = {
        "rounds": args.rounds,
        "load_average_per_scroll": loads,
        "median": {
            name: {k: statistics.median(r[k] for r in rs) for k in FIGURES}
            for name, rs in runs.items()
        },
        "runs": runs,
    }
    (RESULTS / "web_ab.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["median"], indent=2))


if __name__ == "__main__":
    main()
