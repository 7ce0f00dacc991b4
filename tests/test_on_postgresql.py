"""The API suite's second pass: chosen modules again, every server of theirs on PostgreSQL.

The whole suite runs on PostgreSQL with `PALAVER_TEST_STORAGE=postgresql python -m pytest`;
the default run re-runs these modules in a pytest of their own with that setting (each server
a fresh database on one pgserver), so that both storages are tested on every run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.pg_server import STORAGE_ENV, storage

ROOT = Path(__file__).resolve().parent.parent
MODULES = (
    "tests/test_messages.py",
    "tests/test_history_after.py",
    "tests/test_first_screen.py",
    "tests/test_message_changes.py",
    "tests/agents/test_message_changes.py",
    "tests/test_channels.py",
    "tests/test_agents.py",
    "tests/test_guests.py",
    "tests/test_memory.py",
    "tests/test_schedules_api.py",
    "tests/agents/test_chains.py",
    "tests/agents/test_schedules.py",
    "tests/knowledge/test_api.py",
    "tests/test_search.py",
    "tests/test_read_state.py",
    "tests/test_people_mentions.py",
    "tests/test_channel_list_live.py",
    "tests/test_audit.py",
    "tests/agents/test_usage.py",
    "tests/test_channel_export.py",
    "tests/test_channel_import.py",
)
"""Messages (with edits, deletes, reactions and threads: issue 22), channels, agents, guests,
memory, chains, schedules, knowledge, issue 23's message search, read state, mentions of
people and live channel list, issue 24's audit log, usage ledger and budgets, and issue 25's
channel export and import, as issue 14 asks of the second pass; the knowledge tests that rank
by full text are skipped there."""


GROUPS = 3
"""The modules run in this many pytests of their own, as separate tests, so that xdist's
workers share them and no single test bounds the suite's time."""


@pytest.mark.parametrize("group", range(GROUPS))
def test_the_chosen_api_modules_pass_on_postgresql(group: int) -> None:
    if storage() == "postgresql":
        pytest.skip("this run is the PostgreSQL pass already, these modules and all")
    env = {**os.environ, STORAGE_ENV: "postgresql"}
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-x",
            *MODULES[group::GROUPS],
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert run.returncode == 0, f"{run.stdout[-8000:]}\n{run.stderr[-4000:]}"
