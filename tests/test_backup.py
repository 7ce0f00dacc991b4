"""`palaver backup` and `palaver restore`: a real `palaver serve` is backed up while two writers
post and an agent's reply streams; the backup restores into a fresh data dir and into a fresh
PostgreSQL database, and servers on both serve what was backed up; a PostgreSQL installation
restores into SQLite. Every table is compared by rows and checksum, computed here from the
databases themselves, and every upload byte for byte. Damaged, forged, unfinished backups and
targets that are not empty are refused and leave the target as they found it (a backup killed
mid-way: test_faults_kill.py)."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import sqlite3
import struct
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Column, MetaData, Table, create_engine, func, select

from palaver.store import migrate, search_backlog
from palaver.store.archive import MANIFEST, Manifest
from palaver.store.backup_command import _rotate
from palaver.store.checksum import TableSum
from palaver.store.copy import first_table_with_rows, head_revision
from palaver.store.tables import metadata as declared
from palaver.store.urls import sync_url
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.script import text
from tests.pg_server import PgServer, connect
from tests.support import (
    Api,
    Guest,
    Server,
    Ws,
    files_under,
    history,
    new_agent,
    new_channel,
    post,
    wait_until,
)

BIKES = "# Bicycle care\n\n## Chain\n\nOil the chain every 300 kilometres.\n"
NOTES = b"plain notes\n" * 1000
PHOTO = bytes(range(256)) * 300


def palaver(
    *args: str, database_url: str | None = None, **popen: Any
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "palaver", *args],
        env=_env(database_url),
        capture_output=True,
        text=True,
        timeout=300,
        **popen,
    )


def _env(database_url: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "PALAVER_DATA_DIR")}
    if database_url is not None:
        env["DATABASE_URL"] = database_url
    return {**env, "HF_HUB_OFFLINE": "1"}


def sqlite_url(data_dir: Path) -> str:
    return f"sqlite:///{data_dir / 'palaver.db'}"


def table_sums(url: str, manifest: Manifest) -> dict[str, tuple[int, str]]:
    """Each table of the manifest as the database at `url` holds it: rows and checksum over the
    manifest's columns, typed as the app declares them. Computed here, not by the command."""
    engine = create_engine(sync_url(url), connect_args=_connect_args(url))
    found: dict[str, tuple[int, str]] = {}
    try:
        with engine.connect() as conn:
            for part in manifest.tables:
                own = declared.tables[part.name]
                table = Table(
                    part.name,
                    MetaData(),
                    *(Column(c.name, own.c[c.name].type) for c in part.columns),
                )
                total = TableSum(list(table.columns))
                total.add(conn.execute(select(table)))
                counted = conn.execute(select(func.count()).select_from(table)).scalar_one()
                assert counted == total.rows
                found[part.name] = (total.rows, total.hexdigest)
    finally:
        engine.dispose()
    return found


def _connect_args(url: str) -> dict[str, str]:
    return {"options": "-c TimeZone=UTC"} if url.startswith("postgresql") else {}


def manifest_of(archive: Path) -> Manifest:
    with zipfile.ZipFile(archive) as zf:
        return Manifest.from_json(zf.read(MANIFEST))


def expected_sums(manifest: Manifest) -> dict[str, tuple[int, str]]:
    return {t.name: (t.rows, t.checksum) for t in manifest.tables}


def uploads_of(data_dir: Path) -> dict[str, bytes]:
    folder = data_dir / "uploads"
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in files_under(folder)}


def what_the_api_shows(owner: Api, agent_id: str, channel_id: str) -> dict[str, Any]:
    return {
        "history": history(owner, channel_id, limit=200),
        "agents": owner.ok("GET", "/api/agents")["agents"],
        "channels": owner.ok("GET", "/api/channels")["channels"],
        "documents": owner.ok("GET", "/api/rag/documents", params={"agentId": agent_id}),
        "memories": owner.ok("GET", f"/api/agents/{agent_id}/memories"),
        "schedules": owner.ok("GET", "/api/schedules")["schedules"],
        "search": [
            r["message"]["id"]
            for q in ("welcome", "notes", "writer")
            for r in owner.ok("GET", "/api/search", params={"q": q, "limit": 50})["results"]
        ],
        "guests": owner.ok("GET", "/api/guests")["guests"],
        "settings": owner.ok("GET", "/api/settings"),
        "knowledge": [
            (r["documentName"], r["textRank"], r["vectorRank"])
            for r in owner.ok(
                "POST",
                "/api/rag/query",
                json={"agentId": agent_id, "query": "How often is the chain oiled?"},
            )["results"][:1]
        ],
    }


@dataclass
class Installation:
    server: Server
    model: FakeOpenAI
    agent: dict[str, Any]
    channel_id: str
    guest: Guest
    upload_urls: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def installation(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installation]:
    """A running server on SQLite, filled through its API, with an agent on a fake model."""
    data_dir = tmp_path_factory.mktemp("live") / "data"
    server = Server(data_dir, env={"DATABASE_URL": sqlite_url(data_dir)})
    server.start()
    with FakeOpenAI() as model:
        try:
            owner = server.login()
            owner.ok("PUT", "/api/settings", json={"providers": {"oai": {
                "type": "openai", "baseUrl": f"{model.url}/v1"}}})  # fmt: skip
            owner.ok("PUT", "/api/settings", json={"limits": {
                "messagesPerMinute": 100_000, "messageBurst": 100_000}})  # fmt: skip
            agent = new_agent(owner, model="oai/gpt-test")
            guest = Guest(server, owner)
            channel = new_channel(owner, [agent["id"]], [guest.id])
            urls = [
                owner.post("/api/upload", files={"file": (name, body)}).json()["url"]
                for name, body in (("notes.txt", NOTES), ("photo.png", PHOTO))
            ]
            post(owner, channel["id"], f"Notes are at {urls[0]} and a photo at {urls[1]}")
            hello = post(guest.api, channel["id"], "Helo from the guest")
            guest.api.ok("PATCH", f"/api/messages/{hello}", json={"content": "Hello, guest"})
            owner.ok("POST", f"/api/messages/{hello}/reactions", json={"emoji": "👋"})
            post(owner, channel["id"], f"Welcome, @{guest.user['name']}", threadId=hello)
            response = owner.post(
                "/api/rag/upload",
                files={"file": ("bikes.md", BIKES.encode(), "text/plain")},
                data={"agentId": agent["id"]},
            )
            assert response.status_code == 200, response.text
            memories = f"/api/agents/{agent['id']}/memories"
            made = owner.ok("POST", memories, json={"content": "The owner's cat is called Mio."})
            fixed = {"content": "The owner's cat is called Miso."}
            owner.ok("PUT", f"{memories}/{made['memory']['id']}", json=fixed)
            model.enqueue(text("Sure", ", noted."))
            post(owner, channel["id"], f"@{agent['name']} note this")
            wait_until(
                lambda: any(m["agentId"] for m in history(owner, channel["id"])),
                timeout=30,
                what="the agent's first reply",
            )
            schedule = {"agentId": agent["id"], "channelId": channel["id"], "prompt": "Report"}
            owner.ok("POST", "/api/schedules", json={**schedule, "schedule": "0 9 * * 1"})
            owner.close()
            yield Installation(server, model, agent, channel["id"], guest, urls)
            guest.close()
        finally:
            server.stop()


@dataclass
class Backup:
    path: Path
    manifest: Manifest
    source_dir: Path
    agent_id: str
    channel_id: str
    upload_urls: list[str]
    posted: dict[str, int]
    """How many posts each writer had made when it was stopped, after the backup ended."""


class Writer(threading.Thread):
    """Posts `<name> <n>` into the channel, n = 0, 1, 2, ..., until told to stop."""

    def __init__(self, api: Api, channel_id: str, name: str) -> None:
        super().__init__(daemon=True)
        self.api, self.channel_id, self.name = api, channel_id, name
        self.posted = 0
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                post(self.api, self.channel_id, f"{self.name} {self.posted}")
                self.posted += 1
        except BaseException as exc:
            self.error = exc


@pytest.fixture(scope="module")
def backed_up(installation: Installation, tmp_path_factory: pytest.TempPathFactory) -> Backup:
    """`palaver backup` of the running server, while two writers post and a reply streams."""
    server, channel_id = installation.server, installation.channel_id
    out = tmp_path_factory.mktemp("backups") / "live.zip"
    pieces = [f" word{n}" for n in range(600)]
    installation.model.enqueue(text(*pieces, delay=0.05))
    owner = server.login()
    with Ws(server, owner.token) as ws:
        ws.subscribe(channel_id)
        post(owner, channel_id, f"@{installation.agent['name']} tell me a long story")
        reply_id = ws.expect("stream_start", timeout=30)["data"]["messageId"]
        ws.expect("stream_chunk")
        writers = [
            Writer(server.login(), channel_id, "writer-owner"),
            Writer(installation.guest.api, channel_id, "writer-guest"),
        ]
        for writer in writers:
            writer.start()
        wait_until(lambda: all(w.posted >= 3 for w in writers), what="both writers posting")
        running = subprocess.Popen(
            [sys.executable, "-m", "palaver", "backup", "--data-dir", str(server.data_dir),
             "--out", str(out), "--quiet"],
            env=_env(None), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        chunks_during = 0
        while running.poll() is None:
            try:
                event = ws.expect_any(("stream_chunk", "stream_end"), timeout=0.5)
            except TimeoutError:
                continue
            assert event["type"] == "stream_chunk", "the reply ended before the backup did"
            chunks_during += 1
        stdout, stderr = running.communicate()
        ws.expect("stream_chunk")  # still streaming once the backup is done
        for writer in writers:
            writer.stop.set()
        for writer in writers:
            writer.join(30)
            assert writer.error is None, writer.error
        writers[0].api.close()
        owner.ok("POST", f"/api/messages/{reply_id}/cancel")
        ws.expect("stream_end", messageId=reply_id, timeout=30)
    owner.close()
    assert running.returncode == 0, stdout + stderr
    assert chunks_during > 0, "the reply streamed while the backup ran"
    assert out.exists() and not Path(f"{out}.partial").exists()
    assert not list(out.parent.glob("*.partial")), "nothing but the backup is left beside it"
    return Backup(
        path=out,
        manifest=manifest_of(out),
        source_dir=server.data_dir,
        agent_id=installation.agent["id"],
        channel_id=channel_id,
        upload_urls=installation.upload_urls,
        posted={w.name: w.posted for w in writers},
    )


@dataclass
class Restored:
    data_dir: Path
    database_url: str
    printed: str


@pytest.fixture(scope="module")
def restored_sqlite(backed_up: Backup, tmp_path_factory: pytest.TempPathFactory) -> Restored:
    data_dir = tmp_path_factory.mktemp("restored-sqlite") / "data"
    done = palaver("restore", str(backed_up.path), "--data-dir", str(data_dir), "--quiet")
    assert done.returncode == 0, done.stdout + done.stderr
    return Restored(data_dir, sqlite_url(data_dir), done.stdout)


@pytest.fixture(scope="module")
def restored_pg(
    backed_up: Backup, pg: PgServer, tmp_path_factory: pytest.TempPathFactory
) -> Restored:
    data_dir = tmp_path_factory.mktemp("restored-pg") / "data"
    url = pg.new_database("restored")
    done = palaver(
        "restore", str(backed_up.path), "--data-dir", str(data_dir), "--quiet", database_url=url
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return Restored(data_dir, url, done.stdout)


def test_the_backup_is_one_snapshot_taken_while_the_writers_went_on(
    backed_up: Backup, restored_sqlite: Restored
) -> None:
    """Each writer's posts in the backup are a prefix of what it posted (no post without the
    one before it), and both went on posting after the snapshot."""
    with closing(sqlite3.connect(restored_sqlite.data_dir / "palaver.db")) as db:
        contents = [row[0] for row in db.execute("SELECT content FROM messages")]
    for name, posted in backed_up.posted.items():
        numbers = sorted(int(c.split()[1]) for c in contents if c.startswith(f"{name} "))
        assert numbers == list(range(len(numbers))), f"{name}'s posts have a gap"
        assert 3 <= len(numbers) < posted, (name, len(numbers), posted)
    counted = {t.name: t.rows for t in backed_up.manifest.tables}
    assert counted["messages"] == len(contents)


def test_restore_into_a_fresh_data_dir_gives_every_table_and_file_back(
    backed_up: Backup, restored_sqlite: Restored
) -> None:
    manifest = backed_up.manifest
    assert table_sums(restored_sqlite.database_url, manifest) == expected_sums(manifest)
    tables = {t.name: t.rows for t in manifest.tables}
    for name in ("users", "sessions", "agents", "channels", "messages", "message_versions",
                 "message_reactions", "documents", "chunks", "vectors", "memories",
                 "memory_versions", "schedules", "uploads", "upload_references", "settings",
                 "usage_ledger", "read_states"):  # fmt: skip
        assert tables[name] > 0, f"{name} has rows in the backup"
    assert uploads_of(restored_sqlite.data_dir) == uploads_of(backed_up.source_dir)
    assert sorted(f.path for f in manifest.uploads) == sorted(uploads_of(backed_up.source_dir))
    printed = restored_sqlite.printed.splitlines()
    for part in manifest.tables:
        [line] = [line for line in printed if line.split()[:1] == [part.name]]
        assert line.endswith(" ok") and f"{part.rows:,} rows" in line, line
    assert printed[-1].startswith("Done: ") and "restored and verified" in printed[-1]
    assert sorted(os.listdir(restored_sqlite.data_dir)) == ["palaver.db", "uploads"]
    with closing(sqlite3.connect(restored_sqlite.data_dir / "palaver.db")) as db:
        assert db.execute(search_backlog._WAITING).fetchone() == (0,)
        # FTS5 checks its index against every message: one left out is reported as corrupt.
        db.execute("INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 1)")


def test_restore_into_postgresql_gives_every_table_and_file_back(
    backed_up: Backup, restored_pg: Restored
) -> None:
    manifest = backed_up.manifest
    assert table_sums(restored_pg.database_url, manifest) == expected_sums(manifest)
    assert uploads_of(restored_pg.data_dir) == uploads_of(backed_up.source_dir)
    assert "Sequence: chunks.seq continues at" in restored_pg.printed
    with connect(restored_pg.database_url) as conn:
        unfilled = conn.execute(
            "SELECT (SELECT count(*) FROM vectors WHERE embedding IS NULL), "
            "(SELECT count(*) FROM chunks WHERE tsv IS NULL)"
        ).fetchone()
    assert unfilled == (0, 0), "PostgreSQL's search columns derived from the restored rows"


def test_servers_on_both_restores_serve_the_same_installation(
    backed_up: Backup, restored_sqlite: Restored, restored_pg: Restored
) -> None:
    seen = []
    for restored in (restored_sqlite, restored_pg):
        server = Server(restored.data_dir, env={"DATABASE_URL": restored.database_url})
        server.start()
        try:
            with server.login() as owner:
                shown = what_the_api_shows(owner, backed_up.agent_id, backed_up.channel_id)
                assert [owner.get(url).content for url in backed_up.upload_urls] == [NOTES, PHOTO]
                assert shown["knowledge"] == [("bikes.md", 1, 1)], (
                    "chunks found by word and meaning"
                )
                assert any("writer-guest" in m["content"] for m in shown["history"])
                response = owner.post(
                    "/api/rag/upload",
                    files={"file": ("new.txt", b"A document stored after the restore.\n")},
                    data={"agentId": backed_up.agent_id},
                )
                assert response.status_code == 200, response.text
                post(owner, backed_up.channel_id, "Posted after the restore")
                seen.append(shown)
        finally:
            server.stop()
    assert seen[0] == seen[1]
    assert len(seen[0]["search"]) >= 3, "restored messages are searchable"


def test_a_postgresql_installation_restores_into_sqlite(pg: PgServer, tmp_path: Path) -> None:
    url = pg.new_database("source")
    source_dir = tmp_path / "pg-data"
    server = Server(source_dir, env={"DATABASE_URL": url})
    server.start()
    try:
        with server.login() as owner:
            agent = new_agent(owner)
            channel = new_channel(owner, [agent["id"]])
            upload = owner.post("/api/upload", files={"file": ("notes.txt", NOTES)}).json()["url"]
            post(owner, channel["id"], f"Notes at {upload}")
            post(owner, channel["id"], "Welcome to the PostgreSQL installation")
            response = owner.post(
                "/api/rag/upload",
                files={"file": ("bikes.md", BIKES.encode(), "text/plain")},
                data={"agentId": agent["id"]},
            )
            assert response.status_code == 200, response.text
            memories = f"/api/agents/{agent['id']}/memories"
            owner.ok("POST", memories, json={"content": "Reports go out on Mondays."})
            before = what_the_api_shows(owner, agent["id"], channel["id"])
        archive = tmp_path / "pg.zip"
        done = palaver("backup", "--data-dir", str(source_dir), "--out", str(archive),
                       "--quiet", database_url=url)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert "read from postgresql in one snapshot" in done.stdout
        assert "chunks.tsv, messages.search_tsv, vectors.embedding" in done.stdout
    finally:
        server.stop()
    manifest = manifest_of(archive)
    found, expected = table_sums(url, manifest), expected_sums(manifest)
    assert found.pop("nodes") != expected.pop("nodes"), "the stopped node left the registry"
    assert found == expected, "the backup holds what its source holds"

    target = tmp_path / "sqlite-data"
    done = palaver("restore", str(archive), "--data-dir", str(target), "--quiet")
    assert done.returncode == 0, done.stdout + done.stderr
    assert table_sums(sqlite_url(target), manifest) == expected_sums(manifest)
    assert uploads_of(target) == uploads_of(source_dir)
    restored = Server(target, env={"DATABASE_URL": sqlite_url(target)})
    restored.start()
    try:
        with restored.login() as owner:
            assert what_the_api_shows(owner, agent["id"], channel["id"]) == before
    finally:
        restored.stop()


def flip_a_byte(source: Path, copy: Path, part: str) -> None:
    """`copy` is `source` with one byte in the middle of `part`'s stored data inverted."""
    with zipfile.ZipFile(source) as zf:
        info = zf.getinfo(part)
    data = bytearray(source.read_bytes())
    name_length, extra_length = struct.unpack_from("<HH", data, info.header_offset + 26)
    start = info.header_offset + 30 + name_length + extra_length
    data[start + info.compress_size // 2] ^= 0xFF
    copy.write_bytes(bytes(data))


@pytest.mark.parametrize("which", ["database", "upload", "manifest"])
def test_a_backup_with_one_byte_flipped_is_refused_naming_the_part(
    backed_up: Backup, tmp_path: Path, which: str
) -> None:
    part = {
        "database": "database/messages.jsonl",
        "upload": f"uploads/{backed_up.manifest.uploads[0].path}",
        "manifest": MANIFEST,
    }[which]
    damaged = tmp_path / "damaged.zip"
    flip_a_byte(backed_up.path, damaged, part)
    target = tmp_path / "target"
    done = palaver("restore", str(damaged), "--data-dir", str(target), "--quiet")
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"the backup is damaged: {part}: " in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert not target.exists(), "nothing was written"


def forged(source: Path, copy: Path, emptied: str) -> None:
    """`copy` is `source` with table `emptied` left empty, and a manifest that agrees: every
    checksum holds, and the rows break foreign keys only once they are written."""
    manifest = manifest_of(source)
    nothing = hashlib.sha256(b"").hexdigest()
    tables = tuple(
        dataclasses.replace(t, rows=0, checksum=f"{0:032x}", size=0, sha256=nothing)
        if t.name == emptied
        else t
        for t in manifest.tables
    )
    fake = dataclasses.replace(manifest, tables=tables)
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(copy, "w") as new:
        for info in old.infolist():
            if info.filename == MANIFEST:
                new.writestr(MANIFEST, fake.to_json())
            elif info.filename == f"database/{emptied}.jsonl":
                new.writestr(info.filename, b"")
            else:
                new.writestr(info, old.read(info.filename))


@pytest.mark.parametrize("into", ["sqlite", "postgresql"])
def test_a_restore_that_fails_while_writing_leaves_the_target_as_empty_as_it_was(
    backed_up: Backup, pg: PgServer, tmp_path: Path, into: str
) -> None:
    archive = tmp_path / "forged.zip"
    forged(backed_up.path, archive, "channels")
    target = tmp_path / "target"
    url = pg.new_database("failing") if into == "postgresql" else None
    if url is not None:
        (target / "uploads").mkdir(parents=True)
    done = palaver("restore", str(archive), "--data-dir", str(target), database_url=url)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the restore failed and was undone" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    if url is None:
        assert not target.exists(), "the data dir it made is gone again"
    else:
        assert sorted(p.name for p in target.rglob("*")) == ["uploads"], "as it was found"
        engine = create_engine(sync_url(url))
        try:
            assert first_table_with_rows(engine) is None
        finally:
            engine.dispose()


def test_restore_into_a_data_dir_or_database_that_is_not_empty_is_refused_with_status_2(
    backed_up: Backup, restored_pg: Restored, tmp_path: Path
) -> None:
    done = palaver("restore", str(backed_up.path), "--data-dir", str(backed_up.source_dir))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "palaver.db exists; restore writes into an empty data dir only" in done.stderr

    with_uploads = tmp_path / "uploads-only"
    (with_uploads / "uploads" / "2026-01").mkdir(parents=True)
    (with_uploads / "uploads" / "2026-01" / "kept.txt").write_text("mine")
    done = palaver("restore", str(backed_up.path), "--data-dir", str(with_uploads))
    assert done.returncode == 2 and "uploads is not empty" in done.stderr, done.stderr
    assert sorted(p.name for p in with_uploads.rglob("*")) == ["2026-01", "kept.txt", "uploads"]

    done = palaver("restore", str(backed_up.path), "--data-dir", str(tmp_path / "fresh"),
                   database_url=restored_pg.database_url)  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert re.search(r"the database is not empty \(table \w+ has rows\)", done.stderr)
    assert not (tmp_path / "fresh").exists()


def test_backup_refuses_to_overwrite_a_file(backed_up: Backup) -> None:
    before = backed_up.path.read_bytes()
    done = palaver("backup", "--data-dir", str(backed_up.source_dir), "--out", str(backed_up.path))
    assert done.returncode == 2 and "backup never overwrites a file" in done.stderr
    assert backed_up.path.read_bytes() == before


def big_installation(folder: Path, upload_bytes: int) -> Path:
    """A data dir with a schema, no rows, and one upload of `upload_bytes` random bytes."""
    data_dir = folder / "data"
    (data_dir / "uploads" / "2026-01").mkdir(parents=True)
    migrate.upgrade(sqlite_url(data_dir))
    with open(data_dir / "uploads" / "2026-01" / "big.bin", "wb") as out:
        for _ in range(0, upload_bytes, 1 << 20):
            out.write(os.urandom(1 << 20))
    return data_dir


MEASURE = (
    "import resource, sys\n"
    "from palaver.cli import main\n"
    "status = main(sys.argv[1:])\n"
    "print('maxrss', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
    "sys.exit(status)\n"
)


def _peak_kib(*args: str) -> int:
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, *args],
        env=_env(None), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return int(re.findall(r"maxrss (\d+)", done.stderr)[-1])


def test_memory_stays_flat_whatever_the_size_of_an_upload(tmp_path: Path) -> None:
    peaks = {}
    for size in (1 << 20, 96 << 20):
        data_dir = big_installation(tmp_path / str(size), size)
        archive = tmp_path / f"{size}.zip"
        made = _peak_kib("backup", "--data-dir", str(data_dir), "--out", str(archive), "--quiet")
        back = _peak_kib("restore", str(archive), "--data-dir", str(tmp_path / f"{size}-back"))
        assert (
            tmp_path / f"{size}-back" / "uploads" / "2026-01" / "big.bin"
        ).stat().st_size == size
        peaks[size] = (made, back)
    grew = [big - small for small, big in zip(peaks[1 << 20], peaks[96 << 20], strict=True)]
    assert max(grew) < 24 * 1024, f"peak memory grew by {grew} KiB for 95 MiB more upload"


def test_scheduled_backups_into_a_folder_keep_the_newest(tmp_path: Path) -> None:
    folder = tmp_path / "backups"
    folder.mkdir()
    names = [f"palaver-2026010{n}-030000.zip" for n in range(1, 6)]
    for name in names:
        (folder / name).write_bytes(b"old")
    (folder / "palaver-20251231-030000.zip.partial").write_bytes(b"cut")
    os.utime(folder / "palaver-20251231-030000.zip.partial", (0, 0))
    (folder / "keep-me.txt").write_text("not ours")
    scheduled = "palaver-2025-12-01T030000Z.zip"
    (folder / scheduled).write_bytes(b"made by the in-app schedule")
    _rotate(folder, 3, folder / names[-1])
    left = sorted(p.name for p in folder.iterdir())
    assert left == sorted(["keep-me.txt", *names[-3:], scheduled])


def test_backup_into_a_folder_names_the_file_by_its_time_and_skips_uploads_arriving(
    tmp_path: Path,
) -> None:
    data_dir = big_installation(tmp_path, 1 << 20)
    (data_dir / "uploads" / ".part-0123456789abcdef").write_bytes(b"half an upload")
    done = palaver("backup", "--data-dir", str(data_dir), "--dir", str(tmp_path / "b"),
                   "--keep", "2", "--quiet")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    [made] = (tmp_path / "b").iterdir()
    assert re.fullmatch(r"palaver-\d{8}-\d{6}\.zip", made.name)
    assert [f.path for f in manifest_of(made).uploads] == ["2026-01/big.bin"]
    done = palaver("backup", "--data-dir", str(tmp_path / "nowhere"), "--out", str(tmp_path / "x"))
    assert done.returncode == 2 and "there is no SQLite database at" in done.stderr


def test_the_restored_table_is_printed_as_migrate_db_prints_it(restored_sqlite: Restored) -> None:
    lines = restored_sqlite.printed.splitlines()
    table = [line for line in lines if line.startswith("  ")]
    assert table and all(
        re.fullmatch(r"  \w+ +[\d,]+ rows  checksum [0-9a-f]{16}  ok", line) for line in table
    ), table


def test_the_manifest_lists_every_part_with_its_size_and_sha256(backed_up: Backup) -> None:
    with zipfile.ZipFile(backed_up.path) as zf:
        names = sorted(i.filename for i in zf.infolist())
        manifest = backed_up.manifest
        assert names == sorted(manifest.parts)
        for upload in manifest.uploads:
            data = zf.read(upload.part)
            assert (len(data), hashlib.sha256(data).hexdigest()) == (upload.size, upload.sha256)
        assert manifest.revision == migrate_head()
        raw = zf.read(MANIFEST)
    assert b'"checksum"' in raw and b'"schema_revision"' in raw


def migrate_head() -> str:
    return head_revision()


@pytest.mark.parametrize("into", ["sqlite", "postgresql"])
def test_a_backup_from_an_older_version_is_restored_at_its_revision_then_migrated(
    pg: PgServer, tmp_path: Path, into: str
) -> None:
    old = "0014_usage_ledger"
    source = tmp_path / "old" / "data"
    source.mkdir(parents=True)
    migrate.upgrade(sqlite_url(source), old)
    with closing(sqlite3.connect(source / "palaver.db")) as db, db:
        db.execute("INSERT INTO meta (key, value) VALUES ('restored', 'from 0014')")
    archive = tmp_path / "old.zip"
    done = palaver("backup", "--data-dir", str(source), "--out", str(archive), "--quiet")
    assert done.returncode == 0, done.stdout + done.stderr
    assert manifest_of(archive).revision == old

    url = pg.new_database("older") if into == "postgresql" else None
    target = tmp_path / "new"
    done = palaver("restore", str(archive), "--data-dir", str(target), "--quiet", database_url=url)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"restored at revision {old}, checked, then brought to {head_revision()}." in done.stdout
    engine = create_engine(sync_url(url or sqlite_url(target)))
    try:
        with engine.connect() as conn:
            assert migrate.revision_of(conn) == head_revision()
            value = conn.exec_driver_sql("SELECT value FROM meta WHERE key = 'restored'")
            assert value.scalar_one() == "from 0014"
    finally:
        engine.dispose()


def test_a_backup_from_a_newer_version_is_refused_with_status_2(
    backed_up: Backup, tmp_path: Path
) -> None:
    manifest = dataclasses.replace(backed_up.manifest, revision="0099_from_the_future")
    newer = tmp_path / "newer.zip"
    with zipfile.ZipFile(backed_up.path) as old, zipfile.ZipFile(newer, "w") as new:
        for info in old.infolist():
            data = manifest.to_json() if info.filename == MANIFEST else old.read(info.filename)
            new.writestr(info, data)
    done = palaver("restore", str(newer), "--data-dir", str(tmp_path / "target"))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "revision 0099_from_the_future, which this version of Palaver does not know" in (
        done.stderr
    )
    assert not (tmp_path / "target").exists()
