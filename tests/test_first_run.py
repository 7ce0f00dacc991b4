"""A newcomer's first run is quiet and helpful: the first start, login, post and knowledge
query log no WARNING or ERROR and nothing people wrote; migrations are one line; `--help`
says what every option and the environment variables that matter do."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.support import Server, history, new_agent, new_channel, post, wait_until

POSTED = "Ferdinand keeps the spare keys under the blue flowerpot"
DOCUMENT = "The greenhouse heater switches on below eleven degrees and runs on propane."
QUERY = "when does the greenhouse heater switch on"
REMEMBERED = "which flowerpot hides the spare keys"
NOISY = re.compile(r"\b(WARNING|ERROR|CRITICAL)\b|Traceback")


def test_a_first_run_logs_no_warning_and_nothing_people_wrote(tmp_path: Path) -> None:
    server = Server(tmp_path / "data")
    server.start()
    try:
        with server.login() as owner:
            agent = new_agent(owner)
            assert agent["model"] == "builtin/echo", "the default a newcomer gets"
            channel = new_channel(owner, [agent["id"]])
            post(owner, channel["id"], f"@{agent['name']} {POSTED}")
            wait_until(
                lambda: any(m.get("agentId") for m in history(owner, channel["id"])),
                timeout=30,
                what="the echo agent's reply",
            )
            files = {"file": ("greenhouse.txt", DOCUMENT.encode(), "text/plain")}
            uploaded = owner.post("/api/rag/upload", files=files, data={"agentId": agent["id"]})
            assert uploaded.status_code == 200, uploaded.text
            wait_until(
                lambda: (
                    owner.ok("GET", "/api/rag/documents", params={"agentId": agent["id"]})[
                        "documents"
                    ][0]["status"]
                    == "ready"
                ),
                timeout=60,
                what="the document's indexing",
            )
            for _ in range(2):  # the second query too: nothing is said once per query
                found = owner.ok(
                    "POST", "/api/rag/query", json={"agentId": agent["id"], "query": QUERY}
                )
                assert found["results"][0]["content"] == DOCUMENT
            memories = f"/api/agents/{agent['id']}/memories"
            owner.ok("GET", memories, params={"q": REMEMBERED})
    finally:
        server.stop()
    log = server.read_log()
    assert not [line for line in log.splitlines() if NOISY.search(line)], log
    for written in (POSTED, DOCUMENT, QUERY, REMEMBERED):
        for words in (written, written.replace(" ", "+"), written.replace(" ", "%20")):
            assert words not in log, (words, log)
    assert "alembic" not in log
    (migrated,) = [line for line in log.splitlines() if "database at revision" in line]
    assert re.search(r"INFO .*: database at revision 0*(\d+), \1 migrations applied$", migrated)

    server.start(PALAVER_DEBUG_HOOKS="0")  # as in production: the test hooks answer 404
    try:
        with server.client() as api:
            for hook in ("modules", "db-counts"):
                unknown = api.get(f"/api/debug/{hook}")
                assert unknown.status_code == 404, unknown.text
    finally:
        server.stop()
    again = server.read_log().removeprefix(log).splitlines()
    (current,) = [line for line in again if "database at revision" in line]
    assert re.search(r"INFO .*: database at revision \d{4}$", current), current


def _palaver(*args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "OWNER_KEY"}
    done = subprocess.run(
        [sys.executable, "-m", "palaver", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stderr == ""
    return done.stdout


def test_help_describes_every_option_and_the_environment_owner_key_first() -> None:
    overview = _palaver("--help")
    for command in ("serve", "reindex", "migrate-db"):
        assert re.search(rf"^\s+{command}\s+\S", overview, re.MULTILINE), overview
    assert overview.index("OWNER_KEY") < overview.index("PALAVER_DATA_DIR")

    serve = _palaver("serve", "--help")
    variables = re.findall(r"^\s+([A-Z][A-Z_]+)\s", serve, re.MULTILINE)
    assert variables[0] == "OWNER_KEY", serve
    for name in (
        "PALAVER_DATA_DIR",
        "PALAVER_HOST",
        "PALAVER_PORT",
        "DATABASE_URL",
        "REDIS_URL",
        "PALAVER_LOG_LEVEL",
        "PALAVER_TRUST_PROXY",
        "PALAVER_ALLOWED_HOSTS",
    ):
        assert name in variables, (name, serve)
    for command in ("serve", "reindex", "migrate-db"):
        lines = _palaver(command, "--help").splitlines()
        options = [i for i, line in enumerate(lines) if line.startswith("  -")]
        assert options, lines
        for i in options:
            # argparse puts the help beside the option, or below it when the option is long.
            beside = re.search(r"\S  +\S", lines[i].strip())
            below = i + 1 < len(lines) and re.match(r" {8,}\S", lines[i + 1])
            assert beside or below, (command, lines[i])
