"""The Dockerfile's install, run for real: in a fresh venv it installs the locked
`palaver[postgres,redis]` and nothing else, and a node started from that venv serves on
PostgreSQL and Redis, as compose runs it.

No image can be built here, so the test copies what the Dockerfile copies into a folder of its
own and runs the `pip` commands of its install step there. With pip's cache warm that takes
about 90 s (it downloads only on a cold cache), run in the background from the start of the
session; the node's part takes a few seconds.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import traceback
from pathlib import Path
from typing import IO

from tests.pg_server import PgServer
from tests.redis_server import RedisServer
from tests.support import Server, history, new_agent

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
SEEDED = {"pip", "setuptools", "palaver"}
"""What a venv starts with, and Palaver itself: everything else comes from the lock."""
ENV = {
    **{k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_NO_CACHE_DIR")},
    "PIP_DISABLE_PIP_VERSION_CHECK": "1",
}
"""pip as the machine configures it, its cache on (the Dockerfile turns it off for the image);
not the suite's own source tree."""


def dockerfile_install() -> tuple[list[str], list[list[str]]]:
    """What the Dockerfile copies into its work dir, and the pip commands that install it."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    copied: list[str] = []
    pips: list[list[str]] = []
    for line in text.splitlines():
        words = line.split()
        if words[:1] == ["COPY"]:
            copied += words[1:-1]
        elif words[:1] == ["RUN"]:
            commands = (shlex.split(part) for part in line.split(maxsplit=1)[1].split("&&"))
            pips += [command for command in commands if command[:1] == ["pip"]]
    return copied, pips


def locked(path: Path) -> dict[str, str]:
    pins = re.findall(r"(?m)^([A-Za-z0-9_.\-]+)==(\S+)", path.read_text())
    return {_normal(name): version for name, version in pins}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


class DockerfileInstall:
    """The Dockerfile's install in a fresh venv, run in a thread from the end of collection
    (tests/conftest.py), so that its minute or two of pip overlaps the tests before its own.

    Under pytest-xdist every worker collects the whole suite, but the install must run once:
    the controller runs it, and tells the workers its folder (`attach`); the worker that runs
    the test waits for it on a lock file the running install holds."""

    def __init__(self) -> None:
        self.folder: Path | None = None
        self.failure: str | None = None
        self.elsewhere = False
        """Run by another process (pytest-xdist's controller): this one only waits for it."""
        self._thread: threading.Thread | None = None
        self._running: IO[str] | None = None

    @property
    def work(self) -> Path:
        assert self.folder is not None
        return self.folder / "opt-palaver"

    @property
    def venv(self) -> Path:
        assert self.folder is not None
        return self.folder / "venv"

    @property
    def _lock_path(self) -> Path:
        assert self.folder is not None
        return self.folder / "running.lock"

    @property
    def _result_path(self) -> Path:
        assert self.folder is not None
        return self.folder / "result"

    def prepare(self) -> Path:
        """The install's folder, made if need be (it may not be filled yet)."""
        if self.folder is None:
            self.folder = Path(tempfile.mkdtemp(prefix="palaver-dockerfile-"))
        return self.folder

    def attach(self, folder: Path) -> None:
        """Use the install another process runs (or ran) in `folder`."""
        self.folder = folder
        self.elsewhere = True

    def start(self) -> None:
        if self.elsewhere or self._thread is not None:
            return
        self.prepare()
        # Taken before the thread starts, so that a waiter never finds the lock free too early.
        self._running = self._lock_path.open("w")
        fcntl.flock(self._running, fcntl.LOCK_EX)
        self._thread = threading.Thread(target=self._run_and_report, daemon=True)
        self._thread.start()

    def wait(self) -> None:
        if self.elsewhere:
            try:
                lock = self._lock_path.open()
            except FileNotFoundError:
                raise AssertionError("the Dockerfile's install was never started") from None
            with lock:
                fcntl.flock(lock, fcntl.LOCK_SH)
            assert self._result_path.exists(), "the Dockerfile's install did not finish"
            self.failure = self._result_path.read_text() or None
        else:
            self.start()
            assert self._thread is not None
            self._thread.join()
        assert self.failure is None, self.failure

    def remove(self) -> None:
        """Delete the folder; the process that ran the install does it."""
        if self.elsewhere:
            return
        if self._thread is not None:
            self._thread.join()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)

    def _run_and_report(self) -> None:
        assert self._running is not None
        try:
            self._run()
        except Exception:
            self.failure = traceback.format_exc()
        finally:
            self._result_path.write_text(self.failure or "")
            self._running.close()

    def _run(self) -> None:
        copied, pips = dockerfile_install()
        self.work.mkdir()
        for name in copied:
            source = ROOT / name
            if source.is_dir():
                skip = shutil.ignore_patterns("__pycache__", "*.egg-info")
                shutil.copytree(source, self.work / name, ignore=skip)
            else:
                shutil.copy2(source, self.work / name)
        steps = [[sys.executable, "-m", "venv", str(self.venv)]]
        steps += [[str(self.venv / "bin" / "pip"), *pip[1:], "--quiet"] for pip in pips]
        for step in steps:
            done = subprocess.run(
                step, cwd=self.work, env=ENV, capture_output=True, text=True, timeout=900
            )
            if done.returncode != 0:
                self.failure = f"{shlex.join(step)}:\n{done.stdout}\n{done.stderr}"
                return


INSTALL = DockerfileInstall()


def test_the_dockerfile_install_runs_a_node_on_postgresql_and_redis(
    tmp_path: Path, pg: PgServer, redis_server: RedisServer
) -> None:
    _, pips = dockerfile_install()
    assert ["pip", "install", ".[postgres,redis]"] in pips
    try:
        INSTALL.wait()
        _check_and_serve(INSTALL.venv, INSTALL.work, tmp_path, pg, redis_server)
    finally:
        INSTALL.remove()


def _check_and_serve(
    venv: Path, work: Path, tmp_path: Path, pg: PgServer, redis_server: RedisServer
) -> None:
    listing = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import importlib.metadata as m, json, palaver; "
            "print(json.dumps({d.name: d.version for d in m.distributions()})); "
            "print(palaver.__file__)",
        ],
        env=ENV,
        capture_output=True,
        text=True,
        check=True,
    )
    versions, where = listing.stdout.splitlines()
    assert where.startswith(str(venv)), "the node runs the Palaver installed in the venv"
    installed = {_normal(k): v for k, v in json.loads(versions).items()}
    assert {k: v for k, v in installed.items() if k not in SEEDED} == locked(
        work / "requirements.txt"
    )

    node = Server(
        tmp_path / "node",
        env={
            "DATABASE_URL": pg.new_database(),
            "REDIS_URL": redis_server.url(),
            # The suite's blocking-call detector is a test tool, not part of a deployment.
            "PALAVER_DEBUG_BLOCKING": "0",
            "PYTHONPATH": "",
        },
    )
    node.python = str(venv / "bin" / "python")
    node.start()
    try:
        with node.login() as owner:
            body = {"name": "deployed", "type": "group"}
            channel = owner.ok("POST", "/api/channels", json=body)["channel"]["id"]
            owner.ok("POST", "/api/messages", json={"channelId": channel, "content": "hello"})
            assert [m["content"] for m in history(owner, channel)] == ["hello"]
            page = owner.get("/")
            assert page.status_code == 200 and '<div id="app">' in page.text
            # The shipped embedding model, from the installed package (not a source tree).
            agent = new_agent(owner)["id"]
            note = ("bees.md", b"# Bees\n\nA first-year hive is inspected every nine days.")
            upload = owner.post("/api/rag/upload", files={"file": note}, data={"agentId": agent})
            assert upload.status_code == 200, upload.text
            asked = {"agentId": agent, "query": "how often is a hive inspected", "topK": 3}
            results = owner.ok("POST", "/api/rag/query", json=asked)["results"]
            assert results and results[0]["vectorRank"] == 1
    finally:
        node.stop()
