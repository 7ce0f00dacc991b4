"""A real nginx (Debian's) in front of test nodes, configured by the shipped `deploy/nginx.conf`.

The shipped file is what runs: only its upstream servers, its listening address and its file
paths are replaced, each replacement checked to have matched, so that an edit of the shipped
file that the test no longer follows fails here instead of testing something else. Everything
nginx writes (pid, logs, temporary files) stays under a temporary prefix: no root needed.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import httpx

from tests.support import free_port

SHIPPED = Path(__file__).resolve().parent.parent / "deploy" / "nginx.conf"
TEMP_PATHS = ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")


def cluster_config(upstreams: list[str], port: int, prefix: Path) -> str:
    """The shipped configuration, serving on `127.0.0.1:port` in front of `upstreams`."""
    text = SHIPPED.read_text()
    servers = "".join(
        f"        server {address} max_fails=3 fail_timeout=10s;\n" for address in upstreams
    )
    temp = "".join(f"    {kind}_temp_path {prefix}/{kind}_temp;\n" for kind in TEMP_PATHS)
    replacements = [
        (r"(?m)^pid .*;$", f"pid {prefix}/nginx.pid;"),
        (r"(?m)^error_log \S+", f"error_log {prefix}/error.log"),
        (r"(?m)^    access_log \S+", f"    access_log {prefix}/access.log"),
        (r"(?m)(?:^        server \S+ max_fails=3 fail_timeout=10s;\n)+", servers),
        (r"(?m)^        listen 80;$", f"        listen 127.0.0.1:{port};"),
        (r"(?m)^http \{\n", "http {\n" + temp),
    ]
    for pattern, replacement in replacements:
        text, count = re.subn(pattern, replacement.replace("\\", "\\\\"), text)
        assert count == 1, f"deploy/nginx.conf no longer has what {pattern!r} replaces"
    return text


class Nginx:
    """nginx in the foreground on a free loopback port; `stop()` ends it and its workers."""

    def __init__(self, prefix: Path, upstreams: list[str]) -> None:
        self.prefix = prefix
        self.upstreams = upstreams
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    @property
    def access_log(self) -> Path:
        return self.prefix / "access.log"

    def start(self) -> None:
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        self.prefix.mkdir(parents=True, exist_ok=True)
        conf = self.prefix / "nginx.conf"
        conf.write_text(cluster_config(self.upstreams, self.port, self.prefix))
        command = [binary, "-p", str(self.prefix), "-e", "stderr", "-c", str(conf)]
        checked = subprocess.run(
            [*command, "-t", "-q"], capture_output=True, text=True, timeout=30, check=False
        )
        assert checked.returncode == 0, f"nginx -t refused the configuration:\n{checked.stderr}"
        with (self.prefix / "stderr.log").open("ab") as log:
            self.proc = subprocess.Popen(
                [*command, "-g", "daemon off;"],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"nginx exited:\n{self.read_errors()}")
            try:
                httpx.get(f"{self.base_url}/api/me", timeout=1)
                return
            except httpx.TransportError:
                time.sleep(0.02)
        raise RuntimeError(f"nginx did not start:\n{self.read_errors()}")

    def read_errors(self) -> str:
        return "".join(
            path.read_text(errors="replace")
            for path in (self.prefix / "stderr.log", self.prefix / "error.log")
            if path.exists()
        )

    def upstream_of(self, request_id: str) -> str:
        """The node address that served the request nginx numbered `request_id`. nginx logs
        a request just after answering it, so the line may be a moment behind the answer."""
        deadline = time.monotonic() + 5
        while True:
            for line in self.access_log.read_text().splitlines():
                if f"request_id={request_id} " in line:
                    return _upstream(line)
            if time.monotonic() > deadline:
                raise LookupError(f"no request {request_id} in nginx's access log")
            time.sleep(0.01)

    def upstreams_of(self, request_line: str) -> list[str]:
        """The node addresses that served each logged request whose line has `request_line`."""
        lines = self.access_log.read_text().splitlines()
        return [_upstream(line) for line in lines if f'"{request_line} ' in line]

    def stop(self) -> None:
        """Fast shutdown (SIGTERM): open WebSocket connections must not hold it up. Should the
        master not end, its whole process group goes, so that no worker outlives the test."""
        if self.proc is not None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
            self.proc = None


def _upstream(line: str) -> str:
    found = re.search(r" upstream=(\S+)", line)
    assert found, f"no upstream in {line!r}"
    return found.group(1)
