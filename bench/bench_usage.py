"""Benchmark: `GET /api/usage` (issue 24) over a year of 1,000,000 ledger rows, a month grouped
by agent, beside a bare app serving the same answer.

The ledger goes straight into the database (after the migrations made it), a year of calls by
20 agents for 50 people in 40 channels on 4 models, and the rollup by day and dimension is made
from it with the same sums the replies' writes keep (`store/usage.py`). Then the server starts
on that database and wrk asks for last month by agent at 1 and 16 connections, Palaver and the bare
app alternating, server and load on different cores, medians of the rounds.

    python -m bench.bench_usage                 # 1,000,000 ledger rows
    python -m bench.bench_usage --calls 100000 --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sqlite3
import statistics
import time
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from bench.bench_hot_paths import (
    LOAD_CORE,
    OWNER_KEY,
    Bare,
    Palaver,
    _machine,
    _workdir,
    write_results,
    wrk,
)

SECONDS = 5
YEAR_START = datetime(2025, 11, 1, tzinfo=UTC)
MONTH = ("2026-09-01", "2026-09-30")
SUMS = (
    "sum(input_tokens), sum(output_tokens), sum(cached_tokens), sum(cost), count(*), "
    "sum(1 - priced)"
)
ROLLUP = [
    "INSERT INTO usage_rollup (day, dimension, key, input_tokens, output_tokens, cached_tokens, "
    f"cost, calls, unpriced_calls) SELECT substr(at, 1, 10), '{dimension}', {column}, {SUMS} "
    "FROM usage_ledger GROUP BY 1, 3"
    for dimension, column in (
        ("agent", "agent_id"),
        ("person", "user_id"),
        ("channel", "channel_id"),
        ("model", "model"),
        ("total", "''"),
    )
]


def fill(db: Path, calls: int, rng: random.Random) -> float:
    began = time.perf_counter()
    agents = [f"agent_bench{i:02d}" for i in range(20)]
    people = [f"user_bench{i:02d}" for i in range(50)]
    channels = [f"ch_bench{i:02d}" for i in range(40)]
    models = ["openai/gpt-4o", "openai/gpt-4o-mini", "anthropic/claude-sonnet", "ollama/llama3"]
    step = timedelta(days=365) / calls
    with closing(sqlite3.connect(db)) as conn, conn:
        batch: list[tuple[Any, ...]] = []
        for n in range(calls):
            at = (YEAR_START + step * n).strftime("%Y-%m-%d %H:%M:%S.%f")
            inp, out = rng.randrange(200, 8000), rng.randrange(20, 1500)
            batch.append(
                (at, rng.choice(agents), rng.choice(people), rng.choice(channels), f"msg_{n:012d}",
                 "openai", rng.choice(models), inp, out, inp // 4, (inp + 4 * out) / 1e6, 1, 0)
            )  # fmt: skip
            if len(batch) == 20_000:
                _insert(conn, batch)
                batch = []
        if batch:
            _insert(conn, batch)
        for statement in ROLLUP:
            conn.execute(statement)
    return time.perf_counter() - began


def _insert(conn: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
    conn.executemany(
        "INSERT INTO usage_ledger (at, agent_id, user_id, channel_id, message_id, provider, "
        "model, input_tokens, output_tokens, cached_tokens, cost, priced, estimated) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )


def run(calls: int, rounds: int) -> dict[str, Any]:
    os.sched_setaffinity(0, {int(LOAD_CORE)})
    load_before = os.getloadavg()[1]
    samples: dict[str, dict[str, list[dict[str, Any]]]] = {}
    with _workdir() as workdir:
        palaver = Palaver(workdir)
        palaver.start()
        palaver.stop()
        db = workdir / "palaver-data" / "palaver.db"
        print(f"filling {calls:,} ledger rows", flush=True)
        filled = fill(db, calls, random.Random(24))
        with closing(sqlite3.connect(db)) as conn:
            rollup_rows = conn.execute("SELECT count(*) FROM usage_rollup").fetchone()[0]
        palaver.start()
        try:
            with httpx.Client(base_url=palaver.base, timeout=30) as api:
                api.post("/api/login", json={"password": OWNER_KEY}).raise_for_status()
                palaver.cookie = api.cookies["session"]
                palaver.page_path = f"/api/usage?groupBy=agent&from={MONTH[0]}&to={MONTH[1]}"
                answer = api.get(palaver.page_path).json()
            assert len(answer["rows"]) == 20, answer
            bare = Bare(workdir, answer)
            bare.start()
            try:
                for connections in (1, 16):
                    name = f"usage_{connections}"
                    for round_no in range(rounds):
                        order = (palaver, bare) if round_no % 2 == 0 else (bare, palaver)
                        for target in order:
                            result = asyncio.run(
                                asyncio.to_thread(
                                    wrk, target, target.page_path, connections, SECONDS, None
                                )
                            )
                            samples.setdefault(name, {}).setdefault(target.name, []).append(result)
                            print(f"{name} {round_no + 1} {target.name}: {result}", flush=True)
            finally:
                bare.stop()
        finally:
            palaver.stop()
    results = {}
    for name, per_target in samples.items():
        medians = {
            t: {k: statistics.median(s[k] for s in runs) for k in runs[0]}
            for t, runs in per_target.items()
        }
        results[name] = {**medians, "ratio_rps": medians["palaver"]["rps"] / medians["bare"]["rps"]}
    return {
        "machine": _machine(),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "calls": calls,
        "rollup_rows": rollup_rows,
        "fill_seconds": round(filled, 1),
        "rounds": rounds,
        "load_average_5min": [round(load_before, 2), round(os.getloadavg()[1], 2)],
        "results": results,
    }


def markdown(report: dict[str, Any]) -> str:
    rows = [
        f"# `GET /api/usage`: a month by agent over {report['calls']:,} ledger rows",
        "",
        f"{report['date']} on {report['machine']}; medians of {report['rounds']} alternating "
        f"rounds of {SECONDS} s; the rollup holds {report['rollup_rows']:,} rows; 5-minute load "
        f"average {report['load_average_5min'][0]} at the start, "
        f"{report['load_average_5min'][1]} at the end.",
        "",
        "| connections | Palaver p50 ms | p99 ms | rps | bare p50 ms | bare rps | ratio (rps) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, r in report["results"].items():
        p, b = r["palaver"], r["bare"]
        rows.append(
            f"| {name.split('_')[1]} | {p['p50_ms']:.2f} | {p['p99_ms']:.2f} | {p['rps']:.0f} "
            f"| {b['p50_ms']:.2f} | {b['rps']:.0f} | {r['ratio_rps']:.2f} |"
        )
    return "\n".join(rows) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    report = run(args.calls, args.rounds)
    write_results(f"usage_{args.calls // 1000}k", report, markdown(report))


if __name__ == "__main__":
    main()
