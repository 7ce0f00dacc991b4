"""The README's curl + WebSocket session, run as written (on the test server's port), twice."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.support import Server

README = Path(__file__).resolve().parents[1] / "README.md"
EVENTS = ["auth_ok", "subscribed", "message", "stream_start", "stream_chunk", "stream_end"]


def _session() -> str:
    text = README.read_text()
    section = text[text.index("## A session end to end") :]
    match = re.search(r"```sh\n(.*?)```", section, re.S)
    assert match, "the session's shell block"
    return match.group(1)


@pytest.fixture
def readme_server(tmp_path: Path) -> Server:
    srv = Server(tmp_path / "srv")
    srv.owner_key = "change-me-to-a-long-secret"
    return srv


def test_the_readme_session_runs_twice_in_a_row_and_shows_the_promised_events(
    readme_server: Server, tmp_path: Path
) -> None:
    readme_server.start()
    try:
        script = "set -euo pipefail\n" + _session().replace(
            "localhost:8000", f"localhost:{readme_server.port}"
        )
        for run in range(2):
            done = subprocess.run(
                ["bash", "-c", script],
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 0, (run, done.stdout, done.stderr)
            assert done.stderr == "", done.stderr
            kinds = [line.split(" ", 1)[0] for line in done.stdout.splitlines()]
            events = [k for k in kinds if k in (*EVENTS, "message")]
            assert events[:4] == ["auth_ok", "subscribed", "message", "stream_start"], events
            assert events[-2:] == ["stream_end", "message"], events
            assert set(events[4:-2]) == {"stream_chunk"}, events
            history = done.stdout.strip().splitlines()[-1]
            assert history.startswith('{"messages":') and history.count('"agentId":"agent_') == 1
    finally:
        readme_server.stop()
