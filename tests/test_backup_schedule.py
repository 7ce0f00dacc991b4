"""The backup schedule (`settings.backups`) on a real `palaver serve`: backups appear by
themselves while people post, each one `palaver restore` accepts, the oldest beyond `keep` are
removed, a folder that cannot be written is recorded and shown as a failure, a backup due
after a restart is made soon after the start (and one cut off by a crash is recorded as
interrupted), and only the owner sees or sets it. Then two nodes on one PostgreSQL database and
one Redis make exactly one backup per period between them.

Seconds are a unit of `every` (`2s`): the product accepts them, so the tests need no switch of
their own."""

from __future__ import annotations

import itertools
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.pg_server import PgServer
from tests.redis_server import RedisServer
from tests.support import Api, Guest, Server, new_channel, post, sql, wait_until
from tests.test_backup import manifest_of, palaver
from tests.test_cluster import WIDE, Cluster, running

NAME = r"palaver-\d{4}-\d\d-\d\dT\d{6}Z\.zip"


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = Server(tmp_path_factory.mktemp("scheduled") / "data")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def owner(node: Server) -> Iterator[Api]:
    api = node.login()
    try:
        yield api
    finally:
        api.ok("PUT", "/api/settings", json={"backups": {"every": None, "keep": 7, "dir": None}})
        wait_until(lambda: api.ok("GET", "/api/backups")["running"] is None, timeout=20)
        api.close()


def backups(api: Api) -> dict[str, Any]:
    return api.ok("GET", "/api/backups")


def schedule(api: Api, **fields: Any) -> dict[str, Any]:
    return api.ok("PUT", "/api/settings", json={"backups": fields})["settings"]["backups"]


def runs(server: Server) -> list[tuple[Any, ...]]:
    return sql(server, "SELECT status, file, node_id FROM backup_runs ORDER BY started_at")


def test_backups_appear_while_people_post_restore_and_only_the_newest_are_kept(
    node: Server, owner: Api, tmp_path: Path
) -> None:
    channel = new_channel(owner)
    folder = tmp_path / "kept"
    folder.mkdir()
    (folder / "notes.txt").write_text("not a backup")
    (folder / "palaver-20260101-030000.zip").write_bytes(b"made by palaver backup --dir")
    before = len(runs(node))
    owner.ok("PUT", "/api/settings", json={"limits": WIDE})
    stop = threading.Event()
    written = [0]
    failed: list[BaseException] = []

    def write() -> None:
        try:
            with node.login() as writer:
                while not stop.is_set():
                    post(writer, channel["id"], f"post {written[0]}")
                    written[0] += 1
                    time.sleep(0.01)
        except BaseException as exc:
            failed.append(exc)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        assert schedule(owner, every="2s", keep=2, dir=str(folder)) == {
            "every": "2s",
            "keep": 2,
            "dir": str(folder),
        }
        wait_until(
            lambda: sum(r[0] == "ok" for r in runs(node)[before:]) >= 3,
            timeout=30,
            what="three scheduled backups",
        )
    finally:
        stop.set()
        writer.join()
    assert not failed and written[0] > 0, failed
    schedule(owner, every=None)
    wait_until(lambda: backups(owner)["running"] is None, what="the last one finished")
    shown = backups(owner)
    made = sorted(p.name for p in folder.glob("palaver-*T*Z.zip"))
    assert len(made) == 2, made
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        ["notes.txt", "palaver-20260101-030000.zip", *made]
    ), "only the schedule's own files are pruned, and no .partial is left"
    assert [f["name"] for f in shown["files"]] == made[::-1]
    assert [f["bytes"] for f in shown["files"]] == [(folder / n).stat().st_size for n in made[::-1]]
    last = shown["last"]
    assert last["ok"] and last["status"] == "ok" and "error" not in last
    assert last["file"] in made and last["bytes"] == (folder / last["file"]).stat().st_size
    assert last["durationMs"] >= 0 and shown["folder"] == str(folder)
    assert shown["next"] is None, "no schedule, nothing due"

    newest = folder / made[-1]
    done = palaver("restore", str(newest), "--data-dir", str(tmp_path / "restored"), "--quiet")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "restored and verified" in done.stdout
    rows = {t.name: t.rows for t in manifest_of(newest).tables}
    with closing(sqlite3.connect(tmp_path / "restored" / "palaver.db")) as db:
        got = [
            text
            for (text,) in db.execute(
                "SELECT content FROM messages WHERE channel_id = ?", (channel["id"],)
            )
        ]
    assert got, "the backup holds what was posted before it"
    assert sorted(got, key=lambda t: int(t.split()[1])) == [f"post {n}" for n in range(len(got))], (
        "an unbroken prefix of what the writer posted"
    )
    assert len(got) < written[0], "the writer went on posting after the snapshot"
    assert rows["backup_runs"] >= 1


def test_a_folder_that_cannot_be_written_is_a_failure_shown_with_its_reason(
    node: Server, owner: Api, tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("a file where the folder should be")
    schedule(owner, every="2s", keep=3, dir=str(blocker / "backups"))
    wait_until(
        lambda: (backups(owner)["last"] or {}).get("status") == "failed",
        timeout=20,
        what="the failure recorded",
    )
    last = backups(owner)["last"]
    assert not last["ok"] and last["bytes"] is None
    assert last["error"] == f"cannot make the folder {blocker / 'backups'}: Not a directory"
    assert owner.ok("GET", "/api/me"), "the node goes on serving"
    good = tmp_path / "good"
    schedule(owner, dir=str(good))
    wait_until(lambda: backups(owner)["last"]["ok"], timeout=20, what="a backup once fixed")
    assert [p.name for p in good.iterdir()] == [backups(owner)["last"]["file"]]


def test_a_backup_due_after_a_restart_is_made_soon_after_the_start(
    node: Server, owner: Api, tmp_path: Path
) -> None:
    folder = tmp_path / "daily"
    schedule(owner, every="1d", keep=5, dir=str(folder))
    wait_until(
        lambda: (shown := backups(owner))["last"] is not None and shown["running"] is None,
        timeout=20,
        what="a backup made (the first one is due at once)",
    )
    shown = backups(owner)
    newest = datetime.fromisoformat(shown["last"]["at"])
    assert datetime.fromisoformat(shown["next"]) - newest == timedelta(days=1)
    [(last_id,)] = sql(node, "SELECT id FROM backup_runs ORDER BY started_at DESC, id DESC LIMIT 1")
    # The first one under this schedule, unless an earlier test's backup is younger than a day.
    before = len(list(folder.glob("*.zip")))

    # Stopped for two days: the backup due meanwhile is made soon after the start.
    restart(node, lambda: sql(node, "UPDATE backup_runs SET started_at = ?", _ago(days=2)))
    made = wait_until_made(node, owner, after=last_id)
    assert made[3] == "ok" and (folder / made[4]).is_file()

    # Killed while making one (`kill -9` leaves it running): interrupted, the next due at once.
    restart(node, lambda: sql(
        node,
        "INSERT INTO backup_runs (id, follows, node_id, started_at, status, file) "
        "VALUES ('backup_cut', ?, 'node_gone', ?, 'running', 'palaver-cut.zip')",
        made[0], _ago(seconds=0),
    ))  # fmt: skip
    again = wait_until_made(node, owner, after="backup_cut")
    assert again[3] == "ok"
    [cut] = sql(node, "SELECT status, error FROM backup_runs WHERE id = 'backup_cut'")
    assert cut == ("interrupted", "the node making it stopped before it ended")
    assert len(list(folder.glob("*.zip"))) == before + 2


def _ago(**delta: float) -> str:
    return (datetime.now(UTC) - timedelta(**delta)).strftime("%Y-%m-%d %H:%M:%S.%f")


def restart(node: Server, meanwhile: Callable[[], object]) -> None:
    """Stop the node, change its database, start it again on its port (sessions stay)."""
    node.stop()
    meanwhile()
    node.start(port=node.port)


def wait_until_made(node: Server, owner: Api, after: str) -> tuple[Any, ...]:
    """The run that follows `after`, once finished, within 15 s of the start."""

    def found() -> list[tuple[Any, ...]]:
        return sql(
            node,
            "SELECT id, follows, started_at, status, file FROM backup_runs "
            "WHERE follows = ? AND status != 'running'",
            after,
        )

    wait_until(lambda: bool(found()), timeout=15, what=f"the backup after {after}")
    [row] = found()
    return row


def test_a_guest_can_neither_see_nor_set_the_schedule(node: Server, owner: Api) -> None:
    with Guest(node, owner) as guest:
        seen = guest.api.get("/api/backups")
        assert seen.status_code == 403 and "error" in seen.json()
        set_ = guest.api.put("/api/settings", json={"backups": {"every": "1h"}})
        assert set_.status_code == 403 and "error" in set_.json()
    assert backups(owner)["settings"]["every"] is None


@pytest.mark.parametrize(
    ("backups_patch", "field"),
    [
        ({"every": "1w"}, "backups.every"),
        ({"every": "0h"}, "backups.every"),
        ({"every": "6 h"}, "backups.every"),
        ({"every": "367d"}, "backups.every"),
        ({"every": 3600}, "backups.every"),
        ({"keep": 0}, "backups.keep"),
        ({"dir": "relative/folder"}, "backups.dir"),
        ({"often": "1d"}, "backups.often"),
    ],
)
def test_a_bad_setting_is_refused_with_a_400_naming_the_field(
    owner: Api, backups_patch: dict[str, Any], field: str
) -> None:
    refused = owner.put("/api/settings", json={"backups": backups_patch})
    assert refused.status_code == 400, refused.text
    assert f"'{field}'" in refused.json()["error"]
    assert backups(owner)["settings"] == {"every": None, "keep": 7, "dir": None}


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, pg: PgServer, redis_server: RedisServer
) -> Iterator[Cluster]:
    folder = tmp_path_factory.mktemp("backup-cluster")
    with running(Cluster(folder, pg.new_database("backups"), redis_server.url())) as nodes:
        yield nodes


def test_two_nodes_on_postgresql_make_one_backup_per_period(
    cluster: Cluster, tmp_path: Path
) -> None:
    owner = cluster.owner
    channel = new_channel(owner)
    post(owner, channel["id"], "before the backups")
    owner.ok("PUT", "/api/settings", json={"backups": {"every": "2s", "keep": 20}})
    time.sleep(9)
    owner.ok("PUT", "/api/settings", json={"backups": {"every": None}})
    wait_until(lambda: owner.ok("GET", "/api/backups")["running"] is None, timeout=20)
    rows = sql(
        cluster.a,
        "SELECT id, follows, started_at, status, file, node_id FROM backup_runs "
        "ORDER BY started_at",
    )
    assert 3 <= len(rows) <= 6, rows
    assert all(r[3] == "ok" for r in rows), rows
    assert [r[1] for r in rows] == ["first", *(r[0] for r in rows[:-1])], "one chain"
    starts = [datetime.fromisoformat(str(r[2])) for r in rows]
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(starts)]
    assert min(gaps) >= 2, gaps
    folder = cluster.folder / "data" / "backups"
    made = sorted(p.name for p in folder.iterdir())
    assert made == sorted(r[4] for r in rows), "one file per run, no .partial left"
    shown = owner.ok("GET", "/api/backups")
    assert [f["name"] for f in shown["files"]] == made[::-1]
    done = palaver("restore", str(folder / made[-1]), "--data-dir", str(tmp_path / "from-pg"))
    assert done.returncode == 0, done.stdout + done.stderr
