"""Test helpers: a server process, an HTTP client bound to a session, and a WebSocket client."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack, closing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

import httpx
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from tests import pg_server

OWNER_KEY = "owner-key-for-tests"
READY = re.compile(r"(?m)^Palaver is ready: open http://\S+:(\d+) ")
"""The line `palaver serve` prints once it listens (src/palaver/cli.py), with its port."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def unique(prefix: str = "x") -> str:
    return f"{prefix}{uuid.uuid4().hex[:8]}"


class Api(httpx.Client):
    """An HTTP client for one server, carrying one session cookie."""

    def __init__(self, base_url: str, **kwargs: Any) -> None:
        super().__init__(base_url=base_url, timeout=30, **kwargs)

    @property
    def token(self) -> str:
        token = self.cookies.get("session")
        assert token, "this client is not logged in"
        return token

    def __enter__(self) -> Api:
        """Usable in `with` even after a first request (login) has opened it."""
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def ok(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        response = self.request(method, path, **kwargs)
        assert response.status_code == 200, (response.status_code, response.text)
        body: dict[str, Any] = response.json()
        return body


class Server:
    """`palaver serve` in a subprocess; start, stop (gracefully), kill, and read its log.

    It stores in SQLite in its data dir, or, while `new_database` is set (the suite's pass on
    PostgreSQL), in a PostgreSQL database of its own, made at its first start."""

    new_database: Callable[[], str] | None = None

    def __init__(self, data_dir: Path, env: dict[str, str] | None = None) -> None:
        self.data_dir = data_dir
        self.env = dict(env or {})
        self.database_url: str | None = self.env.get("DATABASE_URL")
        self.owner_key = OWNER_KEY
        self.python = sys.executable
        """The interpreter that runs it: another environment's, to test that install."""
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = data_dir.parent / f"{data_dir.name}-server.log"
        self.logs: list[str] = []

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    @property
    def db_path(self) -> Path:
        return self.data_dir / "palaver.db"

    def start(self, port: int = 0, **env: str) -> None:
        """Start it, on `port`, or with 0 (the default) on any free port, which the server
        binds itself and names in its "Palaver is ready" line. Nothing else can take that port
        between its choice and its use, as it could with a port chosen here and handed over: a
        process that starts in the meantime (another test process, another test run) may bind
        it first, and then the check that the server answers is answered by that process.
        A server restarted on the port it had (`start(port=server.port)`) frees it while it is
        down; that it is its own again is known by its ready line, not by any answer."""
        self.env.update(env)
        if self.database_url is None and Server.new_database is not None:
            self.database_url = self.env["DATABASE_URL"] = Server.new_database()
        full_env = {
            **os.environ,
            "OWNER_KEY": self.owner_key,
            "PALAVER_DEBUG_BLOCKING": "1",
            "PALAVER_DEBUG_HOOKS": "1",
            "HF_HUB_OFFLINE": "1",
            **self.env,
        }
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab")
        log_start = log.tell()
        self.proc = subprocess.Popen(
            [
                self.python,
                "-m",
                "palaver",
                "serve",
                "--port",
                str(port),
                "--data-dir",
                str(self.data_dir),
            ],
            env=full_env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            # Read before the exit check: a server that printed its line and then stopped
            # must be reported as stopped, not as started.
            ready = READY.search(self._log_since(log_start))
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited early:\n{self.read_log()}")
            if ready is not None:
                self.port = int(ready.group(1))
                assert port in (0, self.port), f"asked for port {port}, it said {self.port}"
                return
            time.sleep(0.05)
        raise RuntimeError(f"server did not start:\n{self.read_log()}")

    def _log_since(self, offset: int) -> str:
        with self.log_path.open("rb") as log:
            log.seek(offset)
            return log.read().decode(errors="replace")

    def read_log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self, check_log: bool = True) -> None:
        """Stop gracefully (SIGTERM) and fail on any traceback or blocking call it logged."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        if check_log:
            text = self.read_log()
            for marker in ("Traceback", "BlockingError"):
                assert marker not in text, f"server logged a {marker}:\n{text[-6000:]}"

    def kill(self) -> None:
        """Die at once, as a crash would: nothing gets to run its shutdown."""
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait()
        self.proc = None

    def client(self, **kwargs: Any) -> Api:
        return Api(self.base_url, **kwargs)

    def login(self, password: str | None = None, **kwargs: Any) -> Api:
        api = self.client(**kwargs)
        response = api.post("/api/login", json={"password": password or self.owner_key})
        assert response.status_code == 200, response.text
        return api


class WsEndpoint(Protocol):
    """Where a socket connects: a node, or a load balancer in front of nodes."""

    @property
    def ws_url(self) -> str: ...


class Ws:
    """A WebSocket client with helpers to wait for a given event."""

    def __init__(self, server: WsEndpoint, token: str | None = None, **kwargs: Any) -> None:
        self._stack = ExitStack()
        self.conn: ClientConnection = self._stack.enter_context(
            connect(server.ws_url, open_timeout=10, **kwargs)
        )
        self.seen: list[dict[str, Any]] = []
        if token is not None:
            self.send({"type": "auth", "token": token})
            self.expect("auth_ok")

    def send(self, message: dict[str, Any]) -> None:
        self.conn.send(json.dumps(message))

    def recv(self, timeout: float = 10) -> dict[str, Any]:
        event: dict[str, Any] = json.loads(self.conn.recv(timeout=timeout))
        self.seen.append(event)
        return event

    def expect(self, kind: str, timeout: float = 10, **fields: Any) -> dict[str, Any]:
        """The next event of `kind` whose data has `fields`; other events are kept in `seen`."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no {kind} {fields} event; saw {self.seen[-10:]}")
            event = self.recv(left)
            data = event.get("data", event)
            if event["type"] == kind and all(data.get(k) == v for k, v in fields.items()):
                return event

    def expect_any(self, kinds: tuple[str, ...], timeout: float = 10) -> dict[str, Any]:
        """The next event of one of `kinds`; other events are kept in `seen`."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no event of {kinds}; saw {self.seen[-10:]}")
            event = self.recv(left)
            if event["type"] in kinds:
                return event

    def subscribe(self, channel_id: str) -> None:
        self.send({"type": "subscribe", "channelId": channel_id})
        self.expect("subscribed", channelId=channel_id)

    def expect_close(self, timeout: float = 10) -> int:
        """Read until the server closes the connection; answer the close code it sent."""
        deadline = time.monotonic() + timeout
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"the connection stayed open; saw {self.seen[-10:]}")
                self.recv(left)
        except ConnectionClosed as closed:
            return closed.rcvd.code if closed.rcvd is not None else 1006

    def close(self) -> None:
        self._stack.close()

    def __enter__(self) -> Ws:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def wait_until(predicate: Callable[[], bool], timeout: float = 10, what: str = "it") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not happen within {timeout} s")
        time.sleep(0.02)


def new_agent(owner: Api, **fields: Any) -> dict[str, Any]:
    agent: dict[str, Any] = owner.ok(
        "POST", "/api/agents", json={"name": unique("agent-"), **fields}
    )["agent"]
    return agent


def new_channel(
    owner: Api,
    agent_ids: list[str] | None = None,
    member_ids: list[str] | None = None,
    kind: str = "group",
) -> dict[str, Any]:
    body = {
        "name": unique("channel-"),
        "type": kind,
        "agentIds": agent_ids or [],
        "memberIds": member_ids or [],
    }
    channel: dict[str, Any] = owner.ok("POST", "/api/channels", json=body)["channel"]
    return channel


class Guest:
    """A guest the owner invited, logged in with its own key."""

    def __init__(self, server: Server, owner: Api, name: str | None = None) -> None:
        body = owner.ok("POST", "/api/guests", json={"name": name or unique("guest-")})
        self.user: dict[str, Any] = body["user"]
        self.id: str = body["user"]["id"]
        self.key: str = body["key"]
        self.api = server.login(self.key)

    def close(self) -> None:
        self.api.close()

    def __enter__(self) -> Guest:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def post(api: Api, channel_id: str, content: str = "hello", **fields: Any) -> str:
    body = api.ok(
        "POST", "/api/messages", json={"channelId": channel_id, "content": content, **fields}
    )
    assert body["ok"] is True
    message_id: str = body["id"]
    return message_id


def history(api: Api, channel_id: str, **params: Any) -> list[dict[str, Any]]:
    body = api.ok("GET", "/api/messages", params={"channelId": channel_id, **params})
    messages: list[dict[str, Any]] = body["messages"]
    return messages


def whole_history(api: Api, channel_id: str) -> list[dict[str, Any]]:
    """Every message of the channel, oldest first: the newest page, then page by page back
    (a page without `before` or `after` is the newest, so paging forward from it would stop
    at once)."""
    found: list[dict[str, Any]] = []
    before: dict[str, str] = {}
    while True:
        page = history(api, channel_id, limit=200, **before)
        found = page + found
        if len(page) < 200:
            return found
        before = {"before": page[0]["id"]}


def token_hash(token: str) -> str:
    """How the service files a session token (tests must agree, not import it)."""
    return hashlib.sha256(token.encode()).hexdigest()


def sql(server: Server, statement: str, *params: Any) -> list[tuple[Any, ...]]:
    """Run one statement (`?` marks its parameters) on the server's database, as an operator
    with a shell could: its SQLite file, or its PostgreSQL database."""
    if server.database_url is not None:
        with pg_server.connect(server.database_url) as conn:
            cursor = conn.execute(statement.replace("%", "%%").replace("?", "%s").encode(), params)
            return [pg_server.as_sqlite(row) for row in cursor] if cursor.description else []
    with closing(sqlite3.connect(server.db_path, timeout=10)) as db, db:
        return db.execute(statement, params).fetchall()


def age_session(server: Server, token: str, days: float) -> None:
    """Pretend the session was last used `days` ago; the server forgets what it remembered of
    it, as it would have after so long."""
    when = datetime.now(UTC) - timedelta(days=days)
    sql(
        server,
        "UPDATE sessions SET last_used_at = ? WHERE token_hash = ?",
        when.strftime("%Y-%m-%d %H:%M:%S.%f"),
        token_hash(token),
    )
    forget_caches(server)


def forget_caches(server: Server) -> None:
    """Make the server forget its caches, after a test changed the database behind its back."""
    httpx.post(f"{server.base_url}/api/debug/forget-caches", timeout=10).raise_for_status()


def db_counts(server: Server) -> dict[str, int]:
    """What the server asked its database so far: statements and round trips."""
    counts: dict[str, int] = httpx.get(f"{server.base_url}/api/debug/db-counts", timeout=10).json()
    return counts


def expired_login(server: Server) -> Api:
    """A client whose owner session has gone unused for longer than the idle limit."""
    api = server.login()
    age_session(server, api.token, days=31)
    return api


def revoked_login(server: Server) -> Api:
    """A client still carrying the cookie of a session that logged out."""
    api = server.login()
    token = api.token
    api.ok("POST", "/api/logout")
    api.cookies.set("session", token)
    return api


def files_under(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file()} if folder.exists() else set()
