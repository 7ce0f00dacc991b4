"""Benchmark: what traces cost the hot path. Posts (`POST /api/messages`, wrk at 64 connections
and at 1) on Palaver untraced, on Palaver exporting every span (FastAPI's request span and the
SQL spans of `palaver[otel]`, sampler `always_on`) over OTLP/HTTP to a local collector stand-in
(`bench.otlp_sink`, on the load core), and on the bare FastAPI app: alternating rounds, medians.

    python -m bench.bench_tracing            # 5 rounds of 10 s
    python -m bench.bench_tracing --quick    # 2 rounds of 2 s
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.support import free_port

from bench.bench_hot_paths import (
    LOAD_CORE,
    Bare,
    Palaver,
    Target,
    _machine,
    _workdir,
    write_results,
    wrk,
)


class TracedPalaver(Palaver):
    name = "palaver_traced"

    def __init__(self, workdir: Path, collector: str, disabled: str = "") -> None:
        super().__init__(workdir)
        self.collector = collector
        self.disabled = disabled
        if disabled:
            self.name = f"palaver_traced_without_{disabled}"

    def command(self) -> list[str]:
        data = self.workdir / f"{self.name}-data"
        return [sys.executable, "-m", "palaver", "serve", "--port", str(self.port),
                "--data-dir", str(data)]  # fmt: skip

    def env(self) -> dict[str, str]:
        return {
            **super().env(),
            "OTEL_EXPORTER_OTLP_ENDPOINT": self.collector,
            "OTEL_TRACES_SAMPLER": "always_on",
            "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": self.disabled,
        }


def run(rounds: int, seconds: int) -> dict[str, Any]:
    os.sched_setaffinity(0, {int(LOAD_CORE)})
    load_before = os.getloadavg()[1]
    port = free_port()
    sink = subprocess.Popen(
        ["taskset", "-c", LOAD_CORE, sys.executable, "-m", "bench.otlp_sink", "--port", str(port)]
    )
    samples: dict[str, dict[str, list[dict[str, Any]]]] = {}
    try:
        with _workdir() as workdir:
            collector = f"http://127.0.0.1:{port}"
            untraced = Palaver(workdir)
            traced = [
                TracedPalaver(workdir, collector),
                TracedPalaver(workdir, collector, "sqlalchemy"),
            ]
            palavers = [untraced, *traced]
            for palaver in palavers:
                palaver.start()
            try:
                page = untraced.prepare()
                for palaver in traced:
                    palaver.prepare()
                bare = Bare(workdir, page)
                bare.start()
                targets: list[Target] = [*palavers, bare]
                try:
                    for connections in (64, 1):
                        name = f"posts_{connections}"
                        for round_no in range(rounds):
                            order = targets if round_no % 2 == 0 else targets[::-1]
                            for one in order:
                                result = asyncio.run(
                                    asyncio.to_thread(
                                        wrk,
                                        one,
                                        one.post_path,
                                        connections,
                                        seconds,
                                        one.post_body(),
                                    )
                                )
                                per = samples.setdefault(name, {})
                                per.setdefault(one.name, []).append(result)
                                print(f"{name} round {round_no + 1} {one.name}: {result}")
                finally:
                    bare.stop()
            finally:
                for palaver in palavers:
                    palaver.stop()
    finally:
        sink.kill()
        sink.wait()
    medians = {
        name: {
            t: {k: statistics.median(s[k] for s in runs) for k in runs[0]}
            for t, runs in per.items()
        }
        for name, per in samples.items()
    }
    return {
        "machine": _machine(),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "rounds": rounds,
        "seconds": seconds,
        "load_average_5min": [round(load_before, 2), round(os.getloadavg()[1], 2)],
        "medians": medians,
        "per_round": samples,
    }


def _median(runs: list[dict[str, Any]]) -> dict[str, float]:
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


def markdown(report: dict[str, Any]) -> str:
    m = report["medians"]
    rows = [
        f"Traces' cost on posts ({report['machine']}; {report['rounds']} rounds of "
        f"{report['seconds']} s; load average {report['load_average_5min']})",
        "",
        "| measure | bare | Palaver | traced | traced / untraced | traced, no SQL spans "
        "| no SQL / untraced |",
        "|---|---|---|---|---|---|---|",
    ]
    targets = ("bare", "palaver", "palaver_traced", "palaver_traced_without_sqlalchemy")
    for name, key, unit in (
        ("posts_64", "rps", "posts/s"),
        ("posts_64", "cpu_ms_per_request", "server CPU ms per post"),
        ("posts_1", "p50_ms", "ms p50"),
    ):
        bare, plain, traced, lean = (m[name][t][key] for t in targets)
        rows.append(
            f"| {name} ({unit}) | {bare:,.2f} | {plain:,.2f} | {traced:,.2f} | "
            f"{traced / plain:.2f} | {lean:,.2f} | {lean / plain:.2f} |"
        )
    return "\n".join(rows) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 rounds of 2 s")
    args = parser.parse_args()
    report = run(2, 2) if args.quick else run(5, 10)
    text = markdown(report)
    write_results("tracing", report, text)


if __name__ == "__main__":
    main()
