"""A real `redis-server` for the tests: loopback, a free port, a temporary folder, no persistence.

Tests share one server and keep apart by database number (`url()` hands out a new one each
time): the adapters name their keys and their pub/sub channels by it.
"""

from __future__ import annotations

import itertools
import shutil
import socket
import subprocess
import time
from pathlib import Path

from tests.support import free_port

DATABASES = 10_000


class RedisServer:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self._numbers = itertools.count(1)

    def url(self) -> str:
        """A database of the caller's own."""
        return f"redis://127.0.0.1:{self.port}/{next(self._numbers)}"

    def start(self) -> None:
        binary = shutil.which("redis-server") or "/usr/bin/redis-server"
        self.folder.mkdir(parents=True, exist_ok=True)
        with (self.folder / "redis.log").open("ab") as log:
            self.proc = subprocess.Popen(
                [
                    binary,
                    "--bind",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                    "--dir",
                    str(self.folder),
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--databases",
                    str(DATABASES),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                said = (self.folder / "redis.log").read_text()
                raise RuntimeError(f"redis-server exited:\n{said}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.02)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
