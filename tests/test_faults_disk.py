"""The disk fills (issue 25, docs/FAULTS.md): a node whose data dir (and its own log) is on a
small tmpfs, which the test fills with a file of its own and frees again.

What must hold: posts and uploads answer 507 with a clear error, never a 500; what was
stored before is intact (`PRAGMA integrity_check`, the history); reads go on (history, the
channel list, downloads, a socket's subscribe); an upload cut short by the full disk leaves no
file behind; once the filler is deleted, writes work again without a restart.
"""

from __future__ import annotations

import contextlib
import errno
import shutil
import sqlite3
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from tests.support import (
    Api,
    Server,
    Ws,
    age_session,
    files_under,
    new_channel,
    post,
    unique,
    wait_until,
    whole_history,
)

pytestmark = pytest.mark.sqlite_only

TMPFS_SIZE = "48m"
WORDS = "lorem ipsum dolor sit amet " * 2400
"""About 64 KB a post: the write-ahead log outgrows what a full disk leaves quickly."""
FULL_DISK = "The server's disk is full; nothing was stored."


@pytest.fixture(scope="module")
def tmpfs() -> Iterator[Path]:
    """A small tmpfs of the module's own (mounting needs root, or it is skipped)."""
    folder = Path(tempfile.mkdtemp(prefix="palaver-disk-"))
    mount = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE},mode=0755", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mount.returncode != 0:
        folder.rmdir()
        pytest.skip(f"cannot mount a tmpfs to fill (needs root): {mount.stderr.strip()}")
    yield folder
    subprocess.run(["umount", "-l", str(folder)], check=False)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def node(tmpfs: Path) -> Iterator[Server]:
    """Its log is on the tmpfs too (`Server` keeps it beside the data dir): it fills with the
    rest, which must not stop the node either."""
    srv = Server(tmpfs / "data")
    srv.start()
    owner = srv.login()
    owner.ok(
        "PUT",
        "/api/settings",
        json={
            "limits": {
                "messagesPerMinute": 100_000,
                "messageBurst": 100_000,
                "maxMessageChars": 200_000,
            }
        },
    )
    owner.close()
    yield srv
    srv.stop(check_log=False)


def fill(folder: Path) -> Path:
    """A file that takes every byte left on the file system."""
    filler = folder / "filler"
    with filler.open("wb", buffering=0) as out:
        for size in (1 << 20, 1 << 12, 1):
            block = b"\0" * size
            with contextlib.suppress(OSError):
                while True:
                    out.write(block)
    with pytest.raises(OSError) as full:
        (folder / "probe").write_bytes(b"\0" * 4096)
    assert full.value.errno == errno.ENOSPC
    return filler


def upload(api: Api, name: str, size: int) -> tuple[int, dict[str, str]]:
    response = api.post(
        "/api/upload", files={"file": (name, b"\x89data" + bytes(size - 5), "image/png")}
    )
    return response.status_code, response.json()


def integrity(node: Server) -> str:
    with closing(sqlite3.connect(node.db_path, timeout=10)) as db:
        return str(db.execute("PRAGMA integrity_check").fetchone()[0])


@pytest.fixture(scope="module")
def owner(node: Server) -> Iterator[Api]:
    api = node.login()
    yield api
    api.close()


def test_posts_that_fit_are_kept_then_507_and_a_checkpoint_on_the_full_disk_is_survived(
    node: Server, owner: Api, tmpfs: Path
) -> None:
    """The write-ahead log has room (SQLite writes it over from its start after a
    checkpoint): posts are stored until it must grow, then refused; the erasure after a
    deletion checkpoints onto the full disk, fails, and is left for later. Once the filler is
    gone, writes work again and every accepted post is there once."""
    channel_id = new_channel(owner)["id"]
    kept = [post(owner, channel_id, f"kept {i}") for i in range(10)]
    _grow_the_write_ahead_log(owner)
    doomed = post(owner, channel_id, f"doomed {WORDS}")

    filler = fill(tmpfs)
    try:
        accepted: list[str] = []
        refused = 0
        for i in range(500):
            content = f"{unique('full')} {i} {WORDS}"
            response = owner.post(
                "/api/messages", json={"channelId": channel_id, "content": content}
            )
            assert response.status_code in (200, 507), response.text
            if response.status_code == 200:
                accepted.append(response.json()["id"])
                continue
            assert response.json() == {"error": FULL_DISK}
            refused += 1
            if refused == 3:
                break
        assert refused == 3, f"the disk never filled after {len(accepted)} posts"
        deleted = owner.delete(f"/api/messages/{doomed}")
        assert deleted.status_code == 200 or deleted.json() == {"error": FULL_DISK}
        read = [m["id"] for m in whole_history(owner, channel_id) if m["id"] != doomed]
        assert read == [*kept, *accepted]
        assert integrity(node) == "ok"
    finally:
        filler.unlink()

    again = _post_again(owner, channel_id)
    assert integrity(node) == "ok"
    stored = Counter(m["id"] for m in whole_history(owner, channel_id))
    assert all(stored[message_id] == 1 for message_id in [*kept, *accepted, again])
    _alive(node)


def test_on_a_disk_full_to_the_last_byte_writes_answer_507_and_reads_go_on(
    node: Server, owner: Api, tmpfs: Path
) -> None:
    """Filled right after the write-ahead log was emptied (a deletion's erasure truncates it),
    so that every write must grow a file: posts, uploads and logins answer 507, an upload
    leaves no file, and reads go on, a session's renewal included, and a search, from what
    the search index held (the posts it had not indexed yet are found once space is freed)."""
    channel_id = new_channel(owner)["id"]
    word = unique("diskfull")
    kept = [post(owner, channel_id, f"kept {i} {word}") for i in range(10)]
    status, body = upload(owner, "kept.png", 64 * 1024)
    assert status == 200, body
    kept_url = body["url"]
    uploads = node.data_dir / "uploads"
    files_before = files_under(uploads)
    idle = node.login()
    age_session(node, idle.token, days=0.01)  # its next use renews it: a write
    owner.ok("DELETE", f"/api/messages/{post(owner, channel_id, 'gone')}")
    wal = node.db_path.with_name(node.db_path.name + "-wal")
    wait_until(lambda: wal.stat().st_size == 0, what="the write-ahead log's truncation")

    filler = fill(tmpfs)
    try:
        response = owner.post("/api/messages", json={"channelId": channel_id, "content": "no"})
        assert (response.status_code, response.json()) == (507, {"error": FULL_DISK})
        status, body = upload(owner, "big.png", 4 << 20)
        assert (status, body) == (507, {"error": FULL_DISK})
        assert files_under(uploads) == files_before, "a cut-short upload left a file"
        with node.client() as newcomer:
            login = newcomer.post("/api/login", json={"password": node.owner_key})
        assert (login.status_code, login.json()) == (507, {"error": FULL_DISK})

        assert [m["id"] for m in whole_history(idle, channel_id)] == kept
        assert idle.get("/api/channels").status_code == 200
        assert idle.get(kept_url).status_code == 200
        with Ws(node, idle.token) as ws:
            ws.subscribe(channel_id)
        searched = idle.get("/api/search", params={"q": word})
        assert searched.status_code == 200, searched.text
        assert integrity(node) == "ok"
    finally:
        filler.unlink()
        idle.close()

    again = _post_again(owner, channel_id)
    status, body = upload(owner, "after.png", 1 << 20)
    assert status == 200, body
    with node.login() as newcomer:
        assert newcomer.get("/api/channels").status_code == 200
    assert [m["id"] for m in whole_history(owner, channel_id)] == [*kept, again]
    found = owner.ok("GET", "/api/search", params={"q": word, "sort": "recent"})["results"]
    assert [r["message"]["id"] for r in found] == kept[::-1]
    assert integrity(node) == "ok"
    _alive(node)


def _grow_the_write_ahead_log(api: Api) -> None:
    """Write past SQLite's automatic checkpoint (1,000 pages): the write-ahead log file keeps
    its size and is written over from its start, so that on the full disk some posts still
    fit in it, and then a checkpoint meets the full disk (the database file must grow)."""
    bulk = new_channel(api)["id"]
    for i in range(30):
        post(api, bulk, f"bulk {i} {WORDS * 3}")


def _post_again(api: Api, channel_id: str) -> str:
    """Once the filler is gone, a post is stored again within seconds, with no restart."""
    deadline = time.monotonic() + 5
    while True:
        response = api.post("/api/messages", json={"channelId": channel_id, "content": "again"})
        if response.status_code == 200:
            return str(response.json()["id"])
        assert response.status_code == 507 and time.monotonic() < deadline, response.text
        time.sleep(0.2)


def _alive(node: Server) -> None:
    """Still the same process, and no failure in its log that was not answered as a fault
    (its log is on the full disk too: what could not be written is lost, not fatal)."""
    assert node.proc is not None and node.proc.poll() is None
    text = node.read_log()
    for failure in ("Exception in ASGI application", "Task exception was never retrieved"):
        assert failure not in text, text[-6000:]
