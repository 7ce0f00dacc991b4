"""The packed int8 scan beside a plain float32 scan, on one agent's 100,000 x 384 matrix.

The scan (`knowledge/index/int8_scan.py`) answers the exact float32 top k: its int8 scores
pick candidates, and every row whose error bound cannot rule it out is scored exactly too. This
measures what that costs and saves: the time of `Snapshot.top` with the scan against the same
snapshot scanned in float32 (numpy's product and `argpartition`, the baseline), alternating
query by query, and how many rows the bound adds to the 200 candidates. The rows are unit
vectors around 400 centres (as embeddings of texts on a few hundred subjects are) or Gaussian;
the queries are near stored rows. Both run in this process on one thread.

    python -m bench.bench_int8_scan [--rows 100000] [--queries 200]

Writes bench/results/int8_scan.json and bench/results/int8_scan.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from palaver.knowledge.index import int8_scan
from palaver.knowledge.index.base import Entry, Space
from palaver.knowledge.index.int8_scan import PackedScan, encode_query
from palaver.knowledge.index.matrix import VectorMatrix

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
DIM, K = 384, 20


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def made(shape: str, rng: np.random.Generator, count: int) -> np.ndarray:
    if shape == "random":
        return unit(rng.standard_normal((count, DIM)))
    centres = rng.standard_normal((400, DIM))
    return unit(centres[rng.integers(0, 400, count)] + 0.6 * rng.standard_normal((count, DIM)))


def float_top(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    scores = matrix @ query
    best = np.argpartition(-scores, K - 1)[:K]
    return best[np.argsort(-scores[best], kind="stable")]


def measure(shape: str, rows: int, queries: int) -> dict[str, Any]:
    rng = np.random.default_rng(20261125)
    vectors = made(shape, rng, rows)
    matrix = VectorMatrix.sized(Space("bench/int8", DIM), rows)
    matrix.extend([Entry(f"r{i}") for i in range(rows)], vectors)
    matrix.attach(PackedScan(vectors, matrix.version))
    snapshot = matrix.snapshot()
    scan = snapshot.scan
    assert scan is not None
    asked = unit(
        vectors[rng.integers(0, rows, queries)] + 0.3 * rng.standard_normal((queries, DIM))
    )
    packed_ms, float_ms, extra = [], [], []
    for query in asked:
        for run in ("packed", "float") if len(packed_ms) % 2 == 0 else ("float", "packed"):
            start = time.perf_counter()
            if run == "packed":
                hits = snapshot.top(query, K)
                packed_ms.append(1000 * (time.perf_counter() - start))
            else:
                best = float_top(snapshot.matrix, query)
                float_ms.append(1000 * (time.perf_counter() - start))
        assert [h.id for h in hits] == [f"r{i}" for i in best], "the scan must be exact"
        codes, scale = encode_query(query)
        approx = scan.approximate(codes, scale)
        picked = np.argpartition(-approx, int8_scan.CANDIDATES - 1)[: int8_scan.CANDIDATES]
        kth = np.sort(vectors[picked] @ query)[-K]
        reach = approx + scan.error_bounds(query, codes, scale)
        reach[picked] = -np.inf
        extra.append(int((reach >= kth).sum()))
    bounds = scan.error_bounds(asked[0], *encode_query(asked[0]))
    return {
        "packed_ms_median": round(statistics.median(packed_ms), 2),
        "packed_ms_p99": round(float(np.percentile(packed_ms, 99)), 2),
        "float_ms_median": round(statistics.median(float_ms), 2),
        "float_ms_p99": round(float(np.percentile(float_ms, 99)), 2),
        "extra_rows_mean": round(statistics.fmean(extra), 1),
        "extra_rows_max": max(extra),
        "bound_median": round(float(np.median(bounds)), 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from tests.cpu import instruction_sets

    summary: dict[str, Any] = {
        "when": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}",
        "cpu": instruction_sets(),
        "rows": args.rows,
        "queries": args.queries,
    }
    for shape in ("clustered", "random"):
        summary[shape] = measure(shape, args.rows, args.queries)
        print(shape, summary[shape], flush=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "int8_scan.json").write_text(json.dumps(summary, indent=2) + "\n")
    lines = [
        "# The packed int8 scan beside a float32 scan",
        "",
        f"Run {summary['when']} on {summary['machine']} ({summary['cpu']}): {args.rows:,} rows "
        f"of {DIM}, {args.queries} queries, top {K}, alternating "
        "(`python -m bench.bench_int8_scan`).",
        "",
        "| rows | int8 scan median / p99 ms | float32 scan median / p99 ms | ratio (medians) "
        "| rows the bound adds to 200, mean / max | median bound |",
        "|---|---|---|---|---|---|",
    ]
    for shape in ("clustered", "random"):
        r = summary[shape]
        lines.append(
            f"| {shape} | {r['packed_ms_median']} / {r['packed_ms_p99']} | {r['float_ms_median']}"
            f" / {r['float_ms_p99']} | {r['packed_ms_median'] / r['float_ms_median']:.2f} | "
            f"{r['extra_rows_mean']} / {r['extra_rows_max']} | {r['bound_median']} |"
        )
    (RESULTS / "int8_scan.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
