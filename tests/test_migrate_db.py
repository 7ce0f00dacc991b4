"""`palaver migrate-db`: a SQLite installation that a real `palaver serve` filled is copied into
an empty PostgreSQL database, and a `palaver serve` on PostgreSQL then serves the same data."""

from __future__ import annotations

import io
import os
import shutil
import sqlite3
import subprocess
import sys
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Boolean, Column, Date, LargeBinary, String

from palaver.progress import ProgressBar
from palaver.store import migrate
from palaver.store.checksum import TableSum
from palaver.store.tables.base import JsonValue, UtcDateTime
from tests.pg_server import PgServer, connect
from tests.support import Api, Guest, Server, history, new_agent, new_channel, post, sql

BIKES = "# Bicycle care\n\n## Chain\n\nOil the chain every 300 kilometres.\n"
LEASE = "The tenant pays the rent on the first day of each month.\n"


def migrate_db(*args: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    return subprocess.run(
        [sys.executable, "-m", "palaver", "migrate-db", "--data-dir", str(data_dir), *args],
        env={**env, "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )


@dataclass
class Installation:
    """What the SQLite installation held, as its API showed it, before the copy."""

    data_dir: Path
    agent_id: str
    channel_id: str
    guest_key: str
    guest_token: str
    upload_url: str
    seen: dict[str, Any]


def what_the_api_shows(owner: Api, agent_id: str, channel_id: str) -> dict[str, Any]:
    main = history(owner, channel_id)
    return {
        "history": main,
        "threads": [history(owner, channel_id, threadId=m["id"]) for m in main if m["thread"]],
        "versions": [
            owner.ok("GET", f"/api/messages/{m['id']}/versions") for m in main if m["editedAt"]
        ],
        "agents": owner.ok("GET", "/api/agents")["agents"],
        "channels": owner.ok("GET", "/api/channels")["channels"],
        "documents": owner.ok("GET", "/api/rag/documents", params={"agentId": agent_id}),
        "memories": owner.ok("GET", f"/api/agents/{agent_id}/memories"),
        "schedules": owner.ok("GET", "/api/schedules")["schedules"],
        "search": [
            r["message"]["id"]
            for q in ("welcome", "notes", "from:@Owner is:thread")
            for r in owner.ok("GET", "/api/search", params={"q": q})["results"]
        ],
        "guests": owner.ok("GET", "/api/guests")["guests"],
        "settings": owner.ok("GET", "/api/settings"),
    }


@pytest.fixture(scope="module")
def installation(tmp_path_factory: pytest.TempPathFactory) -> Installation:
    """A data dir filled through the API of a real server on SQLite, then stopped."""
    data_dir = tmp_path_factory.mktemp("sqlite-install") / "data"
    server = Server(data_dir, env={"DATABASE_URL": f"sqlite:///{data_dir / 'palaver.db'}"})
    server.start()
    try:
        owner = server.login()
        agent = new_agent(owner)
        guest = Guest(server, owner)
        channel = new_channel(owner, [agent["id"]], [guest.id])
        upload = owner.post("/api/upload", files={"file": ("notes.txt", b"plain notes\n")})
        upload_url = upload.json()["url"]
        post(owner, channel["id"], f"Notes are at {upload_url}")
        hello = post(guest.api, channel["id"], "Helo from the guest")
        guest.api.ok("PATCH", f"/api/messages/{hello}", json={"content": "Hello from the guest"})
        owner.ok("POST", f"/api/messages/{hello}/reactions", json={"emoji": "👋"})
        post(owner, channel["id"], f"Welcome, @{guest.user['name']}", threadId=hello)
        for name, body in (("bikes.md", BIKES), ("lease.txt", LEASE)):
            response = owner.post(
                "/api/rag/upload",
                files={"file": (name, body.encode(), "text/plain")},
                data={"agentId": agent["id"]},
            )
            assert response.status_code == 200, response.text
        memories = f"/api/agents/{agent['id']}/memories"
        owner.ok("POST", memories, json={"content": "Reports go out on Mondays."})
        colour = owner.ok("POST", memories, json={"content": "The owner's cat is called Mio."})
        correction = {"content": "The owner's cat is called Miso."}
        owner.ok("PUT", f"{memories}/{colour['memory']['id']}", json=correction)
        owner.ok("PUT", "/api/settings", json={"limits": {"messagesPerMinute": 500}})
        schedule = {"agentId": agent["id"], "channelId": channel["id"], "prompt": "Report"}
        owner.ok("POST", "/api/schedules", json={**schedule, "schedule": "0 9 * * 1"})
        seen = what_the_api_shows(owner, agent["id"], channel["id"])
        assert seen["documents"]["documents"] and seen["memories"]["memories"]
        assert seen["threads"] and len(seen["versions"][0]["versions"]) == 2
        assert len(seen["search"]) == 3, "the copied messages are searchable on PostgreSQL"
        token = guest.api.token
        guest.close()
        owner.close()
    finally:
        server.stop()
    return Installation(data_dir, agent["id"], channel["id"], guest.key, token, upload_url, seen)


@pytest.fixture(scope="module")
def migrated(installation: Installation, pg: PgServer) -> tuple[str, str]:
    """The PostgreSQL URL the installation was copied into, and what migrate-db printed."""
    url = pg.new_database("migrated")
    done = migrate_db("--to", url, "--quiet", data_dir=installation.data_dir)
    assert done.returncode == 0, done.stdout + done.stderr
    return url, done.stdout


def test_every_table_is_copied_and_verified_by_count_and_checksum(
    migrated: tuple[str, str],
) -> None:
    _, printed = migrated
    lines = printed.splitlines()
    for table in ("users", "sessions", "agents", "messages", "documents", "chunks", "vectors",
                  "memories", "memory_versions", "schedules", "uploads", "upload_references",
                  "settings", "channel_members", "message_versions",
                  "message_reactions", "read_states", "message_mentions"):  # fmt: skip
        [line] = [line for line in lines if line.split()[:1] == [table]]
        assert line.endswith(" ok") and " 0 rows" not in line, line
    assert lines[-1].startswith("Done: ") and "verified" in lines[-1]
    assert "Not copied, SQLite's own:" in printed, "the per-agent FTS5 tables stay behind"
    assert "Sequence: chunks.seq continues at" in printed
    assert "Uploads are not in the database: they stay on disk" in printed


def test_a_server_on_postgresql_serves_the_copied_data(
    installation: Installation, migrated: tuple[str, str], tmp_path: Path
) -> None:
    url, _ = migrated
    server = Server(installation.data_dir, env={"DATABASE_URL": url})
    server.start()
    try:
        owner = server.login()
        seen = what_the_api_shows(owner, installation.agent_id, installation.channel_id)
        assert seen == installation.seen
        assert owner.get(installation.upload_url).content == b"plain notes\n"
        found = owner.ok(
            "POST",
            "/api/rag/query",
            json={"agentId": installation.agent_id, "query": "How often is the chain oiled?"},
        )["results"][0]
        assert found["documentName"] == "bikes.md", "copied chunks are searchable"
        assert (found["textRank"], found["vectorRank"]) == (1, 1), found
        with server.client(cookies={"session": installation.guest_token}) as guest:
            assert history(guest, installation.channel_id) == installation.seen["history"]
        with server.login(installation.guest_key) as guest:
            post(guest, installation.channel_id, "Still here after the move")
        response = owner.post(
            "/api/rag/upload",
            files={"file": ("new.txt", b"A third document, stored after the move.\n")},
            data={"agentId": installation.agent_id},
        )
        assert response.status_code == 200, "new chunks get sequence numbers past the copied"
        assert sql(server, "SELECT count(*) FROM chunks") == [
            (sum(d["chunks"] for d in owner.ok(
                "GET", "/api/rag/documents", params={"agentId": installation.agent_id}
            )["documents"]),)
        ]  # fmt: skip
        owner.close()
    finally:
        server.stop()


def test_a_second_copy_into_the_now_full_database_is_refused_with_status_2(
    installation: Installation, migrated: tuple[str, str]
) -> None:
    url, _ = migrated
    done = migrate_db("--to", url, data_dir=installation.data_dir)
    assert done.returncode == 2
    assert "is not empty (table agents has rows)" in done.stderr
    assert "Done" not in done.stdout


@pytest.mark.parametrize(
    ("target", "said"),
    [
        ("mysql://root:hunter2-secret@localhost/palaver", "--to: a database URL starts with"),
        ("sqlite:///elsewhere.db", "--to takes a PostgreSQL URL"),
        (
            "postgresql://palaver:hunter2-secret@127.0.0.1:1/palaver",
            "cannot use postgresql://palaver:***@127.0.0.1:1/palaver",
        ),
    ],
)
def test_a_bad_target_url_gets_a_clear_error_without_its_password(
    installation: Installation, target: str, said: str
) -> None:
    done = migrate_db("--to", target, data_dir=installation.data_dir)
    assert done.returncode == 2
    assert said in done.stderr, done.stderr
    assert "hunter2-secret" not in done.stdout + done.stderr
    assert "Traceback" not in done.stderr


def test_tables_and_columns_only_one_side_has_are_left_where_they_are_and_named(
    installation: Installation, pg: PgServer, tmp_path: Path
) -> None:
    """What only PostgreSQL has is named and left to it: the search index's columns (filled
    from the copied rows after the copy) and a table of its own, which stays as it was. What
    only SQLite has (an old column, a table of its own) is named as not copied."""
    copy = tmp_path / "copy.db"
    shutil.copy(installation.data_dir / "palaver.db", copy)
    with closing(sqlite3.connect(copy)) as lite, lite:
        lite.execute("ALTER TABLE messages ADD COLUMN legacy TEXT")
        lite.execute("CREATE TABLE old_notes (note TEXT)")
        lite.execute("INSERT INTO old_notes VALUES ('kept in SQLite')")
    url = pg.new_database("searchy")
    migrate.upgrade(url)
    with connect(url) as conn:
        conn.execute("CREATE TABLE search_terms (term text PRIMARY KEY, hits integer)")
        conn.commit()

    done = migrate_db("--from", f"sqlite:///{copy}", "--to", url, "--quiet", data_dir=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"Copying {copy} into ")
    assert "Not copied, only in SQLite: old_notes, messages.legacy." in lines
    assert (
        "Only in PostgreSQL, made by its migrations: search_terms, vectors.embedding, chunks.tsv."
        in lines
    )
    assert lines[-1].startswith("Done: ")
    with connect(url) as conn:
        found = conn.execute(
            "SELECT count(*) FROM chunks WHERE tsv @@ to_tsquery('english', 'kilometres')"
        ).fetchone()
        unfilled = conn.execute("SELECT count(*) FROM vectors WHERE embedding IS NULL").fetchone()
    assert (found, unfilled) == ((1,), (0,)), done.stdout


def test_a_table_checksum_is_the_same_for_sqlite_text_and_postgresql_values() -> None:
    columns: list[Column[Any]] = [
        Column("at", UtcDateTime),
        Column("data", JsonValue),
        Column("active", Boolean),
        Column("blob", LargeBinary),
        Column("name", String),
        Column("day", Date),
    ]
    moment = datetime(2026, 11, 23, 18, 0, 0, 123456, tzinfo=UTC)
    as_sqlite = [
        (
            "2026-11-23 18:00:00.123456",
            '{"b": [1, 2], "a": "é"}',
            1,
            b"\x00\x01",
            "x",
            "2026-11-23",
        ),
        ("2026-11-23 18:00:01.000000", "[]", 0, b"", "y", date(2026, 11, 1)),
    ]
    as_postgresql = [
        (moment + timedelta(seconds=0.876544), [], False, memoryview(b""), "y",
         date(2026, 11, 1)),
        (moment.astimezone(timezone(timedelta(hours=2))), {"a": "é", "b": [1, 2]}, True,
         memoryview(b"\x00\x01"), "x", date(2026, 11, 23)),
    ]  # fmt: skip
    sqlite_sum, postgresql_sum = TableSum(columns), TableSum(columns)
    sqlite_sum.add(as_sqlite)
    postgresql_sum.add(as_postgresql)
    assert (sqlite_sum.rows, sqlite_sum.hexdigest) == (2, postgresql_sum.hexdigest)

    changed = TableSum(columns)
    changed.add([as_sqlite[0], (*as_sqlite[1][:4], "z", as_sqlite[1][5])])
    assert changed.hexdigest != sqlite_sum.hexdigest
    doubled = TableSum(columns)
    doubled.add([as_sqlite[0], as_sqlite[0]])
    assert doubled.hexdigest != TableSum(columns).hexdigest, "equal rows do not cancel out"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_bar_redraws_a_few_times_a_second_and_only_on_a_terminal() -> None:
    screen = Terminal()
    bar = ProgressBar(screen)
    bar.begin(10_000)
    for done in range(0, 10_000, 10):
        bar.update(done, "chunks")
    assert screen.getvalue().count("\r") == 1, "a thousand updates in a moment draw once"
    assert "chunks" in screen.getvalue() and "0/10,000 rows" in screen.getvalue()
    bar.close()
    assert screen.getvalue().endswith("\r")

    for stream, enabled in ((io.StringIO(), True), (Terminal(), False)):
        quiet = ProgressBar(stream, enabled=enabled)
        quiet.begin(10)
        quiet.update(5, "chunks")
        quiet.close()
        assert stream.getvalue() == ""


def test_a_target_from_a_newer_version_is_refused_with_status_2(
    installation: Installation, pg: PgServer
) -> None:
    url = pg.new_database("newer")
    with connect(url) as conn:
        conn.execute("CREATE TABLE alembic_version (version_num varchar(32) PRIMARY KEY)")
        conn.execute("INSERT INTO alembic_version VALUES ('0099_from_the_future')")
        conn.commit()
    done = migrate_db("--to", url, data_dir=installation.data_dir)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "to this version's schema: Can't locate revision" in done.stderr
    assert "Traceback" not in done.stderr


def test_without_a_sqlite_database_there_is_nothing_to_copy(tmp_path: Path) -> None:
    done = migrate_db("--to", "postgresql://u@/db?host=/nowhere", data_dir=tmp_path)
    assert done.returncode == 2 and "there is no SQLite database at" in done.stderr
