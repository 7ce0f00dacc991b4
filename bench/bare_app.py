"""The bare baselines: what FastAPI/Starlette under the same uvicorn settings does with no work.

- `POST /echo`: a validated JSON body like a post's, answered `{"id": ..., "ok": true}`.
- `GET /page`: a page of messages (or a list of channels) of the same size and shape as
  Palaver's, encoded per request.
- `/ws`: accept, answer the `auth` and `subscribe` messages; subscribers join a minimal hub,
  one bounded queue and one sending task per socket.
- `POST /publish`: fan one event out to every subscriber, like a post to a channel.

    python -m bench.bare_app --port 8001 --page page.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI, WebSocket, WebSocketDisconnect
from pydantic import BaseModel, ConfigDict

from palaver.cli import uvicorn_options
from palaver.config import Config


class Post(BaseModel):
    model_config = ConfigDict(extra="forbid")
    channelId: str
    content: str
    type: str = "text"
    metadata: dict[str, Any] | None = None


def build(page: dict[str, Any]) -> FastAPI:
    app = FastAPI()
    queues: set[asyncio.Queue[str]] = set()
    counter = 0

    @app.post("/echo")
    async def echo(body: Post) -> dict[str, Any]:
        nonlocal counter
        counter += 1
        return {"id": f"msg_{counter:026d}", "ok": True}

    @app.get("/page")
    async def get_page() -> dict[str, Any]:
        return {k: [dict(i) for i in v] if isinstance(v, list) else v for k, v in page.items()}

    @app.post("/publish")
    async def publish(body: Post) -> dict[str, Any]:
        nonlocal counter
        counter += 1
        text = json.dumps(
            {"type": "message", "data": {"id": str(counter), "content": body.content}},
            ensure_ascii=False,
            separators=(",", ":"),
        )
        for queue in list(queues):
            if queue.full():
                continue
            queue.put_nowait(text)
        return {"id": str(counter), "ok": True}

    @app.websocket("/ws")
    async def ws(socket: WebSocket) -> None:
        await socket.accept()
        queue: asyncio.Queue[str] = asyncio.Queue(256)

        async def send_loop() -> None:
            while True:
                await socket.send_text(await queue.get())

        sender = asyncio.create_task(send_loop())
        try:
            while True:
                message = json.loads(await socket.receive_text())
                if message.get("type") == "auth":
                    queue.put_nowait(json.dumps({"type": "auth_ok", "userId": "user_bare"}))
                elif message.get("type") == "subscribe":
                    queues.add(queue)
                    subscribed = {"channelId": message.get("channelId")}
                    queue.put_nowait(json.dumps({"type": "subscribed", "data": subscribed}))
        except WebSocketDisconnect:
            pass
        finally:
            queues.discard(queue)
            sender.cancel()

    return app


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--page", type=Path, required=True)
    args = parser.parse_args()
    os.environ.setdefault("OWNER_KEY", "bare-baseline-unused-key")
    config = Config(port=args.port, log_level="warning")
    app = build(json.loads(args.page.read_text()))
    uvicorn.Server(uvicorn.Config(app, **uvicorn_options(config))).run()


if __name__ == "__main__":
    main()
