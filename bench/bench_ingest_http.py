"""Ingest of many short documents over HTTP, measured the way issue 12 measured it.

A real `palaver serve` (fresh data directory, default settings: the int8 local embedder)
receives 1,000 abstract-sized documents (150 to 300 words of English prose, sentences drawn
from the quality set's documents) from 3 clients uploading at once through
`POST /api/rag/upload`, each upload answered when its document is indexed. The baseline is
the embedding model called directly in this process on the very chunk texts the server
embeds (same parsing, chunking, titles): what ingest would cost if nothing but the model ran.
Rounds alternate server and baseline; medians.

The server is not pinned to a core: embedding is the work and it uses both; the clients
spend their time waiting for answers.

    python -m bench.bench_ingest_http [--documents 1000] [--rounds 3]

Writes bench/results/ingest_http.json and bench/results/ingest_http.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from tests.support import Server, new_agent

from bench.quality.corpus import load_documents
from palaver.knowledge.chunk import chunk_context, chunk_document, document_title, embedding_text
from palaver.knowledge.embed import LocalEmbedder
from palaver.knowledge.parse import parse_document

RESULTS = Path(__file__).parent / "results"
CLIENTS = 3
SEED = 20261125
ISSUE_BEFORE = {"documents_per_second": 5.2, "chunks_per_second": 6.6}
"""Issue 12's own figures: 5,183 abstracts through the HTTP API, 3 clients, the code then."""


def documents(count: int) -> dict[str, bytes]:
    """Abstract-sized texts of the quality set's sentences, each with a number of its own."""
    sentences = [
        s.strip()
        for text in load_documents(False).values()
        for s in re.split(r"(?<=[.!?])\s+", text.decode(errors="replace"))
        if 6 <= len(s.split()) <= 40 and not s.lstrip().startswith(("#", "-", "|", "%"))
    ]
    rng = np.random.default_rng(SEED)
    made: dict[str, bytes] = {}
    for n in range(count):
        target = int(rng.integers(150, 301))
        words: list[str] = [f"Study {n}."]
        while len(words) < target:
            words += sentences[int(rng.integers(0, len(sentences)))].split()
        made[f"abstract-{n:05d}.txt"] = " ".join(words).encode()
    return made


def upload_all(server: Server, agent_id: str, files: dict[str, bytes]) -> tuple[float, int]:
    """Three clients take documents from one list until it is empty; seconds and chunks."""
    names = list(files)
    lock = threading.Lock()
    chunks = [0]
    errors: list[str] = []

    def client() -> None:
        with server.login() as api:
            while True:
                with lock:
                    if not names or errors:
                        return
                    name = names.pop()
                response = api.post(
                    "/api/rag/upload",
                    files={"file": (name, files[name], "text/plain")},
                    data={"agentId": agent_id},
                    timeout=300,
                )
                with lock:
                    if response.status_code != 200:
                        errors.append(f"{name}: {response.status_code} {response.text}")
                    else:
                        chunks[0] += response.json()["document"]["chunks"]

    threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    if errors:
        raise RuntimeError(f"{len(errors)} uploads failed, first: {errors[0]}")
    return seconds, chunks[0]


def palaver_round(files: dict[str, bytes]) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="palaver-ingest-") as tmp:
        server = Server(Path(tmp) / "data")
        server.start()
        try:
            with server.login() as api:
                agent_id = new_agent(api)["id"]
            seconds, chunks = upload_all(server, agent_id, files)
        finally:
            server.stop()
    return {"seconds": seconds, "chunks": chunks}


def chunk_texts(files: dict[str, bytes]) -> list[str]:
    """The texts the server embeds for these files (title line first), by its own functions."""
    return [
        embedding_text(chunk_context(document_title(name), chunk.heading_path), chunk.content)
        for name, data in files.items()
        for chunk in chunk_document(parse_document(name, data))
    ]


def model_round(embedder: LocalEmbedder, texts: list[str]) -> dict[str, float]:
    started = time.perf_counter()
    asyncio.run(embedder.embed(texts))
    return {"seconds": time.perf_counter() - started, "chunks": len(texts)}


def main(count: int, rounds: int) -> dict[str, Any]:
    files = documents(count)
    texts = chunk_texts(files)
    embedder = LocalEmbedder(precision="int8")
    embedder.load()
    palaver: list[dict[str, float]] = []
    model: list[dict[str, float]] = []
    for n in range(rounds):
        order = [palaver_round, model_round] if n % 2 == 0 else [model_round, palaver_round]
        for run in order:
            if run is palaver_round:
                palaver.append(palaver_round(files))
            else:
                model.append(model_round(embedder, texts))
    palaver_chunks = statistics.median(r["chunks"] / r["seconds"] for r in palaver)
    palaver_documents = round(statistics.median(count / r["seconds"] for r in palaver), 1)
    model_chunks = statistics.median(r["chunks"] / r["seconds"] for r in model)
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpus": os.cpu_count(),
        "documents": count,
        "chunks": palaver[0]["chunks"],
        "words_per_document": "150-300",
        "clients": CLIENTS,
        "rounds": rounds,
        "palaver": {
            "documents_per_second": palaver_documents,
            "chunks_per_second": round(palaver_chunks, 1),
            "seconds": [round(r["seconds"], 2) for r in palaver],
        },
        "model_alone": {
            "chunks_per_second": round(model_chunks, 1),
            "seconds": [round(r["seconds"], 2) for r in model],
        },
        "ratio_to_model": round(palaver_chunks / model_chunks, 2),
        "issue_12_before": ISSUE_BEFORE,
        "speedup_over_issue": round(palaver_chunks / ISSUE_BEFORE["chunks_per_second"], 1),
    }


def markdown_report(r: dict[str, Any]) -> str:
    return "\n".join(
        [
            "# Ingest of short documents over HTTP",
            "",
            f"Run {r['date']}, {r['cpus']} cores: {r['documents']} documents of "
            f"{r['words_per_document']} words ({r['chunks']} chunks), {r['clients']} clients "
            "uploading at once, "
            f"{r['rounds']} alternating rounds, medians.",
            "",
            "| | documents/s | chunks/s |",
            "|---|---|---|",
            f"| Palaver (`POST /api/rag/upload`) | {r['palaver']['documents_per_second']} | "
            f"{r['palaver']['chunks_per_second']} |",
            "| the model alone on the same chunk texts | | "
            f"{r['model_alone']['chunks_per_second']} |",
            "| issue 12, before (5,183 abstracts) | "
            f"{r['issue_12_before']['documents_per_second']} | "
            f"{r['issue_12_before']['chunks_per_second']} |",
            "",
            f"Palaver / model alone: {r['ratio_to_model']}. Palaver / issue 12's figure: "
            f"{r['speedup_over_issue']}x.",
            "",
        ]
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    results = main(args.documents, args.rounds)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "ingest_http.json").write_text(json.dumps(results, indent=2) + "\n")
    (RESULTS / "ingest_http.md").write_text(markdown_report(results))
    print(markdown_report(results))
