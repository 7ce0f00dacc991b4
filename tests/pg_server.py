"""A real PostgreSQL 16 with pgvector for the suite, from the PyPI package `pgserver`.

One server runs per test session, in a temporary directory, listening only on a Unix socket;
each user of it gets a database of its own (`new_database`), so tests stay independent.
Set `PALAVER_TEST_STORAGE=postgresql` to run every `palaver serve` of the suite on it.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
import uuid
import warnings
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

STORAGE_ENV = "PALAVER_TEST_STORAGE"


def storage() -> str:
    """`sqlite` (the default) or `postgresql`: what the servers of this test run store in."""
    chosen = os.environ.get(STORAGE_ENV, "sqlite")
    if chosen not in ("sqlite", "postgresql"):
        raise ValueError(f"{STORAGE_ENV} is sqlite or postgresql, not {chosen!r}")
    return chosen


class PgServer:
    """A pgserver instance and the databases made on it."""

    def __init__(self) -> None:
        # Not under pytest's base temp: its folders are the test user's alone, and
        # PostgreSQL, when the tests run as root, runs as a user of its own.
        folder = self.folder = Path(tempfile.mkdtemp(prefix="palaver-pg-"))
        with warnings.catch_warnings():
            # platformdirs warns that XDG_RUNTIME_DIR is unset and falls back to /tmp.
            warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
            import pgserver

            # pgserver re-exports get_server without saying so (no __all__).
            self._server: Any = pgserver.get_server(  # type: ignore[attr-defined]
                folder, cleanup_mode="delete"
            )
        self.admin_url: str = self._server.get_uri()
        self._socket_dir: Path | None = None

    def new_database(self, prefix: str = "t", template: str | None = None) -> str:
        """A fresh, empty database with the `vector` extension, as a plain `postgresql://` URL
        (the Unix-socket form pgserver prints); or a copy of the database `template` names
        (which nobody may be connected to), far quicker than migrating a new one."""
        name = f"{prefix}_{uuid.uuid4().hex[:12]}"
        create = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
        if template is not None:
            create += sql.SQL(" TEMPLATE {}").format(sql.Identifier(template))
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(create)
        url: str = self._server.get_uri(name)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        return url

    def restart(self, down_seconds: float = 0.0) -> None:
        """A database restart under load, for the fault tests: `halt`, `down_seconds`, then
        `resume`. Never for the suite's shared server, which every other test is using."""
        self.halt()
        time.sleep(down_seconds)
        self.resume()

    def halt(self) -> None:
        """Stop as an operator's `pg_ctl stop -m fast` does: every session is ended at once,
        transactions in flight roll back, and connecting is refused until `resume`."""
        import pgserver

        server = self._server
        self._socket_dir = server.get_postmaster_info().socket_dir
        pgserver.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=server.pgdata, user=server.system_user)

    def resume(self) -> None:
        """Start again on the socket it had, once ready for connections."""
        import pgserver

        server = self._server
        options = ["-o", '-h ""', "-o", f"-k {self._socket_dir}", "-l", str(server.log)]
        pgserver.pg_ctl(["-w", *options, "start"], pgdata=server.pgdata, user=server.system_user)

    def stop(self) -> None:
        """Stop the server and delete its folder."""
        self._server.cleanup()


def connect(url: str) -> psycopg.Connection[tuple[Any, ...]]:
    """A connection as an operator's shell would open one, reading and writing times in UTC
    (the service stores UTC)."""
    return psycopg.connect(url, options="-c TimeZone=UTC")


def as_sqlite(row: Sequence[Any]) -> tuple[Any, ...]:
    """A row as SQLite answers it, for tests written against SQLite's values: times as the
    text the service writes there, JSON as its text, booleans as integers."""
    out: list[Any] = []
    for value in row:
        if isinstance(value, datetime):
            value = value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
        elif isinstance(value, dict | list):
            value = json.dumps(value, ensure_ascii=False)
        elif isinstance(value, bool):
            value = int(value)
        out.append(value)
    return tuple(out)
