"""`palaver serve`: where it listens and keeps its data, and that it never runs without a key."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from palaver.config import Config
from tests.support import OWNER_KEY, free_port, wait_until


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "OWNER_KEY" and not k.startswith("PALAVER_")}
    env.update(HF_HUB_OFFLINE="1", PALAVER_DEBUG_BLOCKING="1", **extra)
    return env


def _serve(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "palaver", "serve", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("owner_key", [None, "", "   "])
def test_serve_without_owner_key_exits_with_status_2_and_one_line(
    tmp_path: Path, owner_key: str | None
) -> None:
    env = _env() if owner_key is None else _env(OWNER_KEY=owner_key)
    done = _serve("--port", str(free_port()), env=env, cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "OWNER_KEY" in lines[0], done.stderr
    assert done.stdout == ""
    assert not (tmp_path / "data").exists(), "it must not prepare anything without a key"


@pytest.mark.parametrize("owner_key", ["short", "elevenchars", "  eleven    "])
def test_serve_refuses_an_owner_key_shorter_than_12_characters(
    tmp_path: Path, owner_key: str
) -> None:
    done = _serve("--port", str(free_port()), env=_env(OWNER_KEY=owner_key), cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "OWNER_KEY" in lines[0] and "12 characters" in lines[0]
    assert owner_key.strip() not in done.stderr, "the key itself is never printed"
    assert not (tmp_path / "data").exists()


def test_serve_with_an_invalid_port_exits_with_status_2(tmp_path: Path) -> None:
    done = _serve(env=_env(OWNER_KEY=OWNER_KEY, PALAVER_PORT="eighty"), cwd=tmp_path)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "port" in done.stderr


@pytest.mark.parametrize(
    "otel",
    [
        {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
        {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"},
        {"OTEL_TRACES_EXPORTER": "zipkin"},
    ],
)
def test_serve_asked_for_traces_it_cannot_send_exits_with_status_2(
    tmp_path: Path, otel: dict[str, str]
) -> None:
    env = _env(OWNER_KEY=OWNER_KEY, OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9", **otel)
    done = _serve("--port", str(free_port()), env=env, cwd=tmp_path)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "http/protobuf" in done.stderr and next(iter(otel.values())) in done.stderr


@dataclass
class Running:
    proc: subprocess.Popen[bytes]
    host: str
    port: int
    data_dir: Path
    log: Path

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


def _answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/api/me", timeout=1).status_code == 401
    except httpx.TransportError:
        return False


def _up_or_dead(run: Running) -> bool:
    return _answers(run.url) or run.proc.poll() is not None


@pytest.fixture(scope="module")
def started(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Running]]:
    """Servers started at once (start-up is the slow part): by flags, by environment, and on
    every address."""
    root = tmp_path_factory.mktemp("cli")
    ports = [free_port(), free_port(), free_port()]
    plans = {
        "flags": (
            ["--host", "127.0.0.2", "--port", str(ports[0]), "--data-dir", str(root / "by-flag")],
            _env(OWNER_KEY=OWNER_KEY),
            "127.0.0.2",
            ports[0],
            root / "by-flag",
        ),
        "env": (
            [],
            _env(
                OWNER_KEY=OWNER_KEY,
                PALAVER_HOST="127.0.0.3",
                PALAVER_PORT=str(ports[1]),
                PALAVER_DATA_DIR=str(root / "by-env"),
            ),
            "127.0.0.3",
            ports[1],
            root / "by-env",
        ),
        "everywhere": (
            ["--host", "0.0.0.0", "--port", str(ports[2]), "--data-dir", str(root / "all")],
            _env(OWNER_KEY=OWNER_KEY),
            "127.0.0.1",
            ports[2],
            root / "all",
        ),
    }
    running: dict[str, Running] = {}
    try:
        for name, (args, env, host, port, data_dir) in plans.items():
            log = root / f"{name}.log"
            with log.open("wb") as out:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "palaver", "serve", *args],
                    env=env,
                    cwd=root,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            running[name] = Running(proc, host, port, data_dir, log)
        wait_until(
            lambda: all(_up_or_dead(run) for run in running.values()),
            timeout=90,
            what="start-up",
        )
        for run in running.values():
            assert run.proc.poll() is None, run.log.read_text()
        yield running
    finally:
        for run in running.values():
            run.proc.terminate()
            run.proc.wait(20)
            assert "Traceback" not in run.log.read_text(), run.log.read_text()


@pytest.mark.parametrize("how", ["flags", "env"])
def test_once_listening_it_says_where_to_open_it_and_how_to_log_in(
    started: dict[str, Running], how: str
) -> None:
    run = started[how]
    log = run.log.read_text()
    line = next(line for line in log.splitlines() if line.startswith("Palaver is ready"))
    assert f"open {run.url} in a browser" in line
    assert "OWNER_KEY" in line and f"{run.url}/api/docs" in line
    assert log.index("Application startup complete") < log.index("Palaver is ready")


def test_serving_on_every_address_logs_which_hosts_are_accepted(
    started: dict[str, Running],
) -> None:
    log = started["everywhere"].log.read_text()
    assert "127.0.0.1, [::1], localhost" in log and "PALAVER_ALLOWED_HOSTS" in log
    assert _answers(started["everywhere"].url)


@pytest.mark.parametrize("how", ["flags", "env"])
def test_host_port_and_data_dir_are_honoured(started: dict[str, Running], how: str) -> None:
    run = started[how]
    assert _answers(run.url)
    assert not _answers(f"http://127.0.0.1:{run.port}"), "it listens on the address it was given"
    assert (run.data_dir / "palaver.db").is_file()


def test_defaults_are_loopback_port_8000_and_data_under_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("PALAVER_HOST", "PALAVER_PORT", "PALAVER_DATA_DIR", "DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    config = Config(OWNER_KEY=OWNER_KEY)
    assert (config.host, config.port) == ("127.0.0.1", 8000)
    assert config.data_dir == tmp_path.resolve() / "data"
    assert config.db_url.endswith(f"{tmp_path.resolve() / 'data' / 'palaver.db'}")


@pytest.mark.parametrize(
    ("value", "origins"),
    [
        ('["https://a.example", "https://b.example"]', ["https://a.example", "https://b.example"]),
        ("https://a.example, https://b.example/", ["https://a.example", "https://b.example"]),
        ("", []),
    ],
)
def test_allowed_origins_take_a_json_list_or_a_comma_separated_one(
    monkeypatch: pytest.MonkeyPatch, value: str, origins: list[str]
) -> None:
    monkeypatch.setenv("PALAVER_ALLOWED_ORIGINS", value)
    assert Config(OWNER_KEY=OWNER_KEY).allowed_origins == origins
