"""Benchmark: the server's own latency per streamed chunk, and 50 concurrent replies.

Latency is measured from the moment the fake model server hands an SSE event to its socket to
the moment the WebSocket client reads the matching `stream_chunk`, both in this process on one
monotonic clock, so it is what Palaver adds (parsing, coalescing, the bus, the hub, the socket).
The pieces are spaced 50 ms apart so that coalescing does not merge them.

    python -m bench.bench_replies
"""

from __future__ import annotations

import json
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.script import text
from tests.support import Api, Server, Ws

RESULTS = Path(__file__).parent / "results"
LATENCY_REPLIES = 4
LATENCY_PIECES = 50
CONCURRENT = 50
PIECES_PER_REPLY = 200


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _setup(api: Api, fake: FakeOpenAI, channels: int) -> list[str]:
    api.ok(
        "PUT",
        "/api/settings",
        json={
            "providers": {"fake": {"type": "openai", "baseUrl": f"{fake.url}/v1"}},
            "limits": {"messagesPerMinute": 100_000, "messageBurst": 100_000},
        },
    )
    ids = []
    for i in range(channels):
        agent = api.ok("POST", "/api/agents", json={"name": f"Bench{i}", "model": "fake/m"})[
            "agent"
        ]
        channel = api.ok(
            "POST", "/api/channels", json={"name": f"b{i}", "type": "dm", "agentIds": [agent["id"]]}
        )["channel"]
        ids.append(channel["id"])
    return ids


def chunk_latency(server: Server, api: Api, fake: FakeOpenAI, channel_id: str) -> dict[str, Any]:
    samples: list[float] = []
    with Ws(server, api.token) as ws:
        ws.subscribe(channel_id)
        for _ in range(LATENCY_REPLIES):
            fake.reset()
            pieces = tuple(f"p{i} " for i in range(LATENCY_PIECES))
            fake.enqueue(text(*pieces, delay=0.05))
            api.ok("POST", "/api/messages", json={"channelId": channel_id, "content": "go"})
            received: list[tuple[str, float]] = []
            while True:
                event = ws.recv(30)
                if event["type"] == "stream_chunk":
                    received.append((event["data"]["content"], time.monotonic()))
                elif event["type"] == "stream_end":
                    break
            written = [e for e in fake.events if e.content]
            by_content = {e.content: e.written_at for e in written}
            for content, at in received:
                if content in by_content:
                    samples.append((at - by_content[content]) * 1000)
    return {
        "chunks": len(samples),
        "median_ms": round(statistics.median(samples), 3),
        "p90_ms": round(_percentile(samples, 0.90), 3),
        "p99_ms": round(_percentile(samples, 0.99), 3),
        "max_ms": round(max(samples), 3),
    }


def concurrent_replies(
    server: Server, api: Api, fake: FakeOpenAI, channel_ids: list[str]
) -> dict[str, Any]:
    fake.reset()
    fake.default = text(*(f"t{i} " for i in range(PIECES_PER_REPLY)))
    done = threading.Event()
    finished: list[float] = []
    chunks = 0
    with Ws(server, api.token) as ws:
        for channel_id in channel_ids:
            ws.subscribe(channel_id)

        def post(channel_id: str) -> None:
            with server.client(cookies={"session": api.token}) as client:
                client.ok("POST", "/api/messages", json={"channelId": channel_id, "content": "go"})

        started = time.monotonic()
        threads = [threading.Thread(target=post, args=(c,)) for c in channel_ids]
        for thread in threads:
            thread.start()
        while len(finished) < len(channel_ids):
            event = ws.recv(120)
            if event["type"] == "stream_chunk":
                chunks += 1
            elif event["type"] == "message" and event["data"]["agentId"]:
                finished.append(time.monotonic() - started)
        for thread in threads:
            thread.join()
        done.set()
    elapsed = max(finished)
    return {
        "replies": len(finished),
        "pieces_per_reply": PIECES_PER_REPLY,
        "seconds_for_all": round(elapsed, 3),
        "replies_per_second": round(len(finished) / elapsed, 2),
        "model_tokens_per_second": round(len(finished) * PIECES_PER_REPLY / elapsed, 1),
        "chunk_events": chunks,
        "median_reply_seconds": round(statistics.median(finished), 3),
    }


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI() as fake:
        server = Server(Path(tmp) / "bench", env={"PALAVER_DEBUG_BLOCKING": "0"})
        server.start()
        try:
            api = server.login()
            channel_ids = _setup(api, fake, CONCURRENT)
            results = {
                "chunk_latency": chunk_latency(server, api, fake, channel_ids[0]),
                "concurrent_replies": concurrent_replies(server, api, fake, channel_ids),
            }
            api.close()
        finally:
            server.stop(check_log=False)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "replies.json").write_text(json.dumps(results, indent=2) + "\n")
    lat, conc = results["chunk_latency"], results["concurrent_replies"]
    (RESULTS / "replies.md").write_text(
        "| measure | value |\n|---|---|\n"
        f"| server-added latency per chunk, median | {lat['median_ms']} ms |\n"
        f"| server-added latency per chunk, p99 | {lat['p99_ms']} ms |\n"
        f"| {conc['replies']} concurrent replies of {conc['pieces_per_reply']} tokens, all done | "
        f"{conc['seconds_for_all']} s |\n"
        f"| model tokens relayed per second (all replies) | {conc['model_tokens_per_second']} |\n"
    )
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
