"""Benchmark: `GET /api/channels` with unread and mention counts (issue 23) for a person in 500
channels holding 1,000,000 messages, beside a bare app serving the same list.

The history goes straight into the database (through the tables, after the migrations made
them), 2,000 messages per channel, left in SQLite's search backlog (the list reads no message;
indexing a million rows would only make the fill take a quarter of an hour, and the server
indexes the backlog only for a search or after its own posts). Each channel's read state has a
marker and counts, as posts and reads leave them. Then the server starts on that database and
wrk asks for the guest's list at 1 and at 16 connections, Palaver and the bare app alternating,
server and load on different cores, medians of the rounds.

    python -m bench.bench_channel_list                 # 500 channels, 1,000,000 messages
    python -m bench.bench_channel_list --messages 100000 --rounds 3
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

CHANNELS = 500
SECONDS = 5
START = datetime(2025, 11, 1, tzinfo=UTC)


def prepare(target: Palaver) -> str:
    """A guest, made through the API; answers its key."""
    with httpx.Client(base_url=target.base, timeout=30) as api:
        api.post("/api/login", json={"password": OWNER_KEY}).raise_for_status()
        made = api.post("/api/guests", json={"name": "reader"}).json()
        return str(made["key"])


def fill(db: Path, guest_id: str, total: int, rng: random.Random) -> float:
    """Channels, memberships, read states and `total` messages; answers the seconds taken."""
    began = time.perf_counter()
    stamp = START.strftime("%Y-%m-%d %H:%M:%S.%f")
    per_channel = total // CHANNELS
    with closing(sqlite3.connect(db)) as conn, conn:
        owner_id = conn.execute("SELECT id FROM users WHERE role = 'owner'").fetchone()[0]
        channel_ids = [f"ch_bench{i:05d}" for i in range(CHANNELS)]
        conn.executemany(
            "INSERT INTO channels (id, name, type, created_at, updated_at) "
            "VALUES (?, ?, 'group', ?, ?)",
            [(c, f"room-{i}", stamp, stamp) for i, c in enumerate(channel_ids)],
        )
        conn.executemany(
            "INSERT INTO channel_members (channel_id, user_id, position) VALUES (?, ?, 0)",
            [(c, guest_id) for c in channel_ids],
        )
        for index, channel_id in enumerate(channel_ids):
            when = START + timedelta(minutes=index)
            rows = [
                (
                    f"msg_{index:05d}{n:07d}",
                    channel_id,
                    rng.choice((owner_id, guest_id)),
                    f"message {n} of {channel_id}, some words to fill a line",
                    (when + timedelta(seconds=n)).strftime("%Y-%m-%d %H:%M:%S.%f"),
                )
                for n in range(per_channel)
            ]
            conn.executemany(
                "INSERT INTO messages (id, channel_id, agent_id, user_id, content, type, "
                "metadata, created_at, reply_count) VALUES (?, ?, NULL, ?, ?, 'text', '{}', ?, 0)",
                rows,
            )
            read_up_to = rows[rng.randrange(len(rows))][0]
            unread = sum(1 for r in rows if r[0] > read_up_to and r[2] != guest_id)
            conn.executemany(
                "INSERT INTO read_states (user_id, channel_id, last_read_id, unread_count, "
                "mention_count) VALUES (?, ?, ?, ?, ?)",
                [
                    (guest_id, channel_id, read_up_to, unread, rng.randrange(3)),
                    (owner_id, channel_id, rows[-1][0], 0, 0),
                ],
            )
    with closing(sqlite3.connect(db)) as conn:
        conn.execute("ANALYZE")
    return time.perf_counter() - began


def run(total: int, rounds: int) -> dict[str, Any]:
    os.sched_setaffinity(0, {int(LOAD_CORE)})
    load_before = os.getloadavg()[1]
    rng = random.Random(23)
    samples: dict[str, dict[str, list[dict[str, Any]]]] = {}
    with _workdir() as workdir:
        palaver = Palaver(workdir)
        palaver.start()
        key = prepare(palaver)
        palaver.stop()
        db = workdir / "palaver-data" / "palaver.db"
        with closing(sqlite3.connect(db)) as conn:
            guest_id = conn.execute("SELECT id FROM users WHERE role = 'guest'").fetchone()[0]
        print(f"filling {CHANNELS} channels, {total:,} messages", flush=True)
        filled = fill(db, guest_id, total, rng)
        palaver.start()
        try:
            with httpx.Client(base_url=palaver.base, timeout=30) as api:
                api.post("/api/login", json={"password": key}).raise_for_status()
                palaver.cookie = api.cookies["session"]
                listed = api.get("/api/channels").json()
            assert len(listed["channels"]) == CHANNELS
            palaver.page_path = "/api/channels"
            bare = Bare(workdir, listed)
            bare.start()
            try:
                for connections in (1, 16):
                    name = f"channels_{connections}"
                    for round_no in range(rounds):
                        order = (palaver, bare) if round_no % 2 == 0 else (bare, palaver)
                        for target in order:
                            result = asyncio.run(
                                asyncio.to_thread(
                                    wrk, target, target.page_path, connections, SECONDS, None
                                )
                            )
                            samples.setdefault(name, {}).setdefault(target.name, []).append(result)
                            print(
                                f"{name} round {round_no + 1} {target.name}: {result}", flush=True
                            )
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
        results[name] = {
            **medians,
            "ratio_rps": medians["palaver"]["rps"] / medians["bare"]["rps"],
        }
    return {
        "machine": _machine(),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "channels": CHANNELS,
        "messages": total,
        "fill_seconds": round(filled, 1),
        "rounds": rounds,
        "load_average_5min": [round(load_before, 2), round(os.getloadavg()[1], 2)],
        "list_bytes": len(httpx.Response(200, json=listed).content),
        "results": results,
    }


def markdown(report: dict[str, Any]) -> str:
    rows = [
        f"# `GET /api/channels`: a guest in {report['channels']} channels, "
        f"{report['messages']:,} messages",
        "",
        f"{report['date']} on {report['machine']}; medians of {report['rounds']} alternating "
        f"rounds of {SECONDS} s; the list is {report['list_bytes']:,} bytes; 5-minute load "
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
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    report = run(args.messages, args.rounds)
    write_results(f"channel_list_{args.messages // 1000}k", report, markdown(report))


if __name__ == "__main__":
    main()
