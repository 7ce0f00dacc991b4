"""Benchmark: the browser client in real Chromium against a local `palaver serve`.

- first load: JavaScript plus CSS the page loads first, gzipped as the server sends it (the
  highlighter, loaded on demand, is counted apart);
- channel view: from navigation to a logged-in channel of 50 messages until its messages are
  painted and the composer takes input, in the page's own clock (median of several loads; the
  time Playwright's polling wait sees is kept beside it);
- a channel of 10,000 messages: opened as the channel view is (median of several loads), then
  scrolled up to its first message; the most message nodes in the DOM at any point, and the
  frame times and long tasks while scrolling (their probe starts with the scroll);
- a reply streamed at 200 chunks per second into the open channel: how far the text on screen
  trails the last chunk the socket received (checked every frame), and main-thread long tasks.

    python -m bench.bench_web [--rounds N]

With two cores or more, the server is pinned to the first and the browser (Playwright's driver
and Chromium, which inherit it) to the second, so they do not take turns on one core. Each
browser measure runs `--rounds` times (3 by default) on the same data; the figures reported are
the medians over the rounds, and every round's figures are kept in `web.json`.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.script import text
from tests.support import Api, Server
from tests.web.conftest import CHROMIUM, CHROMIUM_ARGS

RESULTS = Path(__file__).parent / "results"
DIST = Path(__file__).parents[1] / "src" / "palaver" / "web" / "dist"
LONG_CHANNEL = 10_000
WHEEL_PX = 500
"""One wheel step every frame or so: 30,000 px/s, a hard flick."""
STREAM_PIECES = 1_000
STREAM_DELAY = 0.005
LOADS = 7

# Frame times and long tasks, recorded in the page from when this runs. The scroll starts it
# once the channel is open: run from the page's first script, its frame loop and observer made
# the opening itself 46 ms slower (median of 10 alternating loads of the 10,000-message channel,
# 338 against 292 ms), which the opening's figure then carried.
FRAMES = """
window.__frames = [];
window.__longTasks = [];
(function tick(last) {
  requestAnimationFrame(now => { window.__frames.push([now, now - last]); tick(now); });
})(performance.now());
new PerformanceObserver(list => {
  for (const e of list.getEntries()) window.__longTasks.push([e.startTime, e.duration]);
}).observe({entryTypes: ['longtask']});
"""

# Each streamed chunk as the socket receives it: the reply's measure, from the first script on.
CHUNKS = """
window.__chunks = [];
const Native = WebSocket;
window.WebSocket = class extends Native {
  constructor(...args) {
    super(...args);
    this.addEventListener('message', e => {
      const event = JSON.parse(e.data);
      if (event.type === 'stream_chunk') {
        const words = event.data.content.trim().split(/\\s+/);
        window.__chunks.push([performance.now(), Number(words[words.length - 1].slice(1))]);
      }
    });
  }
};
"""


# When the channel is open, in the page's own clock (0 is the navigation's start): when the
# frame that first shows its messages and the composer is painted. That is the first contentful
# paint if it came after they were in the document (nothing was painted before them);
# otherwise the end of the first frame after they came (after a sidebar without messages, say).
# Playwright's own wait sees it later: it polls at growing intervals (0, 20, 100, 100, 500 ms),
# which adds up to hundreds of milliseconds that are the benchmark's, not the page's; both are
# kept.
OPENED = """
window.__opened = null;
new MutationObserver((_, observer) => {
  if (!document.querySelector('[data-testid=message-list][aria-busy=false] article')
      || !document.getElementById('composer-input')) return;
  observer.disconnect();
  const inDocument = performance.now();
  let nextFrame = null, firstPaint = null;
  const decide = () => {
    if (firstPaint === null || (firstPaint < inDocument && nextFrame === null)) return;
    window.__opened = firstPaint >= inDocument ? firstPaint : nextFrame;
  };
  requestAnimationFrame(() => setTimeout(() => { nextFrame = performance.now(); decide(); }, 0));
  new PerformanceObserver((list, paints) => {
    for (const entry of list.getEntries()) {
      if (entry.name === 'first-contentful-paint') {
        firstPaint = entry.startTime;
        paints.disconnect();
        decide();
      }
    }
  }).observe({type: 'paint', buffered: true});
}).observe(document, {subtree: true, childList: true, attributes: true});
"""


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def bundle() -> dict[str, Any]:
    index = (DIST / "index.html").read_text()
    first, lazy = 0, 0
    for path in sorted((DIST / "assets").iterdir()):
        size = len(gzip.compress(path.read_bytes(), 9))
        if path.name in index:
            first += size
        elif path.suffix in (".js", ".css"):
            lazy += size
    return {
        "first_load_gzip_kb": round(first / 1024, 1),
        "on_demand_gzip_kb": round(lazy / 1024, 1),
    }


def _fill(api: Api, channel_id: str, count: int) -> None:
    for i in range(1, count + 1):
        body = {"channelId": channel_id, "content": f"message {i}", "type": "text"}
        api.ok("POST", "/api/messages", json=body)


def _login(page: Any, server: Server) -> None:
    page.goto("/login")
    page.get_by_label("Password or guest key").fill(server.owner_key)
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("navigation", name="Channels").wait_for()


def _ready(page: Any) -> float:
    """Wait for the channel to be open; the page's time for it (`OPENED`), in milliseconds."""
    page.locator("[data-testid=message-list][aria-busy=false] article").first.wait_for()
    page.get_by_role("textbox", name="Message").wait_for()
    page.wait_for_function("() => window.__opened !== null")
    return float(page.evaluate("window.__opened"))


def _opens(page: Any, channel_id: str) -> tuple[float, float]:
    """The channel opened `LOADS` times from a blank page: the medians of the page's time
    (`OPENED`) and of the time Playwright's wait sees, in milliseconds."""
    times, seen = [], []
    for _ in range(LOADS):
        page.goto("about:blank")
        started = time.perf_counter()
        page.goto(f"/c/{channel_id}")
        times.append(_ready(page))
        seen.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), statistics.median(seen)


def channel_view(browser: Any, server: Server, channel_id: str) -> dict[str, Any]:
    context = browser.new_context(base_url=server.base_url)
    context.add_init_script(OPENED)
    page = context.new_page()
    _login(page, server)
    opened, seen = _opens(page, channel_id)
    context.close()
    return {
        "interactive_ms_median": round(opened),
        "playwright_sees_ms_median": round(seen),
        "loads": LOADS,
    }


def long_channel(browser: Any, server: Server, channel_id: str) -> dict[str, Any]:
    context = browser.new_context(base_url=server.base_url, viewport={"width": 1280, "height": 800})
    context.add_init_script(OPENED)
    page = context.new_page()
    _login(page, server)
    opened, seen = _opens(page, channel_id)
    page.wait_for_timeout(300)
    page.evaluate("() => {" + FRAMES + "}")
    start = page.evaluate("performance.now()")
    most_nodes = 0
    steps = 0
    started = time.perf_counter()
    page.mouse.move(640, 400)
    at_start = False
    while not at_start:
        page.mouse.wheel(0, -WHEEL_PX)
        page.wait_for_timeout(16)
        # One small query a step: the benchmark's own probing must not be what it measures.
        nodes, at_start = page.evaluate(
            "() => [document.getElementsByTagName('article').length,"
            " !!document.querySelector('.start:not(.hidden)')"
            " && document.querySelector('[data-testid=message-list]').scrollTop === 0]"
        )
        most_nodes = max(most_nodes, nodes)
        steps += 1
        if time.perf_counter() - started > 600:
            raise TimeoutError("did not reach the first message in 10 minutes")
    seconds = time.perf_counter() - started
    frames = [d for t, d in page.evaluate("window.__frames") if t > start]
    long_tasks = [d for t, d in page.evaluate("window.__longTasks") if t > start]
    # The flick's last rows are placeholders until it settles: the first message shows then.
    page.wait_for_function("() => !document.querySelector('.row.placeholder')")
    first_seen = page.locator("article", has_text="message 1").count() > 0
    context.close()
    return {
        "messages": LONG_CHANNEL,
        "interactive_ms": round(opened),
        "playwright_sees_ms": round(seen),
        "loads": LOADS,
        "reached_first_message": first_seen,
        "scroll_seconds": round(seconds, 1),
        "wheel_steps": steps,
        "wheel_px_per_step": WHEEL_PX,
        "most_message_nodes_in_dom": most_nodes,
        "frame_ms_p50": round(_percentile(frames, 0.5), 1),
        "frame_ms_p95": round(_percentile(frames, 0.95), 1),
        "frame_ms_max": round(max(frames), 1),
        "frames_over_50ms": sum(1 for d in frames if d > 50),
        "frames": len(frames),
        "long_tasks": len(long_tasks),
        "long_task_ms_max": round(max(long_tasks, default=0.0), 1),
    }


def streaming(
    browser: Any, server: Server, api: Api, fake: FakeOpenAI, channel_id: str
) -> dict[str, Any]:
    context = browser.new_context(base_url=server.base_url, viewport={"width": 1280, "height": 800})
    context.add_init_script(FRAMES)
    context.add_init_script(CHUNKS)
    page = context.new_page()
    _login(page, server)
    page.goto(f"/c/{channel_id}")
    page.locator("[data-testid=message-list][aria-busy=false]").wait_for()
    # Every frame, which word of the reply is the last one on screen.
    page.evaluate(
        """() => {
        window.__shown = [];
        (function look() {
          requestAnimationFrame(now => {
            const md = [...document.querySelectorAll('article[aria-busy=true] .md')].pop();
            if (md) {
              const words = md.textContent.trim().split(/\\s+/);
              const n = Number((words[words.length - 1] || 'w0').slice(1));
              window.__shown.push([now, Number.isFinite(n) ? n : 0]);
            }
            look();
          });
        })();
    }"""
    )
    pieces = tuple(f"w{i} " for i in range(1, STREAM_PIECES + 1))
    fake.enqueue(text(*pieces, delay=STREAM_DELAY))
    start = page.evaluate("performance.now()")
    body = {"channelId": channel_id, "content": "@Streamer go", "type": "text"}
    api.ok("POST", "/api/messages", json=body)
    page.locator("article", has_text=f"w{STREAM_PIECES}").wait_for(timeout=60_000)
    page.locator("article[aria-busy=true]").wait_for(state="detached", timeout=60_000)
    chunks = page.evaluate("window.__chunks")
    shown = page.evaluate("window.__shown")
    long_tasks = [d for t, d in page.evaluate("window.__longTasks") if t > start]
    frames = [d for t, d in page.evaluate("window.__frames") if t > start]
    context.close()
    lags = []
    for received, word in chunks:
        on_screen = next((t for t, n in shown if n >= word and t >= received), None)
        if on_screen is not None:
            lags.append(on_screen - received)
    seconds = (chunks[-1][0] - chunks[0][0]) / 1000 if len(chunks) > 1 else 0.0
    return {
        "pieces": STREAM_PIECES,
        "pieces_per_second_sent": round(1 / STREAM_DELAY),
        "stream_seconds": round(seconds, 2),
        "stream_chunk_events": len(chunks),
        "lag_ms_p50": round(_percentile(lags, 0.5), 1),
        "lag_ms_p95": round(_percentile(lags, 0.95), 1),
        "lag_ms_max": round(max(lags), 1),
        "long_tasks": len(long_tasks),
        "long_task_ms_max": round(max(long_tasks, default=0.0), 1),
        "frame_ms_max": round(max(frames), 1),
    }


def _median_round(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Each numeric figure's median over the rounds (the other fields from the first round)."""
    merged = dict(rounds[0])
    for key, value in rounds[0].items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            merged[key] = round(statistics.median(r[key] for r in rounds), 1)
    merged["rounds"] = len(rounds)
    return merged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    rounds = parser.parse_args().rounds
    results: dict[str, Any] = {"bundle": bundle()}
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI() as fake:
        server = Server(Path(tmp) / "data")
        if len(cpus) >= 2:
            os.sched_setaffinity(0, {cpus[0]})
        server.start()
        if len(cpus) >= 2:
            os.sched_setaffinity(0, {cpus[1]})
        results["pinned"] = (
            {"server_cpu": cpus[0], "browser_cpu": cpus[1]} if len(cpus) >= 2 else None
        )
        pw = sync_playwright().start()
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            with server.login() as api:
                api.ok(
                    "PUT",
                    "/api/settings",
                    json={
                        "providers": {
                            "fake": {
                                "type": "openai",
                                "baseUrl": f"{fake.url}/v1",
                                "apiKey": "sk-bench",
                            }
                        },
                        "limits": {"messagesPerMinute": 100_000, "messageBurst": 100_000},
                        # The streamed reply is about 4,900 characters: above the default cap
                        # of 1,024 tokens (4,096 characters), which cut it before `w1000`
                        # and made this measure time out.
                        "agents": {"replyTokens": 4_096},
                    },
                )
                agent = api.ok("POST", "/api/agents", json={"name": "Streamer", "model": "fake/m"})[
                    "agent"
                ]
                small = api.ok("POST", "/api/channels", json={"name": "small", "type": "group"})[
                    "channel"
                ]
                _fill(api, small["id"], 50)
                results["channel_view"] = _median_round(
                    [channel_view(browser, server, small["id"]) for _ in range(rounds)]
                )
                big = api.ok("POST", "/api/channels", json={"name": "big", "type": "group"})[
                    "channel"
                ]
                _fill(api, big["id"], LONG_CHANNEL)
                scrolls = [long_channel(browser, server, big["id"]) for _ in range(rounds)]
                results["long_channel"] = _median_round(scrolls)
                results["long_channel"]["reached_first_message"] = all(
                    r["reached_first_message"] for r in scrolls
                )
                results["long_channel_rounds"] = scrolls
                try:
                    streams = []
                    for n in range(rounds):
                        # A room each round: the last one's reply also ends in the last word.
                        room = api.ok(
                            "POST",
                            "/api/channels",
                            json={
                                "name": f"stream-{n}",
                                "type": "group",
                                "agentIds": [agent["id"]],
                            },
                        )["channel"]
                        streams.append(streaming(browser, server, api, fake, room["id"]))
                    results["streaming"] = _median_round(streams)
                    results["streaming_rounds"] = streams
                except Exception as error:  # the other figures are still worth keeping
                    results["streaming"] = {"error": f"{type(error).__name__}: {error}"[:300]}
        finally:
            browser.close()
            pw.stop()
            server.stop()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "web.json").write_text(json.dumps(results, indent=2) + "\n")
    (RESULTS / "web.md").write_text(_markdown(results))
    print(json.dumps(results, indent=2))


def _markdown(r: dict[str, Any]) -> str:
    b, v, big, s = r["bundle"], r["channel_view"], r["long_channel"], r["streaming"]
    rows = [
        (
            "first load, JS + CSS gzipped",
            f"{b['first_load_gzip_kb']} KB (highlighter, on demand: {b['on_demand_gzip_kb']} KB)",
        ),
        (
            f"channel view interactive after navigation (median of {v['loads']}; as "
            "Playwright's polling wait sees it)",
            f"{v['interactive_ms_median']} ms ({v['playwright_sees_ms_median']} ms)",
        ),
        (
            f"channel of {big['messages']:,} messages interactive after navigation (median of "
            f"{big['loads']}; as Playwright's polling wait sees it)",
            f"{big['interactive_ms']} ms ({big['playwright_sees_ms']} ms)",
        ),
        (
            f"{big['messages']:,} messages scrolled to the first ({big['wheel_px_per_step']} px "
            "wheel steps): most message nodes in the DOM",
            str(big["most_message_nodes_in_dom"]),
        ),
        (
            "... frame time p50 / p95 / max",
            f"{big['frame_ms_p50']} / {big['frame_ms_p95']} / {big['frame_ms_max']} ms "
            f"({big['frames_over_50ms']} of {big['frames']} frames over 50 ms)",
        ),
        ("... long tasks (longest)", f"{big['long_tasks']} ({big['long_task_ms_max']} ms)"),
    ]
    if "error" in s:
        rows.append(("reply streaming", f"not measured: {s['error'].splitlines()[0]}"))
    else:
        rows += [
            (
                f"reply at {s['pieces_per_second_sent']} chunks/s: text on screen behind the last "
                "chunk received, p50 / p95 / max",
                f"{s['lag_ms_p50']} / {s['lag_ms_p95']} / {s['lag_ms_max']} ms",
            ),
            (
                "... long tasks while streaming (longest)",
                f"{s['long_tasks']} ({s['long_task_ms_max']} ms)",
            ),
        ]
    table = "\n".join(f"| {name} | {value} |" for name, value in rows)
    return (
        "# Web client benchmark\n\n"
        "`python -m bench.bench_web`: Debian's Chromium (headless) against a local "
        "`palaver serve`, on this machine (2 cores, shared"
        + (", server and browser pinned to one core each" if r.get("pinned") else "")
        + f"); medians of {big.get('rounds', 1)} rounds.\n\n"
        f"| measure | result |\n|---|---|\n{table}\n"
    )


if __name__ == "__main__":
    main()
