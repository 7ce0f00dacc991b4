"""`kill -9` mid-way (issue 25, docs/FAULTS.md): a backup killed leaves no file that `restore`
would accept, and the next backup to the same file succeeds; a server killed while it writes an
import has, once restarted, nothing of that import: no channel, no message, no file, and a
sound database. The import runs on the pass's storage (SQLite, or PostgreSQL on the suite's
PostgreSQL pass)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from palaver.cli import main
from tests.channel_files import channel_named, import_file, zipped
from tests.pg_server import connect
from tests.support import Server, files_under, sql, unique, wait_until
from tests.test_backup import _env, big_installation

LONG_AGO = datetime(2022, 1, 1, tzinfo=UTC)
FILES = 4
"""Files the killed import brings; each is placed in the uploads before its rows are written."""


def test_kill_9_during_a_backup_leaves_no_file_restore_would_accept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The backup runs as its own process, killed; what follows runs the command's `main` in
    this process (the same code, without a Python start each: seconds on a busy machine)."""
    for name in ("DATABASE_URL", "PALAVER_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    data_dir = big_installation(tmp_path, 64 << 20)
    out = tmp_path / "killed.zip"
    partial = Path(f"{out}.partial")
    running = subprocess.Popen(
        [sys.executable, "-m", "palaver", "backup", "--data-dir", str(data_dir), "--out",
         str(out), "--quiet"],
        env=_env(None), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_until(
            lambda: partial.exists() and partial.stat().st_size > (4 << 20),
            timeout=120,
            what="the backup writing its upload",
        )
    finally:
        running.send_signal(signal.SIGKILL)
        running.wait()
    assert running.returncode == -signal.SIGKILL, "killed, not finished"
    assert not out.exists() and partial.exists()

    renamed = tmp_path / "renamed.zip"
    shutil.copyfile(partial, renamed)
    refusals = [
        (partial, "is an unfinished backup"),
        (out, "there is no file"),
        (renamed, "it is not a complete backup"),
    ]
    for archive, words in refusals:
        target = tmp_path / f"into-{archive.name}"
        target.mkdir()
        assert main(["restore", str(archive), "--data-dir", str(target), "--quiet"]) == 2
        assert words in capsys.readouterr().err
        assert list(target.iterdir()) == [], "the target is left as empty as it was"

    # The next backup to the same file replaces what the killed one left (smaller, to be quick).
    (data_dir / "uploads" / "2026-01" / "big.bin").write_bytes(b"kept\n" * 1000)
    assert main(["backup", "--data-dir", str(data_dir), "--out", str(out), "--quiet"]) == 0
    assert out.exists() and not list(tmp_path.glob("killed.zip.*")), "no partial file is left"
    target = tmp_path / "restored"
    assert main(["restore", str(out), "--data-dir", str(target), "--quiet"]) == 0
    assert (target / "uploads" / "2026-01" / "big.bin").read_bytes() == b"kept\n" * 1000


def big_export(name: str, count: int) -> bytes:
    """A Palaver zip export of one channel with `count` messages and `FILES` files."""
    files = [
        {"url": f"/uploads/2022-01/f{n}-0123abcd.bin", "path": f"files/f{n}.bin", "size": 65536}
        for n in range(FILES)
    ]
    messages = [
        {
            "id": f"m{i}",
            "userId": None,
            "content": f"message {i} of a long history, with some words to index {i * 7}"
            + (f" and {files[i]['url']}" if i < FILES else ""),
            "createdAt": (LONG_AGO + timedelta(milliseconds=i)).isoformat(),
            "metadata": {"importedAuthor": "Someone"},
        }
        for i in range(count)
    ]
    document = {
        "format": "palaver.channel",
        "version": 1,
        "channel": {"name": name, "type": "group"},
        "people": [],
        "files": files,
        "messages": messages,
    }
    entries: dict[str, object] = {"channel.json": json.dumps(document)}
    entries.update({f"files/f{n}.bin": os.urandom(65536) for n in range(FILES)})
    return zipped(entries)


def _writing(server: Server, wal_start: int) -> bool:
    """Whether the import's transaction has written rows it has not committed."""
    if server.database_url is not None:
        with connect(server.database_url) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND backend_xid IS NOT NULL AND query ILIKE 'INSERT INTO messages%'"
            ).fetchone()
        return row is not None and row[0] > 0
    wal = server.db_path.with_name("palaver.db-wal")
    return wal.exists() and wal.stat().st_size > wal_start + 2_000_000


def _sound(server: Server) -> None:
    """The database passes its own checks."""
    if server.database_url is not None:
        with connect(server.database_url) as conn:
            # Every table can be read through, and every index agrees with it (amcheck would
            # need an extension; a count through each table's primary key is the next best).
            tables = conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
            ).fetchall()
            for (table,) in tables:
                conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()
        return
    with closing(sqlite3.connect(server.db_path)) as db:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert db.execute("PRAGMA foreign_key_check").fetchall() == []


def test_kill_9_during_an_import_leaves_nothing_of_it_after_the_restart(tmp_path: Path) -> None:
    server = Server(tmp_path / "data")
    server.start()
    name = unique("killed-")
    data = big_export(name, 20_000)
    uploads = server.data_dir / "uploads"
    try:
        with server.login() as owner:
            owner.ok("PUT", "/api/settings", json={"limits": {"maxUploadBytes": 64 << 20}})
            before = files_under(uploads)
            wal = server.db_path.with_name("palaver.db-wal")
            wal_start = wal.stat().st_size if wal.exists() else 0
            answered: list[int] = []

            def send() -> None:
                try:
                    answered.append(import_file(owner, data, "big.zip").status_code)
                except httpx.HTTPError:
                    answered.append(0)

            sender = threading.Thread(target=send)
            sender.start()
            wait_until(
                lambda: _writing(server, wal_start) or bool(answered),
                timeout=120,
                what="the import's transaction writing",
            )
            assert not answered, "the import finished before it could be cut"
            server.kill()
            sender.join(30)
        placed = files_under(uploads) - before
        assert len(placed) == FILES, "the files were placed before the rows were written"

        server.start()
        with server.login() as owner:
            assert not channel_named(owner, name)
    finally:
        server.stop()
    assert sql(server, "SELECT count(*) FROM channels WHERE name = ?", name) == [(0,)]
    assert sql(server, "SELECT count(*) FROM messages WHERE content LIKE 'message %'") == [(0,)]
    assert sql(server, "SELECT count(*) FROM uploads") == [(0,)]
    assert files_under(uploads) == before, "the placed files are removed at the restart"
    assert files_under(server.data_dir / "imports") == set(), "and the received file"
    _sound(server)
