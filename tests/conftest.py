"""Real servers for the suite: `palaver serve` in a subprocess on a free loopback port.

Tests talk to it over real HTTP and WebSocket connections. The server runs with blocking-call
detection on, and every server's log is checked for tracebacks when it stops.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from tests.cpu import instruction_sets
from tests.pg_server import PgServer, storage
from tests.redis_server import RedisServer
from tests.support import Api, Server

SHARED_ENV = {"PALAVER_TRUST_PROXY": "1"}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "sqlite_only: about SQLite itself, its file or its threads (skipped on PostgreSQL)",
    )


def pytest_report_header() -> str:
    """The integer kernels the suite's int8 tests ran on (they differ from CPU to CPU)."""
    return f"cpu: {instruction_sets()}"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The same at the end, where `-q` (CI's run) shows it too."""
    terminalreporter.write_line(f"int8 tests ran on cpu: {instruction_sets()}")


def pytest_make_parametrize_id(val: object, argname: str) -> str | None:
    """Bytes go by their parameter's name: a generated PDF differs at every collection (its
    date, its encryption), and a test's id must not (to rerun it by id, or to split the suite
    between processes)."""
    return argname if isinstance(val, bytes) else None


DEPLOY_INSTALL = "tests/test_deploy_install.py"
WORKER_INSTALL_KEY = "palaver_dockerfile_install"


def pytest_collection_finish(session: pytest.Session) -> None:
    """The Dockerfile's install (tests/test_deploy_install.py) is a minute or two of pip: begun
    now, in a thread, it overlaps the tests that run before it. A pytest-xdist worker does not
    begin it: the controller runs it once for all of them (below), in the folder it named."""
    if any(item.nodeid.startswith(DEPLOY_INSTALL) for item in session.items):
        from tests.test_deploy_install import INSTALL

        workerinput = getattr(session.config, "workerinput", None)
        if workerinput is None:
            INSTALL.start()
        else:
            INSTALL.attach(Path(workerinput[WORKER_INSTALL_KEY]))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist's controller, before it starts a worker: where the install goes."""
    from tests.test_deploy_install import INSTALL

    node.workerinput[WORKER_INSTALL_KEY] = str(INSTALL.prepare())


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: Sequence[str]) -> None:
    """pytest-xdist's controller, once a worker has collected, before any test is handed out:
    the install begins here when the test that needs it is in the run."""
    if any(nodeid.startswith(DEPLOY_INSTALL) for nodeid in ids):
        from tests.test_deploy_install import INSTALL

        INSTALL.start()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Its folder goes even when the run stopped before its test (`-x`, Ctrl-C); under
    pytest-xdist, when the controller ends, after every worker."""
    module = sys.modules.get("tests.test_deploy_install")
    if module is not None:
        module.INSTALL.remove()


FIRST = ("tests/test_on_postgresql.py", "tests/web/")
"""What pytest-xdist hands out first: the longest units of work, one test that runs eleven
modules again on PostgreSQL (minutes, in one process) and the browser tests (which one worker
runs, tests/scheduling.py). The other files then fill in around them."""


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`-n` alone (its `--dist load`) distributes as tests/scheduling.py says; another
    `--dist` is left as it is."""
    if config.getvalue("dist") != "load":
        return None
    from tests.scheduling import SuiteScheduling

    return SuiteScheduling(config, log)


def _first(item: pytest.Item) -> int:
    return next((n for n, prefix in enumerate(FIRST) if item.nodeid.startswith(prefix)), len(FIRST))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if hasattr(config, "workerinput"):
        items.sort(key=_first)
    if storage() != "postgresql":
        return
    for item in items:
        if item.get_closest_marker("sqlite_only") is not None:
            item.add_marker(pytest.mark.skip(reason="about SQLite itself"))


settings.register_profile("repeatable", derandomize=True, database=None, deadline=None)
settings.load_profile("repeatable")
"""Property tests explore the same examples on every run: CI must not fail by chance. Nor by
the clock: an example's first call on a loaded machine (2 workers, browsers, servers) took
440 ms against hypothesis's default 200 ms deadline, so there is none."""


@pytest.fixture(scope="session")
def pg() -> Iterator[PgServer]:
    """One PostgreSQL server (with pgvector) for the session; `pg.new_database()` per use."""
    srv = PgServer()
    yield srv
    srv.stop()


@pytest.fixture(scope="session", autouse=True)
def _storage(request: pytest.FixtureRequest) -> Iterator[None]:
    """On the suite's PostgreSQL pass, every server stores in a fresh database of its own."""
    if storage() != "postgresql":
        yield
        return
    Server.new_database = request.getfixturevalue("pg").new_database
    yield
    Server.new_database = None


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server shared by the tests that need no special start-up; its limits are wide."""
    srv = Server(tmp_path_factory.mktemp("shared"), env=SHARED_ENV)
    srv.start()
    owner = srv.login()
    owner.put(
        "/api/settings",
        json={"limits": {"messagesPerMinute": 100_000, "messageBurst": 100_000}},
    ).raise_for_status()
    owner.close()
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def plain_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server with every default: no proxy trusted, default limits. Tests share it, so
    whatever depends on per-user counters uses a guest of its own."""
    srv = Server(tmp_path_factory.mktemp("plain"))
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def fresh_server(tmp_path: Path) -> Iterator[Server]:
    """A server of the test's own, for tests that restart it or depend on its counters."""
    srv = Server(tmp_path / "srv")
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """One real `redis-server` for the tests that need Redis; `url()` gives each a database."""
    srv = RedisServer(tmp_path_factory.mktemp("redis"))
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def owner(server: Server) -> Iterator[Api]:
    api = server.login()
    yield api
    api.close()


@pytest.fixture(autouse=True)
def _no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
